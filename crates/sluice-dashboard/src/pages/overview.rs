//! `/`: the setup checklist, each step linking to where it is done.

use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use maud::html;

use crate::Dash;
use crate::layout::{PageResult, SignedIn, page};

pub async fn show(State(dash): State<Arc<Dash>>, SignedIn(s): SignedIn) -> PageResult {
    let sources = dash.app.store.list_sources().await?;
    let destinations = dash.app.store.list_destinations().await?;
    let live = destinations
        .iter()
        .any(|d| d.enabled && !d.source_ids.is_empty() && !d.settings.urls.is_empty());
    let steps = [
        (
            !sources.is_empty(),
            "Create a source",
            "/sources",
            "Each source has a write key that Segment libraries send with their calls.",
        ),
        (
            !destinations.is_empty(),
            "Add a Webhooks destination from the catalog",
            "/catalog",
            "Pick the sources to connect, enter up to five URLs with optional headers and a shared secret.",
        ),
        (
            live,
            "Switch the destination on",
            "/destinations",
            "From then on every call of its connected sources is forwarded, signed.",
        ),
    ];
    let failing = (dash.app.incidents)();
    let body = html! {
        (super::incidents::notice(&failing))
        ol.steps {
            @for (done, label, href, help) in steps {
                li class=(if done { "done" } else { "todo" }) {
                    span.state { @if done { "Done" } @else { "To do" } }
                    " "
                    a href=(href) { (label) }
                    p.help { (help) }
                }
            }
        }
        h2 { "At a glance" }
        ul.plain {
            li { a href="/sources" { (sources.len()) " source(s)" } }
            li { a href="/destinations" { (destinations.len()) " destination(s), "
                (destinations.iter().filter(|d| d.enabled).count()) " on" } }
        }
    };
    Ok(page(Some(&s), "Overview", "overview", body).into_response())
}
