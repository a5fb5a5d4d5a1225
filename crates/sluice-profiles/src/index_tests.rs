use serde_json::{Value, json};

use super::*;

fn def(class: &str, v: Value) -> Definition {
    Definition::parse(class, &v).expect("valid")
}

fn event(kind: &str, name: Option<&str>) -> Touched {
    Touched {
        events: BTreeSet::from([(kind.to_owned(), name.map(str::to_owned))]),
        ..Touched::default()
    }
}

/// Four definitions over different events, an audience over a trait, one
/// referring to a computed trait, and one that holds for nobody in
/// particular.
fn sample() -> Vec<(&'static str, Definition)> {
    vec![
        (
            "orders",
            def("trait", json!({"kind": "counter", "event": "Order"})),
        ),
        (
            "signups",
            def("trait", json!({"kind": "counter", "event": "Signup"})),
        ),
        (
            "pro",
            def(
                "audience",
                json!({"condition": {"trait": {"key": "plan", "op": "equals", "value": "pro"}}}),
            ),
        ),
        (
            "buyers",
            def(
                "audience",
                json!({"condition": {"computed_trait": {"key": "orders", "op": "gt", "value": 1}}}),
            ),
        ),
        (
            "readers",
            def(
                "audience",
                json!({"condition": {"performed": {"type": "page"}}}),
            ),
        ),
        (
            "no_refund",
            def(
                "audience",
                json!({"condition": {"not_performed": {"event": "Refund"}}}),
            ),
        ),
    ]
}

fn index(defs: &[(&'static str, Definition)]) -> Index {
    let refs: Vec<(&str, &Definition)> = defs.iter().map(|(k, d)| (*k, d)).collect();
    Index::new(&refs, 0)
}

#[test]
fn an_event_reaches_only_the_definitions_reading_its_name_and_their_dependents() {
    let defs = sample();
    let index = index(&defs);
    assert_eq!(index.candidates(&event("track", Some("Order"))), [0, 3]);
    assert_eq!(index.candidates(&event("track", Some("Signup"))), [1]);
    assert_eq!(index.candidates(&event("track", Some("Refund"))), [5]);
    assert!(index.candidates(&event("track", Some("Other"))).is_empty());
    assert_eq!(
        index.candidates(&event("page", Some("Home"))),
        [4],
        "any page"
    );
}

#[test]
fn a_trait_reaches_the_audiences_comparing_it() {
    let defs = sample();
    let index = index(&defs);
    let plan = Touched {
        traits: BTreeSet::from(["plan".to_owned()]),
        ..Touched::default()
    };
    assert_eq!(index.candidates(&plan), [2]);
    let other = Touched {
        traits: BTreeSet::from(["age".to_owned()]),
        ..Touched::default()
    };
    assert!(index.candidates(&other).is_empty());
}

#[test]
fn a_new_person_also_gets_the_definitions_that_hold_for_nobody_in_particular() {
    let defs = sample();
    let index = index(&defs);
    assert_eq!(index.vacuous_count(), 1, "not_performed Refund");
    let mut new = event("track", Some("Signup"));
    new.vacuous = true;
    assert_eq!(index.candidates(&new), [1, 5]);
}

#[test]
fn an_evaluated_audience_brings_the_definitions_it_refers_to() {
    let defs = sample();
    let index = index(&defs);
    assert_eq!(index.with_upstream(3), [0, 3]);
    assert_eq!(index.with_upstream(1), [1]);
}

#[test]
fn everything_a_person_has_is_reached_when_all_is_asked() {
    let defs = sample();
    let index = index(&defs);
    let mut p = Profile::default();
    p.traits.insert("plan".into(), json!("pro"));
    p.events.push(crate::profile::ProfileEvent {
        seq: 1,
        source_id: "s".into(),
        kind: "track".into(),
        name: Some("Order".into()),
        ts: 0,
        properties: serde_json::Map::new(),
        message_hash: None,
    });
    let mut t = Touched {
        all: true,
        ..Touched::default()
    };
    t.expand(&p);
    assert_eq!(index.candidates(&t), [0, 2, 3]);
}
