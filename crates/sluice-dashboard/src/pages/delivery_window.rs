//! "Replay dead since…" and the line that says what a delivery's call
//! carries. The time window and the scan that applies it are the admin
//! API's ([`sluice_api::admin::deliveries::window`]).

use maud::{Markup, html};

pub use sluice_api::admin::deliveries::window::{Carried, SCAN, Window, carried, parse_time, scan};

/// Dead deliveries read at most by one "replay dead since…".
pub const REPLAY_SCAN: usize = 50_000;

/// A delivery's call in a line: `track Order Completed · userId u-42`.
pub fn carried_line(c: Option<&Carried>) -> Markup {
    html! {
        @match c {
            Some(c) => {
                span.carried {
                    span.kind { (c.kind) }
                    @if let Some(n) = &c.name { " " strong.name { (n) } }
                    @if let Some(u) = &c.user { " · userId " code.user { (u) } }
                    @else if let Some(a) = &c.anonymous { " · anonymousId " code.user { (a) } }
                }
            }
            None => { span.carried.muted { "call no longer stored" } }
        }
    }
}
