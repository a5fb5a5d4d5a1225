//! The notice of failing destinations, on the overview and on each
//! destination's page (docs/alerts.md).

use maud::{Markup, html};
use sluice_api::Incident;

/// What a reason means, in words.
fn words(reason: &str) -> &'static str {
    match reason {
        "success_rate" => "most deliveries are failing",
        "delivery_dead" => "a delivery went dead",
        "backlog" => "its pending backlog is over the limit",
        _ => "it is failing",
    }
}

/// A notice listing `incidents`; nothing when there are none.
pub fn notice(incidents: &[Incident]) -> Markup {
    html! {
        @if !incidents.is_empty() {
            div.error role="alert" {
                @for i in incidents {
                    p {
                        strong { "Failing: " }
                        a href={ "/destinations/" (i.destination_id) } { (i.destination_name) }
                        " — " (words(&i.reason)) ", since "
                        time datetime=(i.since.to_rfc3339()) { (i.since.format("%Y-%m-%d %H:%M:%S UTC")) }
                        ". An alert was sent; another follows when it recovers."
                    }
                }
            }
        }
    }
}
