//! From read slots to what the overview shows: each destination's figures
//! over the last hour, day and week, and the bars of one window's chart.
//! Pure: the store reads hourly slots (and five-minute ones for the hour's
//! chart), these functions add them up.
//!
//! Windows are made of whole buckets ending with the current one: "1 h" is
//! the current five-minute bucket and the eleven before it, so it covers
//! between 55 and 60 minutes of the past.

use std::collections::BTreeMap;

use super::{BUCKET_MS, Counts, Health, HealthQuery, HealthSlot};

/// A window of the overview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HealthWindow {
    Hour,
    Day,
    Week,
}

impl HealthWindow {
    pub const ALL: [HealthWindow; 3] = [HealthWindow::Hour, HealthWindow::Day, HealthWindow::Week];

    /// `1h`, `24h` or `7d`.
    pub fn label(self) -> &'static str {
        match self {
            HealthWindow::Hour => "1h",
            HealthWindow::Day => "24h",
            HealthWindow::Week => "7d",
        }
    }

    pub fn parse(s: &str) -> Option<HealthWindow> {
        HealthWindow::ALL.into_iter().find(|w| w.label() == s)
    }

    /// Hours it spans.
    pub fn hours(self) -> u32 {
        match self {
            HealthWindow::Hour => 1,
            HealthWindow::Day => 24,
            HealthWindow::Week => 168,
        }
    }

    /// Bars of its chart, and buckets per bar.
    pub fn bars(self) -> (u32, u32) {
        match self {
            HealthWindow::Hour => (12, 1),
            HealthWindow::Day => (24, 12),
            HealthWindow::Week => (28, 72),
        }
    }

    /// The read its chart needs at `end`: five-minute slots for the hour,
    /// hourly slots otherwise (see [`hourly`]).
    pub fn chart_query(self, end: i64) -> HealthQuery {
        match self {
            HealthWindow::Hour => HealthQuery {
                end,
                buckets: 12,
                step: 1,
            },
            _ => hourly(end),
        }
    }
}

/// Hourly slots over the whole week before `end`: every window's figures
/// and the day's and week's charts.
pub fn hourly(end: i64) -> HealthQuery {
    HealthQuery {
        end,
        buckets: 2016,
        step: 12,
    }
}

/// The start of the bucket holding `at_ms` (unix milliseconds).
pub fn bucket_start(at_ms: i64) -> i64 {
    at_ms.div_euclid(BUCKET_MS) * BUCKET_MS
}

/// One window's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub window: HealthWindow,
    pub counts: Counts,
    pub success_rate: Option<f64>,
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
    /// Attempts whose latency the percentiles are read from.
    pub attempts: u64,
}

impl Figures {
    fn of(window: HealthWindow, h: &Health) -> Figures {
        Figures {
            window,
            counts: h.counts,
            success_rate: h.counts.success_rate(),
            p50_ms: h.latency.quantile(0.5),
            p95_ms: h.latency.quantile(0.95),
            attempts: h.latency.count(),
        }
    }
}

/// One bar of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Its start, unix milliseconds.
    pub start: i64,
    pub counts: Counts,
    pub p95_ms: Option<u64>,
}

/// One destination's figures and chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    pub destination_id: String,
    /// One per window, in [`HealthWindow::ALL`]'s order.
    pub figures: Vec<Figures>,
    /// The chart of the chosen window, oldest bar first.
    pub bars: Vec<Bar>,
}

fn by_destination(slots: &[HealthSlot]) -> BTreeMap<&str, Vec<&HealthSlot>> {
    let mut m: BTreeMap<&str, Vec<&HealthSlot>> = BTreeMap::new();
    for s in slots {
        m.entry(s.destination_id.as_str()).or_default().push(s);
    }
    m
}

/// The overview of `destinations` at `end` (a bucket end): figures from
/// `hourly` (slots of [`hourly`]), and the bars of `chart` from
/// `chart_slots` (slots of [`HealthWindow::chart_query`]). Destinations
/// without any slot get zeros.
pub fn overview(
    end: i64,
    destinations: &[String],
    hourly: &[HealthSlot],
    chart: HealthWindow,
    chart_slots: &[HealthSlot],
) -> Vec<Overview> {
    let hourly = by_destination(hourly);
    let charted = by_destination(chart_slots);
    let (bars, per_bar) = chart.bars();
    let slot_buckets = chart.chart_query(end).step;
    let slots_per_bar = per_bar / slot_buckets;
    let bar_ms = i64::from(per_bar) * BUCKET_MS;
    destinations
        .iter()
        .map(|id| {
            let mine = hourly.get(id.as_str()).map_or(&[][..], Vec::as_slice);
            let figures = HealthWindow::ALL
                .into_iter()
                .map(|w| {
                    let mut sum = Health::default();
                    for s in mine.iter().filter(|s| s.slot < w.hours()) {
                        sum.merge(&s.health);
                    }
                    Figures::of(w, &sum)
                })
                .collect();
            let mut sums = vec![Health::default(); bars as usize];
            for s in charted.get(id.as_str()).map_or(&[][..], Vec::as_slice) {
                let from_newest = s.slot / slots_per_bar;
                if from_newest < bars {
                    sums[(bars - 1 - from_newest) as usize].merge(&s.health);
                }
            }
            let first = end - i64::from(bars) * bar_ms;
            let bars = sums
                .iter()
                .enumerate()
                .map(|(i, h)| Bar {
                    start: first + i as i64 * bar_ms,
                    counts: h.counts,
                    p95_ms: h.latency.quantile(0.95),
                })
                .collect();
            Overview {
                destination_id: id.clone(),
                figures,
                bars,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: i64 = 1_800_000_000_000 - 1_800_000_000_000 % BUCKET_MS + BUCKET_MS;

    fn slot(dest: &str, slot: u32, delivered: u64, dead: u64, latency_ms: u64) -> HealthSlot {
        let mut health = Health::default();
        health.counts.delivered = delivered;
        health.counts.dead = dead;
        for _ in 0..delivered {
            health.latency.record(latency_ms);
        }
        HealthSlot {
            destination_id: dest.into(),
            slot,
            health,
        }
    }

    #[test]
    fn buckets_start_on_five_minute_marks() {
        assert_eq!(bucket_start(0), 0);
        assert_eq!(bucket_start(299_999), 0);
        assert_eq!(bucket_start(300_000), 300_000);
        assert_eq!(bucket_start(-1), -300_000);
    }

    #[test]
    fn each_window_adds_up_the_hours_it_spans() {
        let hourly = [
            slot("a", 0, 10, 0, 20),
            slot("a", 5, 30, 10, 20),
            slot("a", 100, 60, 0, 20),
            slot("b", 1, 1, 1, 20),
        ];
        let o = overview(
            END,
            &["a".into(), "b".into(), "c".into()],
            &hourly,
            HealthWindow::Day,
            &hourly,
        );
        let a: Vec<u64> = o[0].figures.iter().map(|f| f.counts.delivered).collect();
        assert_eq!(a, [10, 40, 100]);
        assert_eq!(o[0].figures[1].counts.dead, 10);
        assert_eq!(o[0].figures[1].success_rate, Some(0.8));
        assert_eq!(o[0].figures[0].success_rate, Some(1.0));
        assert_eq!(
            o[1].figures[0].success_rate, None,
            "b sent nothing this hour"
        );
        assert_eq!(o[1].figures[1].success_rate, Some(0.5));
        assert!(
            o[2].figures
                .iter()
                .all(|f| f.attempts == 0 && f.p95_ms.is_none())
        );
    }

    #[test]
    fn the_day_chart_has_one_bar_an_hour_oldest_first() {
        let hourly = [
            slot("a", 0, 7, 0, 5),
            slot("a", 23, 3, 0, 5),
            slot("a", 24, 99, 0, 5),
        ];
        let o = overview(END, &["a".into()], &hourly, HealthWindow::Day, &hourly);
        let bars = &o[0].bars;
        assert_eq!(bars.len(), 24);
        assert_eq!(bars[23].counts.delivered, 7, "the newest hour is last");
        assert_eq!(bars[0].counts.delivered, 3, "hour 24 is outside the day");
        assert_eq!(bars[23].start, END - 3_600_000);
        assert_eq!(bars[0].start, END - 24 * 3_600_000);
    }

    #[test]
    fn the_week_chart_groups_six_hours_a_bar() {
        let hourly = [
            slot("a", 0, 1, 0, 5),
            slot("a", 5, 2, 0, 5),
            slot("a", 6, 4, 0, 5),
            slot("a", 167, 8, 0, 5),
        ];
        let o = overview(END, &["a".into()], &hourly, HealthWindow::Week, &hourly);
        let bars: Vec<u64> = o[0].bars.iter().map(|b| b.counts.delivered).collect();
        assert_eq!(bars.len(), 28);
        assert_eq!(bars[27], 3);
        assert_eq!(bars[26], 4);
        assert_eq!(bars[0], 8);
    }

    #[test]
    fn the_hour_chart_has_one_bar_per_five_minutes() {
        let hourly = [slot("a", 0, 12, 0, 5)];
        let fine = [slot("a", 0, 2, 0, 5), slot("a", 11, 10, 0, 5)];
        let o = overview(END, &["a".into()], &hourly, HealthWindow::Hour, &fine);
        let bars = &o[0].bars;
        assert_eq!(bars.len(), 12);
        assert_eq!(
            (bars[11].counts.delivered, bars[0].counts.delivered),
            (2, 10)
        );
        assert_eq!(bars[0].start, END - 3_600_000);
        assert_eq!(HealthWindow::Hour.chart_query(END).step, 1);
    }

    #[test]
    fn windows_read_back_from_their_labels() {
        for w in HealthWindow::ALL {
            assert_eq!(HealthWindow::parse(w.label()), Some(w));
        }
        assert_eq!(HealthWindow::parse("2h"), None);
    }
}
