use serde_json::{Value, json};

use super::*;
use crate::definition::Definition;
use crate::profile::{Call, Profile, ProfileEvent};

fn track(p: &mut Profile, seq: i64, ts: i64, event: &str, props: Value) {
    let call = Call {
        seq,
        source_id: "src".into(),
        kind: "track".into(),
        user_id: Some("u".into()),
        anonymous_id: None,
        previous_id: None,
        name: Some(event.into()),
        ts,
        properties: props.to_string(),
        traits: Default::default(),
        message_id: Some(format!("m-{seq}")),
    };
    let row = call.event_row().expect("behaviour");
    p.push_event(ProfileEvent::from_row(&row));
}

fn def(class: &str, v: Value) -> Definition {
    Definition::parse(class, &v).expect("valid definition")
}

fn value_of(d: &Definition, p: &Profile, now: i64) -> (Option<Value>, Option<i64>) {
    let mut eval = Evaluation::default();
    let v = evaluate("k", d, p, now, &mut eval);
    (v, eval.next_change)
}

fn person() -> Profile {
    let mut p = Profile {
        user_ids: vec!["u".into()],
        ..Profile::default()
    };
    track(&mut p, 1, 1000, "Order", json!({"total": 10, "sku": "a"}));
    track(&mut p, 2, 2000, "Order", json!({"total": 30, "sku": "b"}));
    track(
        &mut p,
        3,
        3000,
        "Order",
        json!({"total": "oops", "sku": "b"}),
    );
    track(&mut p, 4, 4000, "Other", json!({"total": 99}));
    p
}

#[test]
fn every_trait_kind_computes_over_matching_events() {
    let p = person();
    let cases = [
        (json!({"kind": "counter", "event": "Order"}), json!(3)),
        (
            json!({"kind": "sum", "event": "Order", "property": "total"}),
            json!(40),
        ),
        (
            json!({"kind": "avg", "event": "Order", "property": "total"}),
            json!(20),
        ),
        (
            json!({"kind": "min", "event": "Order", "property": "total"}),
            json!(10),
        ),
        (
            json!({"kind": "max", "event": "Order", "property": "total"}),
            json!(30),
        ),
        (
            json!({"kind": "most_frequent", "event": "Order", "property": "sku"}),
            json!("b"),
        ),
        (
            json!({"kind": "first", "event": "Order", "property": "sku"}),
            json!("a"),
        ),
        (
            json!({"kind": "last", "event": "Order", "property": "total"}),
            json!("oops"),
        ),
        (
            json!({"kind": "unique_list", "event": "Order", "property": "sku"}),
            json!(["a", "b"]),
        ),
        (
            json!({"kind": "unique_count", "event": "Order", "property": "sku"}),
            json!(2),
        ),
    ];
    for (d, expected) in cases {
        let (v, _) = value_of(&def("trait", d.clone()), &p, 5000);
        assert_eq!(v, Some(expected), "{d}");
    }
}

#[test]
fn filters_narrow_the_events() {
    let p = person();
    let d = def(
        "trait",
        json!({"kind": "counter", "event": "Order", "where": [{"property": "total", "op": "gt", "value": 15}]}),
    );
    assert_eq!(value_of(&d, &p, 5000).0, Some(json!(1)));
}

#[test]
fn window_drops_old_events_and_reports_the_next_exit() {
    let p = person();
    let d = def(
        "trait",
        json!({"kind": "counter", "event": "Order", "window": {"seconds": 2}}),
    );
    // At 3500 the window is (1500, 3500]: events at 2000 and 3000.
    let (v, next) = value_of(&d, &p, 3500);
    assert_eq!(v, Some(json!(2)));
    assert_eq!(next, Some(4000), "the event at 2000 leaves at 4000");
    // Long after: count 0, but the person did perform it once: value 0.
    assert_eq!(value_of(&d, &p, 100_000), (Some(json!(0)), None));
}

#[test]
fn an_audience_wakes_only_when_its_answer_can_change() {
    let p = person();
    let aud = |c: Value| def("audience", json!({"condition": c}));
    // Window 10 s at 3500: the orders at 1000, 2000, 3000 leave at 11000,
    // 12000, 13000.
    let at_least = |n: u64| {
        aud(
            json!({"performed": {"event": "Order", "window": {"seconds": 10},
                                 "count": {"at_least": n}}}),
        )
    };
    assert_eq!(
        value_of(&at_least(1), &p, 3500),
        (Some(json!(true)), Some(13000)),
        "a member of 'at least once' leaves when the last order leaves"
    );
    assert_eq!(
        value_of(&at_least(2), &p, 3500),
        (Some(json!(true)), Some(12000))
    );
    assert_eq!(
        value_of(&at_least(4), &p, 3500),
        (None, None),
        "nothing to wake for: without new events it can only stay out"
    );
    let at_most_one = aud(
        json!({"performed": {"event": "Order", "window": {"seconds": 10},
                                               "count": {"at_most": 1}}}),
    );
    assert_eq!(value_of(&at_most_one, &p, 3500), (None, Some(12000)));
    let none = aud(json!({"not_performed": {"event": "Order", "window": {"seconds": 10}}}));
    assert_eq!(value_of(&none, &p, 3500), (None, Some(13000)));
    let either = aud(json!({"or": [
        {"performed": {"event": "Order", "window": {"seconds": 10}}},
        {"performed": {"event": "Other", "window": {"seconds": 20}}}]}));
    assert_eq!(
        value_of(&either, &p, 4500).1,
        Some(13000),
        "each leaf reports its own change; the earliest wins"
    );
}

#[test]
fn audience_conditions_combine() {
    let mut p = person();
    p.merge_traits(json!({"plan": "pro"}).as_object().unwrap(), 1);
    let member = |c: Value, p: &Profile| {
        value_of(&def("audience", json!({"condition": c})), p, 5000).0 == Some(json!(true))
    };
    assert!(member(
        json!({"performed": {"event": "Order", "count": {"at_least": 3}}}),
        &p
    ));
    assert!(!member(
        json!({"performed": {"event": "Order", "count": {"exactly": 2}}}),
        &p
    ));
    assert!(member(json!({"not_performed": {"event": "Refund"}}), &p));
    assert!(member(
        json!({"and": [{"trait": {"key": "plan", "op": "equals", "value": "pro"}},
                       {"not": {"performed": {"event": "Other", "where": [{"property": "total", "op": "lt", "value": 50}]}}}]}),
        &p
    ));
    assert!(!member(
        json!({"or": [{"trait": {"key": "plan", "op": "equals", "value": "free"}}]}),
        &p
    ));
    let anon = Profile {
        user_ids: vec![],
        ..p.clone()
    };
    assert!(
        !member(json!({"performed": {"event": "Order"}}), &anon),
        "anonymous excluded by default"
    );
}

#[test]
fn audiences_see_earlier_values_by_key() {
    let p = person();
    let mut eval = Evaluation::default();
    let orders = def("trait", json!({"kind": "counter", "event": "Order"}));
    let big = def(
        "audience",
        json!({"condition": {"computed_trait": {"key": "orders", "op": "gt", "value": 2}}}),
    );
    let nested = def("audience", json!({"condition": {"audience": "big"}}));
    evaluate("orders", &orders, &p, 5000, &mut eval);
    assert_eq!(
        evaluate("big", &big, &p, 5000, &mut eval),
        Some(json!(true))
    );
    assert_eq!(
        evaluate("nested", &nested, &p, 5000, &mut eval),
        Some(json!(true))
    );
}

#[test]
fn an_audience_names_the_computed_traits_and_audiences_it_reads() {
    let a = def(
        "audience",
        json!({"condition": {"or": [
            {"computed_trait": {"key": "orders", "op": "gt", "value": 1}},
            {"not": {"audience": "vip"}},
            {"and": [{"computed_trait": {"key": "spend", "op": "exists"}}]}
        ]}}),
    );
    assert_eq!(
        a.computed_trait_refs().into_iter().collect::<Vec<_>>(),
        ["orders", "spend"]
    );
    assert_eq!(a.audience_refs().into_iter().collect::<Vec<_>>(), ["vip"]);
}

#[test]
fn cycles_are_found_and_named() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut refs = BTreeMap::new();
    refs.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    refs.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        crate::definition::find_cycle(&refs),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
    assert_eq!(
        crate::key::snake_case("High Value Users!"),
        "high_value_users"
    );
    assert_eq!(crate::key::snake_case("ordersCount"), "orders_count");
}

#[test]
fn unique_list_is_capped_but_the_count_is_not() {
    let mut p = Profile::default();
    for i in 0..250 {
        track(&mut p, i, i, "View", json!({"page": format!("/p{i}")}));
    }
    let list = def(
        "trait",
        json!({"kind": "unique_list", "event": "View", "property": "page"}),
    );
    let count = def(
        "trait",
        json!({"kind": "unique_count", "event": "View", "property": "page"}),
    );
    let (v, _) = value_of(&list, &p, 1000);
    assert_eq!(
        v.and_then(|v| v.as_array().map(Vec::len)),
        Some(MAX_UNIQUE_LIST)
    );
    assert_eq!(value_of(&count, &p, 1000).0, Some(json!(250)));
}

#[test]
fn missing_and_mixed_type_properties_are_skipped_by_value_kinds() {
    let mut p = Profile::default();
    track(&mut p, 1, 1, "Buy", json!({}));
    track(&mut p, 2, 2, "Buy", json!({"price": "12"}));
    track(&mut p, 3, 3, "Buy", json!({"price": true}));
    let sum = def(
        "trait",
        json!({"kind": "sum", "event": "Buy", "property": "price"}),
    );
    assert_eq!(value_of(&sum, &p, 10).0, None, "no numeric value: no value");
    let counter = def("trait", json!({"kind": "counter", "event": "Buy"}));
    assert_eq!(
        value_of(&counter, &p, 10).0,
        Some(json!(3)),
        "missing properties still count"
    );
    let last = def(
        "trait",
        json!({"kind": "last", "event": "Buy", "property": "price"}),
    );
    assert_eq!(value_of(&last, &p, 10).0, Some(json!(true)));
}
