use serde_json::{Value, json};

use crate::definition::Definition;
use crate::filter::MAX_PATH_LEN;

/// The field a refused definition names.
fn field(class: &str, v: Value) -> String {
    match Definition::parse(class, &v) {
        Ok(_) => format!("accepted: {v}"),
        Err(e) => e.field,
    }
}

/// The field a refused audience condition names.
fn condition_field(condition: Value) -> String {
    field("audience", json!({ "condition": condition }))
}

#[test]
fn invalid_definitions_name_the_field() {
    assert_eq!(
        field("trait", json!({"kind": "sum", "event": "E"})),
        "definition.property"
    );
    assert_eq!(
        field(
            "trait",
            json!({"kind": "counter", "event": "E", "window": {}})
        ),
        "definition.window"
    );
    assert_eq!(
        field("trait", json!({"kind": "nope", "event": "E"})),
        "definition.kind"
    );
    assert_eq!(field("trait", json!("counter")), "definition");
    assert_eq!(field("trait", json!([1])), "definition[0]");
    assert_eq!(
        condition_field(
            json!({"and": [{"performed": {"event": "E", "count": {"at_least": 1e308}}}]})
        ),
        "definition.condition.and[0].performed.count.at_least",
        "a value the decoder refuses is named by its JSON path"
    );
}

#[test]
fn semantic_refusals_name_the_field_by_its_full_json_path() {
    // The tester's case: the decoder's form, operators included.
    assert_eq!(
        condition_field(json!({"and": [
            {"trait": {"key": "a", "op": "exists"}},
            {"performed": {"event": "x", "window": {"days": 0}}}
        ]})),
        "definition.condition.and[1].performed.window"
    );
    assert_eq!(
        condition_field(json!({"performed": {"type": "identify"}})),
        "definition.condition.performed.type"
    );
    assert_eq!(
        condition_field(json!({"not_performed": {"event": "x", "window": {"hours": 0}}})),
        "definition.condition.not_performed.window"
    );
    assert_eq!(
        condition_field(json!({"or": [{"not": {"performed": {"event": " "}}}]})),
        "definition.condition.or[0].not.performed.event"
    );
    assert_eq!(
        condition_field(json!({"and": [{"or": []}]})),
        "definition.condition.and[0].or"
    );
    assert_eq!(
        condition_field(json!({"performed": {"event": "x",
            "where": [{"property": "a", "op": "exists"}, {"property": "b", "op": "gt", "value": "1"}]}})),
        "definition.condition.performed.where[1].value"
    );
    assert_eq!(
        condition_field(json!({"not": {"trait": {"key": "plan", "op": "equals"}}})),
        "definition.condition.not.trait.value"
    );
    assert_eq!(
        condition_field(json!({"computed_trait": {"key": "", "op": "exists"}})),
        "definition.condition.computed_trait.key"
    );
    assert_eq!(
        condition_field(json!({"and": [{"audience": " "}]})),
        "definition.condition.and[0].audience"
    );
    assert_eq!(
        field(
            "trait",
            json!({"kind": "counter", "event": "E", "where": [{"property": "p", "op": "lt"}]})
        ),
        "definition.where[0].value"
    );
}

#[test]
fn paths_and_keys_longer_than_destination_filters_allow_are_refused() {
    let long = "p".repeat(MAX_PATH_LEN + 1);
    let fits = "p".repeat(MAX_PATH_LEN);
    assert_eq!(
        field(
            "trait",
            json!({"kind": "sum", "event": "E", "property": long})
        ),
        "definition.property"
    );
    assert!(
        Definition::parse(
            "trait",
            &json!({"kind": "sum", "event": "E", "property": fits})
        )
        .is_ok()
    );
    assert_eq!(
        field(
            "trait",
            json!({"kind": "counter", "event": "E", "where": [{"property": long, "op": "exists"}]})
        ),
        "definition.where[0].property"
    );
    assert_eq!(
        condition_field(json!({"computed_trait": {"key": long, "op": "exists"}})),
        "definition.condition.computed_trait.key"
    );
    assert!(
        Definition::parse(
            "trait",
            &json!({"kind": "counter", "event": "E", "property": ""})
        )
        .is_ok(),
        "a counter reads no property, so an empty one is still accepted"
    );
    let stored = json!({"kind": "sum", "event": "E", "property": long}).to_string();
    assert!(
        Definition::from_stored("trait", &stored).is_ok(),
        "a definition saved before the limit keeps running"
    );
}

#[test]
fn references_are_named_by_the_json_path_of_their_first_use() {
    let d = Definition::parse(
        "audience",
        &json!({"condition": {"or": [
            {"trait": {"key": "orders", "op": "exists"}},
            {"not": {"computed_trait": {"key": "orders", "op": "gt", "value": 1}}},
            {"and": [{"audience": "vip"}, {"computed_trait": {"key": "orders", "op": "exists"}}]}
        ]}}),
    )
    .expect("valid");
    assert_eq!(
        d.computed_trait_ref_field("orders"),
        "definition.condition.or[1].not.computed_trait.key"
    );
    assert_eq!(
        d.audience_ref_field("vip"),
        "definition.condition.or[2].and[0].audience"
    );
    assert_eq!(d.audience_ref_field("none"), "definition.condition");
}

#[test]
fn fields_a_kind_or_operator_would_ignore_are_refused() {
    assert_eq!(
        condition_field(
            json!({"not_performed": {"event": "Order Completed", "count": {"exactly": 5}}})
        ),
        "definition.condition.not_performed.count"
    );
    assert_eq!(
        condition_field(json!({"and": [{"not_performed": {"event": "E", "count": {}}}]})),
        "definition.condition.and[0].not_performed.count"
    );
    assert_eq!(
        field(
            "trait",
            json!({"kind": "counter", "event": "E", "property": "total"})
        ),
        "definition.property"
    );
    let err = Definition::parse(
        "trait",
        &json!({"kind": "counter", "event": "E", "property": "total"}),
    )
    .map_err(|e| e.message);
    assert!(
        err.as_ref().is_err_and(|m| m.contains("counter")),
        "{err:?}"
    );
    // What they are for still passes.
    for ok in [
        json!({"not_performed": {"event": "E", "window": {"days": 7}}}),
        json!({"performed": {"event": "E", "count": {"exactly": 5}}}),
    ] {
        assert!(Definition::parse("audience", &json!({ "condition": ok })).is_ok());
    }
}

#[test]
fn property_paths_destination_filters_refuse_are_refused_in_their_words() {
    let refusal = |v: Value| Definition::parse("trait", &v).map_err(|e| e.to_string());
    for bad in ["a..b", ".a", "a.", "a.b.c.d.e.f.g.h.i"] {
        assert_eq!(
            refusal(json!({"kind": "counter", "event": "E",
                           "where": [{"property": bad, "op": "exists"}]})),
            Err(format!(
                "definition.where[0].property: invalid property path '{bad}': {}",
                if bad.len() > 8 {
                    "deeper than 8 segments"
                } else {
                    "empty segment"
                }
            ))
        );
        assert_eq!(
            field(
                "trait",
                json!({"kind": "sum", "event": "E", "property": bad})
            ),
            "definition.property"
        );
        assert_eq!(
            condition_field(json!({"not_performed": {"event": "E",
                "where": [{"property": bad, "op": "exists"}]}})),
            "definition.condition.not_performed.where[0].property"
        );
    }
    // A dotted path is still a path; a trait key is read whole.
    for ok in [
        json!({"kind": "sum", "event": "E", "property": "cart.total"}),
        json!({"kind": "counter", "event": "E", "where": [{"property": "a.b", "op": "exists"}]}),
    ] {
        assert!(Definition::parse("trait", &ok).is_ok(), "{ok}");
    }
    let key = json!({"condition": {"trait": {"key": "a..b", "op": "exists"}}});
    assert!(Definition::parse("audience", &key).is_ok());
}
