//! The delivery log's search form beyond state and messageId: the time
//! window, the call and the HTTP status. What they mean, and how they are
//! read and applied, is the admin API's
//! ([`sluice_api::admin::deliveries::search`]), so that the dashboard and
//! `GET /api/v1/deliveries` filter alike.

use std::collections::HashMap;

use maud::{Markup, html};

pub use sluice_api::admin::deliveries::search::{CONTENT_SCAN, FIELDS, Search, Status};

use crate::layout::urlencode;

/// The query string of the search fields in `q`, for links that keep it.
pub fn carried_query(q: &HashMap<String, String>) -> String {
    FIELDS
        .iter()
        .map(|k| format!("&{k}={}", urlencode(q.get(*k).map_or("", |v| v.trim()))))
        .collect()
}

/// The form's fields for the call and status.
pub fn content_fields(q: &HashMap<String, String>) -> Markup {
    let v = |k: &str| q.get(k).map_or("", |v| v.trim()).to_owned();
    html! {
        div.field {
            label for="type" { "Type" }
            select #type name="type" {
                option value="" selected[v("type").is_empty()] { "Any" }
                @for t in ["track", "identify", "page", "screen", "group", "alias"] {
                    option value=(t) selected[v("type") == t] { (t) }
                }
            }
        }
        div.field {
            label for="event" { "Event or page name" }
            input #event name="event" value=(v("event"));
        }
        div.field {
            label for="user" { "userId or anonymousId" }
            input #user name="user" value=(v("user"));
        }
        div.field {
            label for="status" { "HTTP status" }
            input #status name="status" value=(v("status")) placeholder="503, 5xx or error" aria-describedby="status-help";
        }
        p.help #status-help { "A delivery matches a status when any of its attempts got it; error is an attempt without an answer (timeout, refused connection)." }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_the_search_fields() {
        let q: HashMap<String, String> = [("type", "track"), ("user", " u1 ")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let carried = carried_query(&q);
        assert!(carried.contains("&user=u1"), "{carried}");
        assert!(carried.contains("&type=track"), "{carried}");
        assert!(carried.contains("&status="), "{carried}");
    }
}
