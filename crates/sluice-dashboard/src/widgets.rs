//! Small pieces of markup and form parsing shared by the pages of the
//! features that came after the setup flow (schema, filters, regulations,
//! computed traits, audiences, profiles).

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::Value;
use sluice_api::ApiError;
use sluice_api::admin::extract::Params;
use sluice_api::admin::paging;
use sluice_api::openapi::schemas::ListPage;

use crate::layout::urlencode;

/// The API's refusal at the top of a form: its message and code, focused by
/// the script so that screen readers announce it.
pub fn api_error(e: &ApiError) -> Markup {
    html! {
        div.error #errors role="alert" tabindex="-1" {
            p { (e.message) }
            p.muted { "Code: " code { (e.code) } }
        }
    }
}

/// A value typed into a text field: a JSON number, `true`, `false` or
/// `null` when it reads as one, otherwise the text as a string. Quote it
/// (`"10"`) to force a string.
pub fn typed_value(text: &str) -> Value {
    let t = text.trim();
    match serde_json::from_str::<Value>(t) {
        Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null | Value::String(_))) => v,
        _ => Value::String(t.to_owned()),
    }
}

/// The page of a list held whole (sources, destinations) that the query's
/// `after` asks for: the admin API's pages, 100 items each, oldest first.
pub fn list_page<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    query: &HashMap<String, String>,
) -> Result<ListPage<T>, ApiError> {
    let params = query
        .get("after")
        .map(|a| ("after".to_owned(), a.clone()))
        .into_iter()
        .collect();
    paging::page(items, id, &Params(params))
}

/// Where a paged list stands, under it: the total, a link back to the
/// first page once past it, and one to the next page while there is one.
pub fn pager<T>(path: &str, list: &ListPage<T>, query: &HashMap<String, String>) -> Markup {
    let first = !query.contains_key("after");
    html! {
        @if list.total > paging::DEFAULT_LIMIT as u64 || !first {
            p.actions #pager {
                span.muted { (list.total) " in all, " (paging::DEFAULT_LIMIT) " a page, oldest first." }
                @if !first { " " a href=(path) { "First page" } }
                @if let Some(next) = &list.next_after {
                    " " a #next href={ (path) "?after=" (urlencode(next)) } { "Next page" }
                }
            }
        }
    }
}

/// `one` for a count of 1, `many` otherwise: "1 member", "2 members".
pub fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Non-empty trimmed lines of a textarea.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A JSON value shown compactly in a table cell.
pub fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Pretty JSON for a `<pre>`.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_values_read_numbers_booleans_and_quoted_strings() {
        assert_eq!(typed_value("10"), json!(10));
        assert_eq!(typed_value(" 2.5 "), json!(2.5));
        assert_eq!(typed_value("true"), json!(true));
        assert_eq!(typed_value("\"10\""), json!("10"));
        assert_eq!(typed_value("pro plan"), json!("pro plan"));
        assert_eq!(typed_value("[1]"), json!("[1]"));
    }

    #[test]
    fn plural_is_singular_only_for_one() {
        assert_eq!(plural(1, "member", "members"), "member");
        assert_eq!(plural(0, "member", "members"), "members");
        assert_eq!(plural(2, "member", "members"), "members");
    }

    #[test]
    fn lines_drop_blanks_and_trim() {
        assert_eq!(lines(" a \n\n b\r\n"), vec!["a", "b"]);
    }
}
