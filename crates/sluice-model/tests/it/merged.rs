//! Batch-level `context` and `integrations` merged into each item: the
//! per-event size and nesting limits hold for the item as merged.

use serde_json::{Value, json};
use sluice_model::merge::MERGE_ALLOWANCE;
use sluice_model::{ErrorCode, Limits};

use crate::support::{batch, batch_with, field, one, padded, rejected};

const LIMITS: Limits = Limits {
    max_call_bytes: 300,
    max_batch_bytes: 100_000,
    max_batch_events: 2500,
};

/// A batch of `items` under the batch-level members `top` (`"context":…`).
fn body(items: &[String], top: &str) -> String {
    format!(r#"{{"batch":[{}],{top}}}"#, items.join(","))
}

/// An identify item of exactly `len` raw bytes, `extra` before its padding.
fn item(extra: &str, len: usize) -> String {
    padded(
        &format!(r#"{{"type":"identify","userId":"u"{extra},"pad":""#),
        r#""}"#,
        len,
    )
}

const CONTEXT: &str = r#"{"library":{"name":"analytics-go","version":"2.1.0"}}"#;

/// Most bytes an item may have with the batch-level members merged in.
const MERGED_LIMIT: usize = 300 + MERGE_ALLOWANCE;

/// A batch context larger than the allowance, so that the merged limit
/// can be reached by items under their own limit.
fn big_context() -> String {
    format!(r#"{{"blob":"{}"}}"#, "x".repeat(1100))
}

#[test]
fn an_item_at_its_own_limit_still_takes_a_small_batch_context() {
    // analytics-java: items up to its own 32 KiB cap, `context.library` at
    // batch level.
    let top = format!(r#""context":{CONTEXT}"#);
    let event = one(batch_with(
        &body(&[item("", LIMITS.max_call_bytes)], &top),
        &LIMITS,
    ));
    assert_eq!(field(&event, "context")["library"]["name"], "analytics-go");
}

#[test]
fn the_merge_adds_at_most_the_allowance_beyond_the_limit_and_one_byte_more_is_refused() {
    let context = big_context();
    // `,"context":{…}` is appended to an item without a context.
    let merged = r#","context":"#.len() + context.len();
    let top = format!(r#""context":{context}"#);
    let fits = item("", MERGED_LIMIT - merged);
    let event = one(batch_with(&body(&[fits], &top), &LIMITS));
    assert_eq!(
        field(&event, "context")["blob"].as_str().map(str::len),
        Some(1100)
    );

    let over = item("", MERGED_LIMIT - merged + 1);
    let error = rejected(batch_with(&body(&[item("", 60), over], &top), &LIMITS));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
    assert_eq!(
        error.message,
        "batch[1]: event is 1325 bytes with the batch-level 'context' merged in, over the limit \
         of 1324 (300 per event, and 1024 more for what the batch adds)"
    );
}

#[test]
fn tiny_items_under_a_huge_batch_context_are_refused_before_any_is_stored() {
    let huge = format!(r#""context":{{"blob":"{}"}}"#, "x".repeat(300 * 1024));
    let items = vec![r#"{"type":"track","userId":"u","event":"E"}"#.to_owned(); 2500];
    let error = rejected(batch(&body(&items, &huge)));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
    assert!(
        error.message.starts_with("batch[0]: event is ")
            && error
                .message
                .contains("with the batch-level 'context' merged in")
            && error.message.contains("over the limit of 33792"),
        "{}",
        error.message
    );
}

#[test]
fn batch_members_the_item_overrides_do_not_count() {
    let big = "x".repeat(2000);
    let top =
        format!(r#""context":{{"big":"{big}","locale":"fr"}},"integrations":{{"X":"{big}"}}"#);
    let own = r#","context":{"big":1},"integrations":{"X":true}"#;
    let event = one(batch_with(&body(&[item(own, 120)], &top), &LIMITS));
    assert_eq!(field(&event, "context")["big"], 1);
    assert_eq!(field(&event, "context")["locale"], "fr");
    assert_eq!(field(&event, "integrations"), json!({"X": true}));
}

#[test]
fn appended_members_count_exactly_against_the_limit() {
    let pad = "p".repeat(1100);
    let top = format!(r#""context":{{"big":"0123456789","ip":"1.2.3.4","n":1e2,"pad":"{pad}"}}"#);
    // Appended to the item's own context: `,"ip":"1.2.3.4"`, `,"n":100.0`
    // and `,"pad":"…"`.
    let merged =
        r#","ip":"1.2.3.4""#.len() + r#","n":100.0"#.len() + r#","pad":"""#.len() + pad.len();
    let own = r#","context":{"big":"mine"}"#;
    let fits = item(own, MERGED_LIMIT - merged);
    assert_eq!(
        field(&one(batch_with(&body(&[fits], &top), &LIMITS)), "context")["n"],
        100.0
    );
    let over = item(own, MERGED_LIMIT - merged + 1);
    let error = rejected(batch_with(&body(&[over], &top), &LIMITS));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
}

#[test]
fn a_null_item_context_is_replaced_by_the_batch_one_and_counted_so() {
    let context = big_context();
    let top = format!(r#""context":{context}"#);
    let fits = item(r#","context":null"#, MERGED_LIMIT - context.len() + 4);
    let event = one(batch_with(&body(&[fits], &top), &LIMITS));
    assert_eq!(
        field(&event, "context")["blob"].as_str().map(str::len),
        Some(1100)
    );
    let over = item(r#","context":null"#, MERGED_LIMIT - context.len() + 5);
    assert!(batch_with(&body(&[over], &top), &LIMITS).is_err());
}

#[test]
fn batch_integrations_count_too_and_the_message_names_what_was_merged() {
    let big = "x".repeat(1300);
    let only = format!(r#""integrations":{{"Webhooks":{{"k":"{big}"}}}}"#);
    let error = rejected(batch_with(&body(&[item("", 60)], &only), &LIMITS));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
    assert!(
        error
            .message
            .contains("with the batch-level 'integrations' merged in"),
        "{}",
        error.message
    );
    let both = format!(r#""context":{CONTEXT},{only}"#);
    let error = rejected(batch_with(&body(&[item("", 60)], &both), &LIMITS));
    assert!(
        error.message.starts_with("batch[0]: event is ")
            && error
                .message
                .contains("with the batch-level 'context' and 'integrations' merged"),
        "{}",
        error.message
    );
}

/// A batch-level member value nested `levels` deep (arrays).
fn deep(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

fn three_items() -> Vec<String> {
    vec![
        r#"{"type":"page","userId":"u","name":"P"}"#.to_owned(),
        r#"{"type":"track","userId":"u","event":"E"}"#.to_owned(),
        r#"{"type":"identify","userId":"u","traits":{"a":1}}"#.to_owned(),
    ]
}

#[test]
fn batch_context_that_would_nest_past_the_limit_once_merged_is_refused() {
    // The context is 127 levels deep on its own: merged, 128.
    let top = format!(r#""context":{{"x":{}}}"#, deep(126));
    let error = rejected(batch(&body(&three_items(), &top)));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert_eq!(
        error.message,
        "batch[0]: the batch-level 'context' merged into this event would nest 128 levels, over \
         the limit of 127 (recursion limit exceeded)"
    );
}

#[test]
fn batch_context_merged_to_exactly_the_limit_is_stored_parseable() {
    let top = format!(r#""context":{{"x":{}}}"#, deep(125));
    let events = batch(&body(&three_items(), &top)).expect("accepted").events;
    assert_eq!(events.len(), 3);
    for event in events {
        let parsed: Result<Value, _> = serde_json::from_str(&event.json);
        assert!(parsed.is_ok(), "stored event does not parse: {parsed:?}");
    }
}

#[test]
fn a_too_deep_batch_member_the_item_overrides_is_not_merged_nor_refused() {
    let top = format!(r#""context":{{"x":{},"locale":"fr"}}"#, deep(126));
    let own = r#"{"type":"track","userId":"u","event":"E","context":{"x":1}}"#.to_owned();
    let event = one(batch(&body(std::slice::from_ref(&own), &top)));
    assert_eq!(field(&event, "context")["x"], 1);
    assert_eq!(field(&event, "context")["locale"], "fr");
    let error = rejected(batch(&body(&[own, three_items().remove(0)], &top)));
    assert!(error.message.starts_with("batch[1]: "), "{}", error.message);
}

#[test]
fn batch_integrations_that_would_nest_past_the_limit_once_merged_are_refused() {
    let top = format!(r#""integrations":{{"Webhooks":{}}}"#, deep(126));
    let error = rejected(batch(&body(&three_items(), &top)));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error
            .message
            .starts_with("batch[0]: the batch-level 'integrations' merged into this event"),
        "{}",
        error.message
    );
    let top = format!(r#""integrations":{{"Webhooks":{}}}"#, deep(125));
    assert_eq!(
        batch(&body(&three_items(), &top)).map(|e| e.events.len()),
        Ok(3)
    );
}
