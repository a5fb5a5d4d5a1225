use serde_json::{Map, Value, json};

use super::{BatchObject, MAX_DEPTH, Own, depth};

fn object(value: Value) -> BatchObject {
    match value {
        Value::Object(map) => BatchObject::new(map),
        other => panic!("not an object: {other}"),
    }
}

fn compact(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

#[test]
fn batch_object_length_is_its_compact_json_even_when_numbers_grow() {
    for value in [
        json!({}),
        json!({"a": 1}),
        json!({"lib": {"name": "go", "v": [1, 2]}, "n": 1e2, "s": "q\"\\\n\u{1}é"}),
        serde_json::from_str::<Value>(r#"{ "x" : 1E15 , "\u00e9" : "\u0041" }"#)
            .unwrap_or_default(),
    ] {
        assert_eq!(object(value.clone()).json_len, compact(&value), "{value}");
    }
}

#[test]
fn depth_counts_objects_and_arrays_not_scalars() {
    assert_eq!(depth(&json!(1)), 0);
    assert_eq!(depth(&json!({})), 1);
    assert_eq!(depth(&json!([[], {"a": [1]}])), 3);
    assert_eq!(object(json!({"a": 1, "b": [[2]]})).depth, 2);
}

#[test]
fn absent_key_adds_the_whole_object_under_its_key() {
    let batch = object(json!({"library": {"name": "go"}}));
    let added = batch.added("context", &Own::Absent);
    let text = r#","context":{"library":{"name":"go"}}"#;
    assert_eq!(
        (added.bytes, added.removed, added.depth),
        (text.len(), 0, 1)
    );
}

#[test]
fn null_own_value_is_replaced_by_the_object() {
    let batch = object(json!({"a": "b"}));
    let added = batch.added("context", &Own::Null);
    assert_eq!((added.bytes, added.removed), (r#"{"a":"b"}"#.len(), 4));
}

#[test]
fn own_object_adds_only_the_members_it_lacks() {
    let batch = object(json!({"big": "x".repeat(100), "small": 1, "deep": [[[]]]}));
    let has = |k: &str| k == "big";
    let added = batch.added("context", &Own::Object { len: 1, has: &has });
    assert_eq!(added.bytes, r#","small":1,"deep":[[[]]]"#.len());
    assert_eq!((added.removed, added.depth), (0, 3));
    let has = |k: &str| k == "big" || k == "deep";
    let added = batch.added("context", &Own::Object { len: 2, has: &has });
    assert_eq!((added.bytes, added.depth), (r#","small":1"#.len(), 0));
}

#[test]
fn empty_own_object_takes_the_first_member_without_a_comma() {
    let batch = object(json!({"a": 1, "b": 2}));
    let has = |_: &str| false;
    let added = batch.added("context", &Own::Object { len: 0, has: &has });
    assert_eq!(added.bytes - added.removed, r#""a":1,"b":2"#.len());
    let empty = BatchObject::new(Map::new());
    let added = empty.added("context", &Own::Object { len: 0, has: &has });
    assert_eq!((added.bytes, added.removed), (0, 0));
}

#[test]
fn member_depth_limit_leaves_room_for_the_item_and_its_context() {
    assert_eq!(MAX_DEPTH, 127);
    assert_eq!(super::MAX_MEMBER_DEPTH, 125);
}
