use super::*;

fn at(line: u64) -> LineRef {
    LineRef { input: 0, line }
}

fn item(line: u64, text: &str) -> Item {
    Item {
        at: at(line),
        text: text.into(),
    }
}

#[test]
fn a_line_with_a_message_id_is_sent_byte_for_byte() {
    let line = r#"{"type":"track","messageId":"m1","n":1.50,"timestamp":"2015-01-01T00:00:00Z"}"#;
    let got = prepare(at(3), &format!("  {line}\r\n")).unwrap().unwrap();
    assert_eq!(got.text, line);
}

#[test]
fn a_line_without_message_id_gets_a_stable_one_appended_last() {
    let line = r#"{"type":"track","event":"A"}"#;
    let first = prepare(at(7), line).unwrap().unwrap();
    let again = prepare(at(7), line).unwrap().unwrap();
    let other_line = prepare(at(8), line).unwrap().unwrap();
    assert_eq!(first, again);
    assert_ne!(first.text, other_line.text);
    let v: serde_json::Value = serde_json::from_str(&first.text).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "event", "messageId"]);
    assert!(v["messageId"].as_str().unwrap().starts_with("import-"));
    let empty = prepare(at(1), "{ }").unwrap().unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&empty.text).is_ok());
}

#[test]
fn blank_lines_are_skipped_and_non_objects_rejected_locally() {
    assert_eq!(prepare(at(1), "   \r\n").unwrap(), None);
    assert_eq!(prepare(at(1), "[1]").unwrap_err().code, "invalid_json");
    assert_eq!(prepare(at(1), "{\"a\":").unwrap_err().code, "invalid_json");
}

#[test]
fn packer_closes_a_batch_before_the_byte_limit() {
    let mut p = Packer::new(Limits {
        max_body_bytes: FRAME + 10,
        max_items: 100,
    });
    assert!(p.push(item(1, "{\"a\":1}")).is_none()); // 7 bytes
    let closed = p.push(item(2, "{\"b\":2}")).expect("7 + 1 + 7 is over 10");
    assert_eq!(closed.len(), 1);
    let rest = p.take();
    assert_eq!(rest.len(), 1);
    assert!(body(&closed).len() <= FRAME + 10);
}

#[test]
fn packer_closes_a_batch_at_the_item_limit_and_body_is_exact() {
    let mut p = Packer::new(Limits {
        max_body_bytes: 1 << 20,
        max_items: 2,
    });
    assert!(p.push(item(1, "{}")).is_none());
    assert!(p.push(item(2, "{\"x\":1}")).is_none());
    let closed = p.push(item(3, "{}")).expect("third item closes");
    assert_eq!(body(&closed), br#"{"batch":[{},{"x":1}]}"#);
    assert_eq!(body(&closed).len(), FRAME + 2 + 1 + 7);
}

#[test]
fn an_oversized_item_travels_alone() {
    let mut p = Packer::new(Limits {
        max_body_bytes: FRAME + 4,
        max_items: 10,
    });
    assert!(p.push(item(1, "{}")).is_none());
    let closed = p.push(item(2, "{\"big\":true}")).unwrap();
    assert_eq!(closed[0].at.line, 1);
    let closed = p.push(item(3, "{}")).unwrap();
    assert_eq!(closed[0].at.line, 2);
}

#[test]
fn blamed_item_reads_the_index_and_strips_the_prefix() {
    assert_eq!(
        blamed_item("batch[12]: track requires 'event'"),
        Some((12, "track requires 'event'"))
    );
    assert_eq!(blamed_item("request body exceeds 512000 bytes"), None);
    assert_eq!(blamed_item("batch[x]: nope"), None);
}
