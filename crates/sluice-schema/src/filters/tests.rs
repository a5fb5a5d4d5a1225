use super::*;
use serde_json::json;

fn apply(doc: Value, body: &str) -> FilterOutcome {
    let set = FilterSet::parse(&doc).unwrap();
    set.apply(&Shape::of(body, "track"), body, None)
}

#[test]
fn reading_through_the_outline_decides_as_reading_the_text() {
    let doc = json!({"filters": [
        {"name": "internal", "action": "drop",
         "when": {"field": "properties.coupon", "op": "eq", "value": "INTERNAL"}},
        {"name": "huge", "action": "drop",
         "when": {"field": "properties.total", "op": "gt", "value": 1000}},
        {"name": "ssn", "action": "drop",
         "when": {"field": "traits.ssn", "op": "exists"}},
        {"name": "pii", "action": "drop_fields",
         "fields": ["properties.email", "context.ip", "properties.plan.tier"]}
    ]});
    let set = FilterSet::parse(&doc).unwrap();
    let calls = [
        r#"{"userId":"u","event":"E","properties":{"coupon":"INTERNAL"}}"#,
        r#"{"userId":"u","event":"E","properties":{"total":5000}}"#,
        r#"{"userId":"u","event":"E","properties":{"total":5},"traits":{"ssn":"1"}}"#,
        r#"{"userId":"u","event":"E","properties":{"email":"a@b","plan":{"tier":"x"}}}"#,
        r#"{"userId":"u","event":"E","properties":{"total":5},"context":{"ip":"1.2.3.4"}}"#,
    ];
    let mut outcomes = Vec::new();
    for call in calls {
        let (body, outline) = crate::read::tests::stored(call);
        let shape = Shape::of(&body, "track");
        let outcome = set.apply(&shape, &body, Some(&outline));
        assert_eq!(outcome, set.apply(&shape, &body, None), "{body}");
        outcomes.push(outcome);
    }
    assert_eq!(outcomes[0], FilterOutcome::Drop("internal".into()));
    assert_eq!(outcomes[1], FilterOutcome::Drop("huge".into()));
    assert_eq!(outcomes[2], FilterOutcome::Drop("ssn".into()));
    assert!(matches!(&outcomes[3], FilterOutcome::SendBody(b) if !b.contains("a@b")));
    assert!(matches!(&outcomes[4], FilterOutcome::SendBody(b) if !b.contains("\"ip\"")));
}

#[test]
fn first_matching_drop_filter_names_the_drop() {
    let doc = json!({"filters": [
        {"name": "only orders", "action": "drop", "when": {"field": "event", "op": "not_in", "values": ["Order"]}},
        {"name": "no identify", "action": "drop", "when": {"field": "type", "op": "in", "values": ["identify"]}}
    ]});
    let out = apply(doc.clone(), r#"{"type":"track","event":"Click"}"#);
    assert_eq!(out, FilterOutcome::Drop("only orders".into()));
    assert_eq!(
        apply(doc, r#"{"type":"track","event":"Order"}"#),
        FilterOutcome::Send
    );
}

#[test]
fn drop_by_property_condition() {
    let doc = json!({"filters": [{"name": "big", "action": "drop",
        "when": {"field": "properties.total", "op": "gte", "value": 1000}}]});
    let big = r#"{"type":"track","event":"O","properties":{"total":1000}}"#;
    assert_eq!(apply(doc.clone(), big), FilterOutcome::Drop("big".into()));
    let small = r#"{"type":"track","event":"O","properties":{"total":10}}"#;
    assert_eq!(apply(doc, small), FilterOutcome::Send);
}

#[test]
fn conditions_read_nested_paths_and_trait_keys() {
    let doc = json!({"filters": [
        {"name": "pro", "action": "drop",
         "when": {"field": "properties.plan.tier", "op": "eq", "value": "pro"}},
        {"name": "vip", "action": "drop",
         "when": {"field": "traits.vip", "op": "eq", "value": true}}
    ]});
    let pro = r#"{"type":"track","event":"O","properties":{"plan":{"tier":"pro"}}}"#;
    assert_eq!(apply(doc.clone(), pro), FilterOutcome::Drop("pro".into()));
    let set = FilterSet::parse(&doc).unwrap();
    let vip = r#"{"type":"identify","traits":{"vip":true}}"#;
    assert_eq!(
        set.apply(&Shape::of(vip, "identify"), vip, None),
        FilterOutcome::Drop("vip".into())
    );
    let other = r#"{"type":"identify","traits":{"vip":false}}"#;
    assert_eq!(
        set.apply(&Shape::of(other, "identify"), other, None),
        FilterOutcome::Send
    );
}

#[test]
fn drop_fields_with_a_condition_applies_only_when_it_matches() {
    let doc = json!({"filters": [{"name": "eu pii", "action": "drop_fields",
        "when": {"field": "context.region", "op": "eq", "value": "eu"},
        "fields": ["properties.email"]}]});
    let eu = r#"{"type":"track","event":"O","properties":{"email":"a"},"context":{"region":"eu"}}"#;
    assert_eq!(
        apply(doc.clone(), eu),
        FilterOutcome::SendBody(
            r#"{"type":"track","event":"O","properties":{},"context":{"region":"eu"}}"#.into()
        )
    );
    let us = r#"{"type":"track","event":"O","properties":{"email":"a"},"context":{"region":"us"}}"#;
    assert_eq!(apply(doc, us), FilterOutcome::Send);
}

#[test]
fn drop_fields_removes_listed_paths_only() {
    let doc = json!({"filters": [{"name": "pii", "action": "drop_fields",
        "fields": ["properties.email", "traits.ssn"]}]});
    let body = r#"{"type":"track","event":"O","properties":{"email":"a@b","total":1}}"#;
    assert_eq!(
        apply(doc.clone(), body),
        FilterOutcome::SendBody(r#"{"type":"track","event":"O","properties":{"total":1}}"#.into())
    );
    let clean = r#"{"type":"track","event":"O","properties":{"total":1}}"#;
    assert_eq!(apply(doc, clean), FilterOutcome::Send);
}

#[test]
fn errors_name_the_field() {
    let cases = [
        (
            json!({"filters": [{"name": "a", "action": "drop"}]}),
            "filters[0].when",
        ),
        (
            json!({"filters": [{"name": "a", "action": "zap"}]}),
            "filters[0].action",
        ),
        (
            json!({"filters": [{"name": "", "action": "drop"}]}),
            "filters[0].name",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["properties..x"]}]}),
            "filters[0].fields[0]",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["traits"]}]}),
            "filters[0].fields[0]",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop", "when": {"field": "x.", "op": "exists"}}]}),
            "filters[0].when.field",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["p.x"]},
                            {"name": "a", "action": "drop_fields", "fields": ["p.y"]}]}),
            "filters[1].name",
        ),
        (json!({"filters": 1}), "filters"),
    ];
    for (doc, field) in cases {
        assert_eq!(FilterSet::parse(&doc).unwrap_err().field, field, "{doc}");
    }
}

#[test]
fn a_filter_saved_before_the_call_type_check_can_be_kept_but_not_added_or_changed() {
    let legacy = json!({"name": "old", "action": "drop",
                        "when": {"field": "type", "op": "in", "values": ["Group"]}});
    let pii = json!({"name": "no pii", "action": "drop_fields", "fields": ["context.ip"]});
    let stored = json!({"filters": [legacy.clone(), pii]});
    // Deleting the other filter keeps the legacy one as it was: saved.
    let kept = json!({"filters": [legacy.clone()]});
    assert!(FilterSet::parse_new(&kept, Some(&stored)).is_ok());
    // Without it stored, or changed, it is checked.
    let e = FilterSet::parse_new(&kept, None).unwrap_err();
    assert_eq!(e.field, "filters[0].when.values[0]");
    assert!(
        e.message.contains("\"Group\" is not a call type"),
        "{}",
        e.message
    );
    let mut changed = legacy;
    changed["name"] = json!("renamed");
    let doc = json!({"filters": [changed]});
    assert!(FilterSet::parse_new(&doc, Some(&stored)).is_err());
}
