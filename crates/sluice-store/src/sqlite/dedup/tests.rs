use std::time::Duration;

use rusqlite::{Connection, params};

use super::{Window, is_duplicate, rebuild};
use crate::sqlite::schema::MIGRATIONS;

const HOUR: i64 = 3_600_000;

fn day_window() -> Window {
    Window::new(Duration::from_secs(24 * 3600))
}

#[test]
fn an_id_is_remembered_for_the_window_and_forgotten_after() {
    let mut w = day_window();
    let key = w.key("src", "m1");
    w.insert(key, 10 * HOUR, 7);
    w.commit();
    w.expire(10 * HOUR + 24 * HOUR - 1);
    assert_eq!(w.seqs_of(key), Some((7, 7)));
    // One generation (an hour) later than the window, it is gone.
    w.expire(10 * HOUR + 25 * HOUR);
    assert_eq!(w.seqs_of(key), None);
    assert_eq!(w.len(), 0);
}

#[test]
fn the_same_message_id_of_another_source_is_another_key() {
    let w = day_window();
    assert_ne!(w.key("src_a", "m1"), w.key("src_b", "m1"));
    assert_ne!(w.key("ab", "c"), w.key("a", "bc"));
}

#[test]
fn undo_takes_out_only_what_was_inserted_since_the_mark() {
    let mut w = day_window();
    let (a, b) = (w.key("s", "a"), w.key("s", "b"));
    w.insert(a, HOUR, 1);
    let mark = w.mark();
    w.insert(b, HOUR, 2);
    // Inserting a key already present is not journaled twice: undoing the
    // second insert must not take out the first.
    w.insert(a, HOUR, 3);
    w.undo_to(mark);
    assert!(w.seqs_of(a).is_some());
    assert_eq!(w.seqs_of(b), None);
    w.undo_to(0);
    assert_eq!(w.seqs_of(a), None);
}

#[test]
fn committed_keys_survive_a_later_undo() {
    let mut w = day_window();
    let a = w.key("s", "a");
    w.insert(a, HOUR, 1);
    w.commit();
    w.undo_to(0);
    assert!(w.seqs_of(a).is_some());
}

#[test]
fn out_of_order_receive_times_land_in_their_own_generations() {
    let mut w = day_window();
    let (a, b) = (w.key("s", "a"), w.key("s", "b"));
    w.insert(a, 5 * HOUR, 10);
    w.insert(b, 3 * HOUR, 11);
    assert_eq!(w.seqs_of(a), Some((10, 10)));
    assert_eq!(w.seqs_of(b), Some((11, 11)));
    w.expire(3 * HOUR + 25 * HOUR);
    assert_eq!(w.seqs_of(b), None);
    assert!(w.seqs_of(a).is_some());
}

#[test]
fn memory_is_about_ten_bytes_an_id() {
    let mut w = day_window();
    for i in 0..100_000i64 {
        let key = w.key("src", &format!("m-{i}"));
        w.insert(key, (i % 24) * HOUR, i);
    }
    assert_eq!(w.len(), 100_000);
    let per_id = w.bytes() as f64 / 100_000.0;
    assert!((9.0..25.0).contains(&per_id), "{per_id} bytes per id");
}

#[test]
fn a_new_slice_is_sized_like_the_one_before_it() {
    let mut w = day_window();
    for i in 0..50_000i64 {
        let key = w.key("src", &format!("m-{i}"));
        w.insert(key, HOUR, i);
    }
    let before = w.bytes();
    // The first id of the next hour: its table is made for 50,000 ids at
    // once, not grown from empty (which would take 13 rehashes).
    let key = w.key("src", "next-hour");
    w.insert(key, 2 * HOUR, 50_000);
    let second = w.bytes() - before;
    assert!(second >= 50_000 * 9, "the new slice holds {second} bytes");
}

fn store() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    MIGRATIONS.to_latest(&mut conn).unwrap();
    conn
}

fn insert(conn: &Connection, source: &str, message_id: &str, at: i64) -> i64 {
    conn.prepare_cached(
        "INSERT INTO events (source_id, message_id, event_type, received_at, body)
         VALUES (?1, ?2, 'track', ?3, '{}')",
    )
    .unwrap()
    .insert(params![source, message_id, at])
    .unwrap()
}

#[test]
fn a_hash_hit_without_the_stored_event_is_not_a_duplicate() {
    let conn = store();
    let mut w = day_window();
    let seq = insert(&conn, "src", "m1", HOUR);
    let key = w.key("src", "m1");
    w.insert(key, HOUR, seq);
    assert!(is_duplicate(&conn, &w, key, "src", "m1").unwrap());
    // A collision: another id under the same key finds no such event.
    assert!(!is_duplicate(&conn, &w, key, "src", "m2").unwrap());
    assert!(!is_duplicate(&conn, &w, key, "other", "m1").unwrap());
    // A purged (rewritten) event is no longer there to be a duplicate of.
    conn.execute(
        "UPDATE events SET message_id = 'gone' WHERE seq = ?1",
        [seq],
    )
    .unwrap();
    assert!(!is_duplicate(&conn, &w, key, "src", "m1").unwrap());
}

#[test]
fn rebuild_reads_the_events_inside_the_window_only() {
    let conn = store();
    let now = 100 * HOUR;
    insert(&conn, "src", "old", now - 30 * HOUR);
    for i in 0..5000 {
        insert(&conn, "src", &format!("m-{i}"), now - 2 * HOUR);
    }
    super::super::message_ids::after_append(&conn, 1, 5001).unwrap();
    let mut w = day_window();
    rebuild(&conn, &mut w, now).unwrap();
    assert_eq!(w.len(), 5000);
    let key = w.key("src", "m-4321");
    assert!(is_duplicate(&conn, &w, key, "src", "m-4321").unwrap());
    assert_eq!(w.seqs_of(w.key("src", "old")), None);
}
