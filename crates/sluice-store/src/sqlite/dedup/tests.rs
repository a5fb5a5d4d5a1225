use std::time::Duration;

use rusqlite::{Connection, params};

use super::{Window, is_duplicate, rebuild};
use crate::sqlite::schema::MIGRATIONS;

pub(super) const HOUR: i64 = 3_600_000;

/// A day's window with fixed hash keys. Fingerprints are short, so with
/// keys drawn at random two of the many ids some tests insert share one
/// now and then (by design: the store confirms every hit), and their exact
/// counts would be off by one in those runs.
pub(super) fn day_window() -> Window {
    Window::with_keys(
        Duration::from_secs(24 * 3600),
        (0x736c_7569_6365_2d31, 0x6465_6475_702d_7431),
    )
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
fn a_reserved_window_holds_about_five_bytes_an_id() {
    let mut w = day_window();
    w.reserve(1_000_000);
    for i in 0..1_000_000i64 {
        let key = w.key("src", &format!("m-{i}"));
        w.insert(key, (i % 24) * HOUR, i);
        if i % 10_000 == 0 {
            w.commit();
        }
    }
    w.commit();
    assert_eq!(w.len(), 1_000_000);
    assert_eq!(w.tables(), 1, "the reserved table held them all");
    let per_id = w.bytes() as f64 / 1_000_000.0;
    assert!((4.0..5.5).contains(&per_id), "{per_id} bytes per id");
}

#[test]
fn a_full_table_gets_a_larger_one_beside_it_until_its_generations_expire() {
    let mut w = day_window();
    let keys: Vec<u64> = (0..100_000)
        .map(|i| w.key("src", &format!("m-{i}")))
        .collect();
    for (i, &key) in keys.iter().enumerate() {
        w.insert(key, HOUR, i as i64);
        w.commit();
    }
    assert!(w.tables() > 1, "grown from the smallest table");
    assert_eq!(w.len(), 100_000);
    assert!(keys.iter().all(|&k| w.seqs_of(k).is_some()));
    // A day later the first hour's ids are gone, and with them every table
    // but the newest.
    let late = w.key("src", "late");
    w.insert(late, 20 * HOUR, 100_000);
    w.expire(HOUR + 25 * HOUR);
    assert_eq!(w.tables(), 1);
    assert_eq!(w.len(), 1);
    assert!(keys.iter().all(|&k| w.seqs_of(k).is_none()));
    assert!(w.seqs_of(late).is_some());
}

#[test]
fn ids_of_many_days_of_steady_traffic_recycle_the_tags_and_the_table() {
    let mut w = day_window();
    let mut seq = 0;
    let per_hour = 2_000;
    for hour in 0..24 * 6 {
        for i in 0..per_hour {
            let at = hour * HOUR + i * (HOUR / per_hour);
            w.expire(at);
            w.insert(w.key("src", &format!("{hour}-{i}")), at, seq);
            w.commit();
            seq += 1;
        }
    }
    // 24 full hours and the current one.
    assert_eq!(w.len(), 25 * per_hour as usize);
    let last = 24 * 6 - 1;
    assert!(w.seqs_of(w.key("src", &format!("{last}-0"))).is_some());
    assert!(
        w.seqs_of(w.key("src", &format!("{}-0", last - 24)))
            .is_some()
    );
    assert!(
        w.seqs_of(w.key("src", &format!("{}-0", last - 25)))
            .is_none()
    );
    assert!(w.tables() <= 2, "{} tables", w.tables());
    assert!(
        w.bytes() < 25 * per_hour as usize * 12,
        "{} bytes",
        w.bytes()
    );
}

#[test]
fn after_traffic_falls_the_window_moves_to_a_smaller_table() {
    let mut w = day_window();
    w.reserve(1_000_000);
    let big = w.bytes();
    let mut seq = 0;
    for hour in 0..24 * 3 {
        for i in 0..10 {
            let at = hour * HOUR + i;
            w.expire(at);
            w.insert(w.key("src", &format!("{hour}-{i}")), at, seq);
            w.commit();
            seq += 1;
        }
    }
    assert_eq!(w.tables(), 1);
    assert!(w.bytes() < big / 8, "{} bytes, {big} reserved", w.bytes());
    assert!(w.seqs_of(w.key("src", "71-9")).is_some());
}

#[test]
fn a_clock_jumping_over_more_slices_than_tags_still_finds_every_id() {
    let mut w = day_window();
    let keys: Vec<u64> = (0..40).map(|i| w.key("src", &format!("m-{i}"))).collect();
    for (i, &key) in keys.iter().enumerate() {
        // Forty different hours, none expired: a clock that went back.
        w.insert(key, (40 - i as i64) * HOUR, i as i64);
    }
    w.commit();
    assert!(keys.iter().all(|&k| w.seqs_of(k).is_some()));
    assert_eq!(w.len(), 40);
}

#[test]
fn a_fingerprint_shared_by_another_key_is_a_possible_hit() {
    let mut w = day_window();
    let key = w.key("src", "m1");
    w.insert(key, HOUR, 7);
    // The low bits are the tag's: a key differing only there has the same
    // buckets and fingerprint, and is confirmed against the events.
    assert_eq!(w.seqs_of(key ^ 1), Some((7, 7)));
    // Another fingerprint in the same buckets is no hit.
    assert_eq!(w.seqs_of(key ^ (1 << 20)), None);
}

#[test]
fn undo_reaches_into_the_table_a_key_went_to_before_growth() {
    let mut w = day_window();
    let first = w.key("src", "first");
    w.insert(first, HOUR, 0);
    let mark = w.mark();
    for i in 1..20_000 {
        w.insert(w.key("src", &format!("m-{i}")), HOUR, i);
    }
    assert!(w.tables() > 1);
    w.undo_to(mark);
    assert_eq!(w.len(), 1);
    assert!(w.seqs_of(first).is_some());
    assert!(w.seqs_of(w.key("src", "m-7")).is_none());
}

pub(super) fn store() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    MIGRATIONS.to_latest(&mut conn).unwrap();
    conn
}

pub(super) fn insert(conn: &Connection, source: &str, message_id: &str, at: i64) -> i64 {
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
    // A purged event is emptied into a tombstone when it is the newest
    // (`tombstones.rs`) and deleted otherwise: neither is a duplicate.
    let later = insert(&conn, "src", "m2", HOUR);
    let later_key = w.key("src", "m2");
    w.insert(later_key, HOUR, later);
    crate::sqlite::tombstones::delete_event(&conn, later).unwrap();
    crate::sqlite::tombstones::delete_event(&conn, seq).unwrap();
    assert!(!is_duplicate(&conn, &w, key, "src", "m1").unwrap());
    assert!(!is_duplicate(&conn, &w, later_key, "src", "m2").unwrap());
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
    rebuild(&conn, &mut w, now, None).unwrap();
    assert_eq!(w.len(), 5000);
    let key = w.key("src", "m-4321");
    assert!(is_duplicate(&conn, &w, key, "src", "m-4321").unwrap());
    assert_eq!(w.seqs_of(w.key("src", "old")), None);
}
