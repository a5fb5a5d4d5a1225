//! `/catalog`: the destination types, read from the admin API's catalog.

use axum::response::IntoResponse;
use maud::html;
use serde_json::Value;
use sluice_api::admin::catalog;

use crate::layout::{PageResult, SignedIn, page, urlencode};

pub async fn show(SignedIn(s): SignedIn) -> PageResult {
    let catalog = catalog::destinations().await.0;
    let entries = catalog["data"].as_array().cloned().unwrap_or_default();
    let body = html! {
        p { "Choose a destination to set up. Its calls are forwarded from the sources you connect." }
        ul.cards {
            @for e in &entries {
                @let name = e["name"].as_str().unwrap_or("");
                li.card {
                    h2 { (name) }
                    p { (e["description"].as_str().unwrap_or("")) }
                    p.muted { "Receives: " (join(&e["types"])) }
                    h3 { "Settings" }
                    ul {
                        @for setting in e["settings"].as_array().into_iter().flatten() {
                            li {
                                strong { (setting["label"].as_str().unwrap_or("")) }
                                @if let Some(max) = setting["max_items"].as_u64() { " (up to " (max) ")" }
                                @if let Some(d) = setting["description"].as_str() { ": " (d) }
                            }
                        }
                    }
                    a.button href={ "/destinations/new?type=" (urlencode(name)) } { "Set up " (name) }
                }
            }
        }
    };
    Ok(page(Some(&s), "Catalog", "catalog", body).into_response())
}

fn join(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}
