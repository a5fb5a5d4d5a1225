//! From read slots to what the overview shows: each destination's figures
//! over the last hour, day and week, and the bars of one window's chart.
//! Pure: the store reads the last twelve five-minute buckets ([`fine`])
//! and the last week's hours ([`hourly`]), these functions add them up.
//!
//! Windows are made of whole buckets ending with the current one: "1 h" is
//! the current five-minute bucket and the eleven before it (55 to 60
//! minutes of the past); "24 h" and "7 d" are the current hour and the 23
//! or 167 before it.

use std::collections::BTreeMap;

use super::{BUCKET_MS, Counts, HOUR_MS, Health, HealthQuery, HealthSlot};

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

    /// Bars of its chart, and slots per bar: five-minute slots for the
    /// hour, hourly ones for the day and the week.
    pub fn bars(self) -> (u32, u32) {
        match self {
            HealthWindow::Hour => (12, 1),
            HealthWindow::Day => (24, 1),
            HealthWindow::Week => (28, 6),
        }
    }
}

/// The last twelve five-minute buckets before `end` (a five-minute mark),
/// one slot each.
pub fn fine(end: i64) -> HealthQuery {
    HealthQuery {
        width: BUCKET_MS,
        end,
        buckets: 12,
        step: 1,
    }
}

/// The last week's hours before `end` (an hour mark), one slot each.
pub fn hourly(end: i64) -> HealthQuery {
    HealthQuery {
        width: HOUR_MS,
        end,
        buckets: 168,
        step: 1,
    }
}

/// The start of the five-minute bucket holding `at_ms` (unix milliseconds).
pub fn bucket_start(at_ms: i64) -> i64 {
    at_ms.div_euclid(BUCKET_MS) * BUCKET_MS
}

/// The end of the bucket of width `width` holding `at_ms`.
pub fn bucket_end(at_ms: i64, width: i64) -> i64 {
    at_ms.div_euclid(width) * width + width
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

/// The overview of `destinations` at `now_ms`: the hour's figures and
/// chart from `fine` (slots of [`fine`]), the day's and week's from
/// `hourly` (slots of [`hourly`]). Destinations without any slot get zeros.
pub fn overview(
    now_ms: i64,
    destinations: &[String],
    fine: &[HealthSlot],
    hourly: &[HealthSlot],
    chart: HealthWindow,
) -> Vec<Overview> {
    let fine = by_destination(fine);
    let hourly = by_destination(hourly);
    let none: Vec<&HealthSlot> = Vec::new();
    let sum = |slots: &Vec<&HealthSlot>, below: u32| {
        let mut h = Health::default();
        for s in slots.iter().filter(|s| s.slot < below) {
            h.merge(&s.health);
        }
        h
    };
    let (bars, per_bar) = chart.bars();
    let (width, charted) = match chart {
        HealthWindow::Hour => (BUCKET_MS, &fine),
        _ => (HOUR_MS, &hourly),
    };
    let bar_ms = i64::from(per_bar) * width;
    let first = bucket_end(now_ms, width) - i64::from(bars) * bar_ms;
    destinations
        .iter()
        .map(|id| {
            let f = fine.get(id.as_str()).unwrap_or(&none);
            let h = hourly.get(id.as_str()).unwrap_or(&none);
            let figures = vec![
                Figures::of(HealthWindow::Hour, &sum(f, 12)),
                Figures::of(HealthWindow::Day, &sum(h, 24)),
                Figures::of(HealthWindow::Week, &sum(h, 168)),
            ];
            let mut sums = vec![Health::default(); bars as usize];
            for s in charted.get(id.as_str()).unwrap_or(&none) {
                let from_newest = s.slot / per_bar;
                if from_newest < bars {
                    sums[(bars - 1 - from_newest) as usize].merge(&s.health);
                }
            }
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

    /// Some time, five minutes and two seconds after an hour mark.
    const NOW: i64 = 1_800_000_000 / 3600 * 3_600_000 + 302_000;
    const HOUR_END: i64 = NOW - 302_000 + HOUR_MS;
    const FINE_END: i64 = NOW - 2_000 + BUCKET_MS;

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
    fn buckets_start_on_five_minute_marks_and_end_on_their_widths() {
        assert_eq!(bucket_start(0), 0);
        assert_eq!(bucket_start(299_999), 0);
        assert_eq!(bucket_start(300_000), 300_000);
        assert_eq!(bucket_start(-1), -300_000);
        assert_eq!(bucket_end(NOW, HOUR_MS), HOUR_END);
        assert_eq!(bucket_end(NOW, BUCKET_MS), FINE_END);
    }

    #[test]
    fn each_window_adds_up_the_buckets_it_spans() {
        let fine = [
            slot("a", 0, 4, 0, 20),
            slot("a", 11, 6, 0, 20),
            slot("b", 3, 1, 0, 20),
        ];
        let hourly = [
            slot("a", 0, 10, 0, 20),
            slot("a", 5, 30, 10, 20),
            slot("a", 100, 60, 0, 20),
            slot("b", 1, 1, 1, 20),
        ];
        let ids = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let o = overview(NOW, &ids, &fine, &hourly, HealthWindow::Day);
        let a: Vec<u64> = o[0].figures.iter().map(|f| f.counts.delivered).collect();
        assert_eq!(a, [10, 40, 100]);
        assert_eq!(o[0].figures[1].counts.dead, 10);
        assert_eq!(o[0].figures[1].success_rate, Some(0.8));
        assert_eq!(o[0].figures[0].success_rate, Some(1.0));
        assert_eq!(o[1].figures[0].success_rate, Some(1.0));
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
        let o = overview(NOW, &["a".into()], &[], &hourly, HealthWindow::Day);
        let bars = &o[0].bars;
        assert_eq!(bars.len(), 24);
        assert_eq!(bars[23].counts.delivered, 7, "the current hour is last");
        assert_eq!(bars[0].counts.delivered, 3, "hour 24 is outside the day");
        assert_eq!(bars[23].start, HOUR_END - HOUR_MS);
        assert_eq!(bars[0].start, HOUR_END - 24 * HOUR_MS);
    }

    #[test]
    fn the_week_chart_groups_six_hours_a_bar() {
        let hourly = [
            slot("a", 0, 1, 0, 5),
            slot("a", 5, 2, 0, 5),
            slot("a", 6, 4, 0, 5),
            slot("a", 167, 8, 0, 5),
        ];
        let o = overview(NOW, &["a".into()], &[], &hourly, HealthWindow::Week);
        let bars: Vec<u64> = o[0].bars.iter().map(|b| b.counts.delivered).collect();
        assert_eq!(bars.len(), 28);
        assert_eq!(bars[27], 3);
        assert_eq!(bars[26], 4);
        assert_eq!(bars[0], 8);
    }

    #[test]
    fn the_hour_chart_has_one_bar_per_five_minutes() {
        let fine = [slot("a", 0, 2, 0, 5), slot("a", 11, 10, 0, 5)];
        let o = overview(NOW, &["a".into()], &fine, &[], HealthWindow::Hour);
        let bars = &o[0].bars;
        assert_eq!(bars.len(), 12);
        assert_eq!(
            (bars[11].counts.delivered, bars[0].counts.delivered),
            (2, 10)
        );
        assert_eq!(bars[0].start, FINE_END - HOUR_MS);
        assert_eq!(o[0].figures[0].counts.delivered, 12);
    }

    #[test]
    fn windows_read_back_from_their_labels() {
        for w in HealthWindow::ALL {
            assert_eq!(HealthWindow::parse(w.label()), Some(w));
        }
        assert_eq!(HealthWindow::parse("2h"), None);
    }
}
