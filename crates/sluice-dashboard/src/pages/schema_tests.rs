//! Tests of [`super`]: the schema page's block toggles.

use super::*;

fn session() -> Session {
    Session::new(
        "s",
        0,
        "c".into(),
        sluice_api::principal::Principal::AdminToken,
    )
}

fn cell(name: &str, blocked: bool) -> String {
    block_cell(
        &session(),
        "src_x",
        Some("blocked_events"),
        name,
        blocked,
        "?kind=track",
    )
    .into_string()
}

#[test]
fn a_name_the_rules_would_refuse_gets_a_note_not_a_block_button() {
    let long = "E".repeat(MAX_NAME + 1);
    let html = cell(&long, false);
    assert!(!html.contains("<button"), "{html}");
    assert!(!html.contains("<form"), "{html}");
    assert!(
        html.contains("Cannot be blocked: longer than 200 characters."),
        "{html}"
    );
    assert!(!cell("", false).contains("<button"));
}

#[test]
fn names_of_up_to_200_characters_keep_their_block_button() {
    for name in [
        "Debug Ping".to_owned(),
        "E".repeat(MAX_NAME),
        // Characters, not bytes, as the rules count them.
        "é".repeat(MAX_NAME),
    ] {
        let html = cell(&name, false);
        assert!(
            html.contains(&format!(r#"aria-label="Block {name}""#)),
            "{html}"
        );
        assert!(!html.contains("Cannot be blocked"));
    }
    // A blocked name can always be unblocked.
    assert!(cell("Debug Ping", true).contains(r#"aria-label="Unblock Debug Ping""#));
    // Kinds without a block list have no cell content.
    let none = block_cell(&session(), "src_x", None, "x", false, "?").into_string();
    assert_eq!(none, "");
}

#[test]
fn the_limit_is_the_rules_own() {
    // What the rules refuse is exactly what gets no button.
    for len in [MAX_NAME, MAX_NAME + 1] {
        let name = "a".repeat(len);
        let doc = json!({"blocked_events": [name]});
        let refused = sluice_schema::SourceRules::parse(&doc).is_err();
        assert_eq!(refused, unblockable(&name).is_some(), "{len}");
    }
}

#[test]
fn an_events_property_rows_follow_the_event() {
    use serde_json::json;
    let entries = vec![
        json!({"kind": "property", "name": "Order Completed", "property": "total"}),
        json!({"kind": "property", "name": "Order Completed", "property": "env"}),
        json!({"kind": "track", "name": "Order Completed"}),
        json!({"kind": "track", "name": "Signed Up"}),
        json!({"kind": "identify_trait", "name": "plan"}),
    ];
    let kinds: Vec<String> = super::event_first(entries)
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["kind"].as_str().unwrap_or(""),
                e["property"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "track ",
            "property total",
            "property env",
            "track ",
            "identify_trait "
        ]
    );
}
