//! `/delivery-health?window=`: every destination's delivery health at a
//! glance. A table of the chosen window (1 h, 24 h or 7 d): delivered,
//! retrying, dead, filtered and discarded, success rate, p50 and p95
//! latency; then per destination its three windows side by side and a
//! chart of the chosen one, with the chart's numbers in a table. Read
//! through the admin API's overview (`admin::health::read`), from the
//! aggregates, never the delivery log. The window is a link, so the page
//! works without JavaScript and each view has its address.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use sluice_api::admin::extract::Params;
use sluice_api::admin::health::{read, window};
use sluice_store::health::{Bar, Figures, HealthWindow};

use crate::Dash;
use crate::chart::{Buckets, Legend, outcomes_with};
use crate::layout::{PageResult, SignedIn, page};

fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "—".to_owned(), |r| format!("{:.1} %", r * 100.0))
}

fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v} ms"))
}

fn figure_cells(f: &Figures) -> Markup {
    let c = f.counts;
    html! {
        td.num { (c.delivered) } td.num { (c.retrying) } td.num { (c.dead) }
        td.num { (c.filtered) } td.num { (c.discarded) }
        td.num { (rate(f.success_rate)) } td.num { (ms(f.p50_ms)) } td.num { (ms(f.p95_ms)) }
    }
}

fn figure_heads() -> Markup {
    html! {
        th scope="col" .num { "Delivered" } th scope="col" .num { "Retrying" } th scope="col" .num { "Dead" }
        th scope="col" .num { "Filtered" } th scope="col" .num { "Discarded" }
        th scope="col" .num { "Success rate" } th scope="col" .num { "p50" } th scope="col" .num { "p95" }
    }
}

/// A bar's label: its start, as precise as the window needs.
fn label(start: i64, w: HealthWindow) -> String {
    let t = DateTime::<Utc>::from_timestamp_millis(start).unwrap_or_default();
    match w {
        HealthWindow::Week => t.format("%m-%d %H:%M").to_string(),
        _ => t.format("%H:%M").to_string(),
    }
}

fn chart(name: &str, w: HealthWindow, bars: &[Bar]) -> Markup {
    let b = Buckets {
        labels: bars.iter().map(|b| label(b.start, w)).collect(),
        ok: bars.iter().map(|b| b.counts.delivered).collect(),
        failed: bars
            .iter()
            .map(|b| b.counts.retrying + b.counts.dead)
            .collect(),
        mean_latency_ms: bars.iter().map(|b| b.p95_ms).collect(),
    };
    let legend = Legend {
        ok: "delivered",
        failed: "retried or dead",
        latency: "p95 latency in ms (right axis)",
    };
    let title = format!(
        "{name}, last {}: delivered, retried or dead, and p95 latency",
        w.label()
    );
    outcomes_with(&title, &b, &legend)
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let chosen = window(&Params(q))?;
    let (end, rows) = read(&dash.app, chosen, Utc::now()).await?;
    let until = DateTime::<Utc>::from_timestamp_millis(end).unwrap_or_default();
    let body = html! {
        p {
            "Every destination's deliveries over the last hour, day or week, counted as they complete "
            "and merged every few seconds. The hour is the last twelve five-minute buckets, up to "
            (until.format("%H:%M UTC")) "; the day and the week are whole hours, up to the end of this one. "
            "Success rate: delivered ÷ (delivered + retrying + dead). Latency: each HTTP attempt's."
        }
        nav.windows aria-label="Window" {
            ul.plain.inline-list {
                @for w in HealthWindow::ALL {
                    li {
                        @if w == chosen {
                            a href={ "?window=" (w.label()) } aria-current="page" { strong { "Last " (w.label()) } }
                        } @else {
                            a href={ "?window=" (w.label()) } { "Last " (w.label()) }
                        }
                    }
                }
            }
        }
        @if rows.is_empty() {
            p { "No destinations yet. Choose one in the " a href="/catalog" { "catalog" } "." }
        } @else {
            div.table-wrap {
                table #health-summary {
                    caption { "Last " (chosen.label()) ", per destination" }
                    thead { tr { th scope="col" { "Destination" } th scope="col" { "State" } (figure_heads()) } }
                    tbody {
                        @for (d, o) in &rows {
                            tr data-destination=(d.id) {
                                th scope="row" { a href={ "#dst-" (d.id) } { (d.name) } }
                                td { span class={ "pill " @if d.enabled { "on" } @else { "off" } } { @if d.enabled { "On" } @else { "Off" } } }
                                @if let Some(f) = o.figures.iter().find(|f| f.window == chosen) { (figure_cells(f)) }
                            }
                        }
                    }
                }
            }
            @for (d, o) in &rows {
                section.health aria-labelledby={ "dst-" (d.id) } {
                    h2 #{ "dst-" (d.id) } { (d.name) }
                    p.actions {
                        a href={ "/destinations/" (d.id) } { "Settings" } " · "
                        a href={ "/destinations/" (d.id) "/deliveries" } { "Delivery log" } " · "
                        a href={ "/destinations/" (d.id) "/deliveries?state=dead" } { "Dead deliveries" }
                    }
                    div.table-wrap {
                        table.windows {
                            caption.sr-only { (d.name) ": each window" }
                            thead { tr { th scope="col" { "Window" } (figure_heads()) } }
                            tbody {
                                @for f in &o.figures {
                                    tr { th scope="row" { "Last " (f.window.label()) } (figure_cells(f)) }
                                }
                            }
                        }
                    }
                    (chart(&d.name, chosen, &o.bars))
                    details {
                        summary { "The chart's numbers" }
                        div.table-wrap {
                            table {
                                thead { tr {
                                    th scope="col" { "From (UTC)" } th scope="col" .num { "Delivered" } th scope="col" .num { "Retrying" }
                                    th scope="col" .num { "Dead" } th scope="col" .num { "Filtered" } th scope="col" .num { "Discarded" } th scope="col" .num { "p95" }
                                } }
                                tbody {
                                    @for b in &o.bars {
                                        tr {
                                            td { (label(b.start, chosen)) } td.num { (b.counts.delivered) } td.num { (b.counts.retrying) }
                                            td.num { (b.counts.dead) } td.num { (b.counts.filtered) } td.num { (b.counts.discarded) } td.num { (ms(b.p95_ms)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(Some(&s), "Delivery health", "health", body).into_response())
}
