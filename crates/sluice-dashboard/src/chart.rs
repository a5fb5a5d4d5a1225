//! Inline SVG charts, rendered on the server: no script, no chart library.
//! Pure functions of their numbers, unit-tested below. Colours come from
//! classes in the stylesheet (`s-ok`, `s-fail`, …); every chart carries a
//! title for screen readers and the page shows the same numbers in a table.

use chrono::{DateTime, Duration, Utc};
use maud::{Markup, html};
use sluice_store::Attempt;

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// One series of a bar chart.
pub struct Series<'a> {
    pub label: &'a str,
    /// The stylesheet class that colours it.
    pub class: &'a str,
    pub values: Vec<u64>,
}

/// A rounded-up axis maximum (1, 2, 5 × 10ⁿ), never zero.
pub fn nice_max(v: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if v <= step * m {
                return step * m;
            }
        }
        step = step.saturating_mul(10);
    }
}

fn plot_w() -> f64 {
    W - LEFT - RIGHT
}
fn plot_h() -> f64 {
    H - TOP - BOTTOM
}
fn y_of(v: u64, max: u64) -> f64 {
    TOP + plot_h() - plot_h() * (v as f64) / (max as f64)
}

/// Axis ticks: zero, the middle when it is a whole number, the maximum.
fn ticks(max: u64) -> Vec<u64> {
    if max & 1 == 0 {
        vec![0, max / 2, max]
    } else {
        vec![0, max]
    }
}

fn frame(title: &str, labels: &[String], left_max: u64, right: Option<(&str, u64)>) -> Markup {
    let n = labels.len().max(1);
    let slot = plot_w() / n as f64;
    let every = n.div_ceil(8);
    html! {
        title { (title) }
        line.axis x1=(LEFT) y1=(TOP + plot_h()) x2=(LEFT + plot_w()) y2=(TOP + plot_h()) {}
        @for v in ticks(left_max) {
            @let y = y_of(v, left_max);
            line.grid x1=(LEFT) y1=(y) x2=(LEFT + plot_w()) y2=(y) {}
            text.tick x=(LEFT - 6.0) y=(y + 4.0) text-anchor="end" { (v) }
        }
        @if let Some((unit, max)) = right {
            @for v in ticks(max) {
                text.tick x=(LEFT + plot_w() + 6.0) y=(y_of(v, max) + 4.0) { (v) tspan.unit { " " (unit) } }
            }
        }
        // Every other time label is marked `alt`: a narrow screen hides
        // those and draws the rest larger, so they stay readable.
        @for (i, l) in labels.iter().enumerate() {
            @if i % every == 0 {
                text.tick.label.alt[(i / every) % 2 == 1] x=(LEFT + slot * (i as f64 + 0.5)) y=(H - 8.0) text-anchor="middle" { (l) }
            }
        }
    }
}

/// Bars side by side per label, one colour per series.
pub fn bars(title: &str, labels: &[String], series: &[Series]) -> Markup {
    let max = nice_max(
        series
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .max()
            .unwrap_or(0),
    );
    let slot = plot_w() / labels.len().max(1) as f64;
    let bar = (slot * 0.8) / series.len().max(1) as f64;
    html! {
        figure.chart {
            svg viewBox={ "0 0 " (W) " " (H) } role="img" aria-label=(title) {
                (frame(title, labels, max, None))
                @for (k, s) in series.iter().enumerate() {
                    @for (i, v) in s.values.iter().enumerate() {
                        @let y = y_of(*v, max);
                        rect class=(s.class)
                            x=(LEFT + slot * i as f64 + slot * 0.1 + bar * k as f64)
                            y=(y) width=(bar.max(1.0)) height=(TOP + plot_h() - y) {
                            title { (labels.get(i).map_or("", String::as_str)) ": " (v) " " (s.label) }
                        }
                    }
                }
            }
            figcaption.legend { @for s in series { span { i class={ "key " (s.class) } {} (s.label) } } }
        }
    }
}

/// Attempts per time bucket: successes and failures stacked, and the mean
/// latency as a line on the right-hand axis.
pub struct Buckets {
    pub labels: Vec<String>,
    pub ok: Vec<u64>,
    pub failed: Vec<u64>,
    pub mean_latency_ms: Vec<Option<u64>>,
}

/// Spreads attempts over `n` equal buckets between the first and the last
/// (at least one second per bucket, so the axis ends at the last attempt
/// rather than a fixed span after the first). A 2xx status is a success; any other status
/// or a transport error is a failure.
pub fn bucket_attempts(attempts: &[Attempt], n: usize) -> Buckets {
    let n = n.max(1);
    let (Some(first), Some(last)) = (
        attempts.iter().map(|a| a.at).min(),
        attempts.iter().map(|a| a.at).max(),
    ) else {
        return Buckets {
            labels: Vec::new(),
            ok: Vec::new(),
            failed: Vec::new(),
            mean_latency_ms: Vec::new(),
        };
    };
    let span = (last - first).max(Duration::seconds(n as i64));
    let width_ms = (span.num_milliseconds() / n as i64).max(1) + 1;
    let mut ok = vec![0u64; n];
    let mut failed = vec![0u64; n];
    let mut latency = vec![(0u64, 0u64); n];
    for a in attempts {
        let i = (((a.at - first).num_milliseconds() / width_ms) as usize).min(n - 1);
        if a.status.is_some_and(|s| (200..300).contains(&s)) {
            ok[i] += 1;
        } else {
            failed[i] += 1;
        }
        latency[i].0 += a.latency_ms;
        latency[i].1 += 1;
    }
    let label = |i: usize| -> String {
        let t: DateTime<Utc> = first + Duration::milliseconds(width_ms * i as i64);
        if span > Duration::days(2) {
            t.format("%m-%d %H:%M").to_string()
        } else if span < Duration::minutes(30) {
            t.format("%H:%M:%S").to_string()
        } else {
            t.format("%H:%M").to_string()
        }
    };
    Buckets {
        labels: (0..n).map(label).collect(),
        ok,
        failed,
        mean_latency_ms: latency
            .iter()
            .map(|(sum, count)| (*count > 0).then(|| sum / count))
            .collect(),
    }
}

/// What the three marks of [`outcomes_with`] stand for.
pub struct Legend<'a> {
    pub ok: &'a str,
    pub failed: &'a str,
    pub latency: &'a str,
}

/// The delivery chart: stacked outcome bars and a latency line.
pub fn outcomes(title: &str, b: &Buckets) -> Markup {
    let legend = Legend {
        ok: "succeeded attempts",
        failed: "failed attempts",
        latency: "mean latency in ms (right axis)",
    };
    outcomes_with(title, b, &legend)
}

/// [`outcomes`] with its own words for the marks.
pub fn outcomes_with(title: &str, b: &Buckets, legend: &Legend) -> Markup {
    let totals: Vec<u64> = b.ok.iter().zip(&b.failed).map(|(o, f)| o + f).collect();
    let max = nice_max(totals.iter().copied().max().unwrap_or(0));
    let lat_max = nice_max(
        b.mean_latency_ms
            .iter()
            .flatten()
            .copied()
            .max()
            .unwrap_or(0),
    );
    let slot = plot_w() / b.labels.len().max(1) as f64;
    let points: Vec<String> = b
        .mean_latency_ms
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            l.map(|l| {
                format!(
                    "{:.1},{:.1}",
                    LEFT + slot * (i as f64 + 0.5),
                    y_of(l, lat_max)
                )
            })
        })
        .collect();
    html! {
        figure.chart {
            svg viewBox={ "0 0 " (W) " " (H) } role="img" aria-label=(title) {
                (frame(title, &b.labels, max, Some(("ms", lat_max))))
                @for i in 0..b.labels.len() {
                    @let x = LEFT + slot * i as f64 + slot * 0.15;
                    @let y_ok = y_of(b.ok[i], max);
                    @let y_top = y_of(totals[i], max);
                    rect.s-ok x=(x) y=(y_ok) width=(slot * 0.7) height=(TOP + plot_h() - y_ok) {
                        title { (b.labels[i]) ": " (b.ok[i]) " " (legend.ok) }
                    }
                    rect.s-fail x=(x) y=(y_top) width=(slot * 0.7) height=(y_ok - y_top) {
                        title { (b.labels[i]) ": " (b.failed[i]) " " (legend.failed) }
                    }
                }
                @if !points.is_empty() {
                    polyline.s-latency points=(points.join(" ")) {}
                }
            }
            figcaption.legend {
                span { i.key.s-ok {} (legend.ok) }
                span { i.key.s-fail {} (legend.failed) }
                span { i.key.s-latency-key {} (legend.latency) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(secs: i64, status: Option<u16>, latency_ms: u64) -> Attempt {
        Attempt {
            delivery_id: 1,
            attempt: 1,
            at: DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap(),
            url: "http://x".into(),
            status,
            error: status.is_none().then(|| "timeout".into()),
            latency_ms,
            response: None,
        }
    }

    #[test]
    fn nice_max_rounds_up_to_1_2_5() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(3), 5);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(120), 200);
    }

    #[test]
    fn attempts_are_split_into_successes_failures_and_mean_latency() {
        let a = [
            attempt(0, Some(200), 10),
            attempt(1, Some(503), 30),
            attempt(2, None, 5000),
            attempt(600, Some(204), 20),
        ];
        let b = bucket_attempts(&a, 4);
        assert_eq!(b.labels.len(), 4);
        assert_eq!(b.ok, vec![1, 0, 0, 1]);
        assert_eq!(b.failed, vec![2, 0, 0, 0]);
        assert_eq!(b.mean_latency_ms, vec![Some(1680), None, None, Some(20)]);
    }

    #[test]
    fn the_axis_ends_at_the_last_attempt_not_a_minute_after_the_first() {
        let attempts = [attempt(0, Some(200), 5), attempt(12, Some(200), 5)];
        let b = bucket_attempts(&attempts, 12);
        // Twelve buckets of about one second: the last starts at 11 s.
        assert_eq!(b.labels.first().map(String::as_str), Some("22:13:20"));
        assert_eq!(b.labels.last().map(String::as_str), Some("22:13:31"));
        assert_eq!(b.ok.iter().sum::<u64>(), 2);
        assert_eq!(b.ok[11], 1);
    }

    #[test]
    fn no_attempts_make_an_empty_chart() {
        let b = bucket_attempts(&[], 12);
        assert!(b.labels.is_empty());
        let svg = outcomes("t", &b).into_string();
        assert!(svg.contains("<svg"));
    }

    #[test]
    fn bars_are_as_tall_as_their_share_of_the_axis() {
        let svg = bars(
            "usage",
            &["a".into(), "b".into()],
            &[Series {
                label: "events",
                class: "s-ok",
                values: vec![5, 10],
            }],
        )
        .into_string();
        // Axis max 10: the second bar spans the whole plot height.
        assert!(
            svg.contains(&format!("height=\"{}\"", H - TOP - BOTTOM)),
            "{svg}"
        );
    }
}
