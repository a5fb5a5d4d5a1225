use super::*;
use std::collections::HashMap;

fn shape(body: &str) -> Shape {
    Shape::of(body, "track")
}

#[test]
fn aggregates_names_properties_and_traits() {
    let t = Tracker::new(100);
    let shapes = [
        shape(r#"{"type":"track","event":"Buy","properties":{"total":1}}"#),
        shape(r#"{"type":"track","event":"Buy","properties":{"total":"1"}}"#),
        shape(r#"{"type":"page","name":"Home"}"#),
        shape(r#"{"type":"identify","traits":{"email":"x"}}"#),
        shape(r#"{"type":"group","traits":{"plan":"p"}}"#),
    ];
    t.observe("s1", &shapes, 10);
    t.observe("s1", &shapes[..1], 5);
    let taken = t.take();
    assert_eq!(taken.len(), 1);
    let delta = &taken[0].1;
    let find = |k: EntryKind, n: &str| {
        delta
            .entries
            .iter()
            .find(|e| e.kind == k && e.name == n)
            .cloned()
    };
    let buy = find(EntryKind::Track, "Buy").unwrap();
    assert_eq!((buy.count, buy.first_ms, buy.last_ms), (3, 5, 10));
    let total = find(EntryKind::Property, "Buy").unwrap();
    assert_eq!(total.property, "total");
    assert_eq!(crate::JsonType::names(total.types), ["number", "string"]);
    assert!(find(EntryKind::Page, "Home").is_some());
    assert!(find(EntryKind::IdentifyTrait, "email").is_some());
    assert!(find(EntryKind::GroupTrait, "plan").is_some());
    assert!(t.take().is_empty());
}

#[test]
fn cap_counts_overflow_instead_of_growing() {
    let t = Tracker::new(3);
    let shapes: Vec<Shape> = (0..10)
        .map(|i| shape(&format!(r#"{{"type":"track","event":"E{i}"}}"#)))
        .collect();
    t.observe("s", &shapes, 1);
    t.observe("s", &shapes[..1], 2);
    let taken = t.take();
    assert_eq!(taken[0].1.entries.len(), 3);
    assert_eq!(taken[0].1.overflow, 7);
    assert_eq!(taken[0].1.entries[0].count, 2);
}

#[test]
fn memory_estimate_grows_with_entries_and_stops_at_the_cap() {
    let t = Tracker::new(50);
    let empty = t.approx_bytes();
    let shapes: Vec<Shape> = (0..200)
        .map(|i| shape(&format!(r#"{{"type":"track","event":"Event number {i}"}}"#)))
        .collect();
    t.observe("s", &shapes[..50], 1);
    let at_cap = t.approx_bytes();
    assert!(at_cap > empty);
    t.observe("s", &shapes, 1);
    assert_eq!(t.approx_bytes(), at_cap);
}

#[test]
fn shards_written_by_several_threads_merge_under_the_cap() {
    let t = Tracker::new(4);
    let shapes: Vec<Shape> = (0..6)
        .map(|i| shape(&format!(r#"{{"type":"track","event":"E{i}"}}"#)))
        .collect();
    // Hold every shard but one at a time, so each observation lands in
    // a different shard.
    for held in 0..SHARDS {
        let _guards: Vec<_> = (0..SHARDS)
            .filter(|&i| i != held)
            .map(|i| t.shards[i].lock().unwrap())
            .collect();
        std::thread::scope(|s| {
            s.spawn(|| t.observe("s", &shapes[held..held + 3], held as i64));
        });
    }
    let taken = t.take();
    let delta = &taken[0].1;
    let total: u64 = delta.entries.iter().map(|e| e.count).sum();
    assert_eq!(delta.entries.len(), 4);
    assert_eq!(total + delta.overflow, 3 * SHARDS as u64);
    let e0 = delta.entries.iter().find(|e| e.name == "E1").unwrap();
    assert_eq!((e0.count, e0.first_ms, e0.last_ms), (2, 0, 1));
    assert!(t.take().is_empty());
}

#[test]
fn kinds_round_trip() {
    for k in EntryKind::ALL {
        assert_eq!(EntryKind::parse(k.as_str()), Some(k));
    }
}

/// The aggregate as a sorted list, for comparing two trackers.
fn sorted(t: &Tracker) -> Vec<(String, Vec<EntryDelta>, u64)> {
    let mut taken: Vec<(String, Vec<EntryDelta>, u64)> = t
        .take()
        .into_iter()
        .map(|(id, mut d)| {
            d.entries.sort_by(|a, b| {
                (a.kind as u8, &a.name, &a.property).cmp(&(b.kind as u8, &b.name, &b.property))
            });
            (id, d.entries, d.overflow)
        })
        .collect();
    taken.sort_by(|a, b| a.0.cmp(&b.0));
    taken
}

#[test]
fn repeated_calls_in_one_request_count_as_if_observed_one_by_one() {
    let shapes = [
        shape(r#"{"type":"track","event":"Buy","properties":{"total":1,"sku":"a"}}"#),
        shape(r#"{"type":"track","event":"Buy","properties":{"total":"1","sku":null}}"#),
        shape(r#"{"type":"track","event":"Buy","properties":{"sku":"a","total":1}}"#),
        shape(r#"{"type":"track","event":"Buy","properties":{"total":1}}"#),
        shape(r#"{"type":"identify","traits":{"email":"x"}}"#),
        shape(r#"{"type":"identify","traits":{"email":1}}"#),
        shape(r#"{"type":"page","name":"Home"}"#),
        shape(r#"{"type":"page","name":"Home"}"#),
        shape(r#"{"type":"track","event":"Buy","properties":{"total":1,"sku":"a"}}"#),
    ];
    for cap in [100, 3] {
        let together = Tracker::new(cap);
        together.observe("s", &shapes, 7);
        let alone = Tracker::new(cap);
        for s in &shapes {
            alone.observe("s", [s], 7);
        }
        assert_eq!(sorted(&together), sorted(&alone), "cap {cap}");
    }
    let t = Tracker::new(100);
    t.observe("s", &shapes[..3], 7);
    let taken = sorted(&t);
    let total = taken[0].1.iter().find(|e| e.property == "total").unwrap();
    assert_eq!(total.count, 3);
    assert_eq!(crate::JsonType::names(total.types), ["number", "string"]);
}

/// (kind, name, property) → (type bits, count, first, last).
type Naive = HashMap<(u8, String, String), (u8, u64, i64, i64)>;

#[test]
fn remembered_shapes_count_as_if_every_key_were_looked_up() {
    let bodies = [
        r#"{"type":"track","event":"Buy","properties":{"total":1,"sku":"a"}}"#,
        r#"{"type":"track","event":"Buy","properties":{"total":"1","sku":null}}"#,
        r#"{"type":"track","event":"Buy","properties":{"sku":"a","total":1}}"#,
        r#"{"type":"track","event":"View","properties":{"total":1,"sku":"a"}}"#,
        r#"{"type":"identify","traits":{"email":"x"}}"#,
        r#"{"type":"group","traits":{"email":"x"}}"#,
        r#"{"type":"page","name":"Home"}"#,
    ];
    let t = Tracker::new(1000);
    // What each call adds, looked up key by key.
    let mut expected = Naive::new();
    for round in 0..5i64 {
        for (i, body) in bodies.iter().enumerate() {
            let at = round * 10 + i as i64;
            let s = shape(body);
            t.observe("s", [&s], at);
            super::pending::observations_for_tests(&s, |kind, name, property, types| {
                let e = expected
                    .entry((kind as u8, name.to_owned(), property.to_owned()))
                    .or_insert((0, 0, at, at));
                e.0 |= types;
                e.1 += 1;
                e.2 = e.2.min(at);
                e.3 = e.3.max(at);
            });
        }
    }
    let got: Naive = t
        .take()
        .remove(0)
        .1
        .entries
        .into_iter()
        .map(|e| {
            (
                (e.kind as u8, e.name, e.property),
                (e.types, e.count, e.first_ms, e.last_ms),
            )
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn remembering_shapes_holds_at_most_one_index_per_entry() {
    // Many shapes over the same few entries: each key subset of 8 properties.
    let t = Tracker::new(10_000);
    let shapes: Vec<Shape> = (1u32..256)
        .map(|mask| {
            let props: Vec<String> = (0..8)
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| format!(r#""p{b}":1"#))
                .collect();
            shape(&format!(
                r#"{{"type":"track","event":"E","properties":{{{}}}}}"#,
                props.join(",")
            ))
        })
        .collect();
    for s in &shapes {
        t.observe("s", [s], 1);
    }
    let guards: Vec<_> = t.shards.iter().map(|s| s.lock().unwrap()).collect();
    for shard in &guards {
        if let Some(p) = shard.get("s") {
            assert!(p.known_indices() <= p.delta.entries.len());
        }
    }
}
