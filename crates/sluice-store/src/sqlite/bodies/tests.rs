use rusqlite::Connection;
use sha2::{Digest, Sha256};

use super::*;

const CALL: &str = r#"{"type":"track","messageId":"0b8a4c3e-6f1d-4d0e-9d55-2f8f7c1a9e21","anonymousId":"a1b2c3","userId":"u-42","event":"Product Viewed","properties":{"product_id":"507f1f77","sku":"G-32","category":"Games","name":"Monopoly: 3rd Edition","brand":"Hasbro","price":18.99,"quantity":1,"currency":"USD"},"context":{"library":{"name":"analytics-python","version":"2.3.2"},"ip":"198.51.100.7","locale":"de-DE"},"timestamp":"2026-03-01T10:11:12.345Z","receivedAt":"2026-03-01T10:11:12.400Z","originalTimestamp":"2026-03-01T10:11:12.345Z","sentAt":"2026-03-01T10:11:12.300Z"}"#;

#[test]
fn the_dictionary_is_part_of_the_file_format() {
    // Blobs on disk expand against these exact bytes: changing them would
    // corrupt every stored body. Add a new format byte instead.
    assert_eq!(
        hex::encode(Sha256::digest(DICTIONARY_V1)),
        "b7f551e740cf5eaaf2eacd0bc9b539070b325e72a0422a129c05acb79b8b39aa"
    );
}

#[test]
fn a_typical_call_is_stored_in_well_under_half_its_size() {
    let blob = encode(CALL).unwrap();
    assert_eq!(blob[0], FORMAT_LZ4_V1);
    assert!(
        blob.len() * 2 < CALL.len(),
        "{} of {}",
        blob.len(),
        CALL.len()
    );
    assert_eq!(decode(&blob).unwrap(), CALL);
}

#[test]
fn bodies_the_dictionary_cannot_shrink_stay_text() {
    assert_eq!(encode(r#"{"type":"purged"}"#), None);
    // Distinct digits in base 36: nothing repeats and nothing is in the
    // dictionary.
    let noise: String = (0u64..200)
        .map(|i| {
            let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            char::from_digit(u32::try_from(x % 36).unwrap(), 36).unwrap()
        })
        .collect();
    assert_eq!(encode(&format!("\"{noise}\"")), None);
}

#[test]
fn every_body_comes_back_byte_for_byte() {
    let mut cases = vec![
        CALL.repeat(40),
        format!(
            r#"{{"type":"identify","traits":{{"name":"Zoë ✓ 名前","bio":"{}"}}}}"#,
            "é".repeat(300)
        ),
        "x".repeat(70),
    ];
    for cut in [64, 100, 333, CALL.len() - 1] {
        cases.push(CALL[..cut].to_owned());
    }
    for case in cases {
        match encode(&case) {
            Some(blob) => assert_eq!(decode(&blob).unwrap(), case),
            None => assert!(case.len() < 200, "{} bytes not compressed", case.len()),
        }
    }
}

#[test]
fn a_blob_written_by_this_version_still_decodes() {
    // Pins the block format as well as the dictionary: a library upgrade
    // that wrote or read LZ4 differently fails here, not on customer data.
    let stored = hex::decode(PINNED_BLOB).unwrap();
    assert_eq!(decode(&stored).unwrap(), PINNED_JSON);
}

const PINNED_JSON: &str = r#"{"type":"page","name":"Home","properties":{"path":"/","url":"https://www.example.com/"},"context":{"library":{"name":"analytics.js","version":"next-1.70.0"}},"timestamp":"2026-01-02T03:04:05.678Z"}"#;
const PINNED_BLOB: &str = "01c501147b27080ac90830486f6d19050fbf08060a8102947777772e6578616d70bb0800090600c805025f060fd104080f3f05044237302e30660909cb00f00932362d30312d30325430333a30343a30352e3637385a227d";

#[test]
fn damaged_blobs_are_errors_not_bodies() {
    let blob = encode(CALL).unwrap();
    assert!(matches!(decode(&[]), Err(BodyError::Corrupt)));
    assert!(matches!(decode(&[9, 1, 2]), Err(BodyError::Format(9))));
    assert!(matches!(
        decode(&blob[..blob.len() - 5]),
        Err(BodyError::Corrupt)
    ));
    let mut longer = blob.clone();
    longer[1] = longer[1].wrapping_add(1);
    assert!(decode(&longer).is_err());
    assert!(matches!(
        decode(&[FORMAT_LZ4_V1, 0xff, 0xff, 0xff, 0x7f]),
        Err(BodyError::Corrupt)
    ));
    assert!(matches!(
        decode(&[FORMAT_LZ4_V1, 0x80, 0x80]),
        Err(BodyError::Corrupt)
    ));
}

#[test]
fn sql_reads_either_form_through_body_json() {
    let conn = Connection::open_in_memory().unwrap();
    register(&conn).unwrap();
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body)")
        .unwrap();
    let blob = encode(CALL).unwrap();
    conn.execute("INSERT INTO t (id, body) VALUES (1, ?1)", [&blob])
        .unwrap();
    conn.execute(
        "INSERT INTO t (id, body) VALUES (2, ?1)",
        [r#"{"userId":"plain"}"#],
    )
    .unwrap();
    conn.execute("INSERT INTO t (id, body) VALUES (3, NULL)", [])
        .unwrap();
    let users: Vec<Option<String>> = conn
        .prepare("SELECT json_extract(body_json(body), '$.userId') FROM t ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        users,
        [Some("u-42".to_owned()), Some("plain".to_owned()), None]
    );
    let read_back: String = conn
        .query_row("SELECT body FROM t WHERE id = 1", [], |r| read(r, 0))
        .unwrap();
    assert_eq!(read_back, CALL);
    conn.execute("INSERT INTO t (id, body) VALUES (4, x'0901')", [])
        .unwrap();
    assert!(
        conn.query_row("SELECT body_json(body) FROM t WHERE id = 4", [], |r| {
            r.get::<_, String>(0)
        })
        .is_err()
    );
}
