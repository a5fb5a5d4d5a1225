use rusqlite::{Connection, params};

use super::{BLOCK, after_append, catch_up, forget_pruned, seqs};
use crate::sqlite::schema::MIGRATIONS;

fn store() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    MIGRATIONS.to_latest(&mut conn).unwrap();
    conn
}

/// Appends events with the given message ids as ingest does; returns the
/// first and last seq.
fn append(conn: &Connection, ids: &[String]) -> (i64, i64) {
    let mut insert = conn
        .prepare(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES ('src', ?1, 'track', 0, '{}')",
        )
        .unwrap();
    let seqs: Vec<i64> = ids.iter().map(|m| insert.insert([m]).unwrap()).collect();
    (seqs[0], seqs[seqs.len() - 1])
}

fn ingest(conn: &Connection, ids: &[String]) {
    let (first, last) = append(conn, ids);
    after_append(conn, first, last).unwrap();
}

fn ids(range: std::ops::Range<i64>) -> Vec<String> {
    range.map(|i| format!("m-{i}")).collect()
}

fn filtered_blocks(conn: &Connection) -> Vec<i64> {
    let mut stmt = conn
        .prepare("SELECT block FROM event_blooms ORDER BY block")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn finds_events_in_filtered_blocks_and_above_them() {
    let conn = store();
    // Seqs 1..=10000: blocks 0 and 1 complete, block 2 open.
    ingest(&conn, &ids(1..10_001));
    assert_eq!(filtered_blocks(&conn), [0, 1]);
    assert_eq!(seqs(&conn, "m-5").unwrap(), [5]);
    assert_eq!(seqs(&conn, "m-4096").unwrap(), [4096]);
    assert_eq!(
        seqs(&conn, "m-9999").unwrap(),
        [9999],
        "above the last filter"
    );
    assert!(seqs(&conn, "m-10001").unwrap().is_empty());
    assert!(seqs(&conn, "never-sent").unwrap().is_empty());
}

#[test]
fn finds_every_event_that_shares_a_message_id() {
    let conn = store();
    ingest(&conn, &ids(1..3));
    ingest(&conn, &ids(3..9_000));
    ingest(&conn, &["m-1".to_owned()]);
    ingest(&conn, &["m-1".to_owned()]);
    assert_eq!(seqs(&conn, "m-1").unwrap(), [1, 9_000, 9_001]);
}

#[test]
fn writes_a_block_filter_only_once_the_block_is_complete() {
    let conn = store();
    ingest(&conn, &ids(1..BLOCK));
    assert!(
        filtered_blocks(&conn).is_empty(),
        "seq {} not yet taken",
        BLOCK
    );
    ingest(&conn, &ids(BLOCK..BLOCK + 1));
    assert_eq!(filtered_blocks(&conn), [0]);
    assert_eq!(seqs(&conn, "m-7").unwrap(), [7]);
}

#[test]
fn catches_up_on_blocks_other_writers_completed() {
    let mut conn = store();
    // The profile engine's inserts do not check for complete blocks.
    append(&conn, &ids(1..3 * BLOCK + 10));
    assert!(filtered_blocks(&conn).is_empty());
    catch_up(&mut conn).unwrap();
    assert_eq!(filtered_blocks(&conn), [0, 1, 2]);
    // The next append that completes a block fills in from the last filter.
    append(&conn, &ids(3 * BLOCK + 10..5 * BLOCK));
    ingest(&conn, &ids(5 * BLOCK..5 * BLOCK + 1));
    assert_eq!(filtered_blocks(&conn), [0, 1, 2, 3, 4]);
    assert_eq!(
        seqs(&conn, &format!("m-{}", 4 * BLOCK + 3)).unwrap(),
        [4 * BLOCK + 3]
    );
}

#[test]
fn a_stale_filter_costs_a_scan_never_a_miss() {
    let conn = store();
    ingest(&conn, &ids(1..2 * BLOCK + 1));
    conn.execute("UPDATE events SET message_id = '' WHERE seq = 10", [])
        .unwrap();
    conn.execute("DELETE FROM events WHERE seq = 11", [])
        .unwrap();
    assert!(seqs(&conn, "m-10").unwrap().is_empty());
    assert!(seqs(&conn, "m-11").unwrap().is_empty());
    assert_eq!(seqs(&conn, "m-12").unwrap(), [12]);
}

#[test]
fn retention_drops_only_filters_of_blocks_it_emptied() {
    let conn = store();
    ingest(&conn, &ids(1..4 * BLOCK + 1));
    assert_eq!(filtered_blocks(&conn), [0, 1, 2, 3]);
    // Everything below seq 2 * BLOCK + 5 is pruned: blocks 0 and 1 are
    // empty, block 2 still holds events.
    conn.execute("DELETE FROM events WHERE seq < ?1", params![2 * BLOCK + 5])
        .unwrap();
    forget_pruned(&conn).unwrap();
    assert_eq!(filtered_blocks(&conn), [2, 3]);
    let id = format!("m-{}", 2 * BLOCK + 9);
    assert_eq!(seqs(&conn, &id).unwrap(), [2 * BLOCK + 9]);
    // The next block continues after the last filter, not from the lowest
    // event.
    ingest(&conn, &ids(4 * BLOCK + 1..5 * BLOCK + 1));
    assert_eq!(filtered_blocks(&conn), [2, 3, 4]);
}

#[test]
fn an_empty_store_has_nothing_to_build_or_find() {
    let mut conn = store();
    catch_up(&mut conn).unwrap();
    forget_pruned(&conn).unwrap();
    assert!(filtered_blocks(&conn).is_empty());
    assert!(seqs(&conn, "m-1").unwrap().is_empty());
}
