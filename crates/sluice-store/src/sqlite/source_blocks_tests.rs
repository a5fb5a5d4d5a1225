use rusqlite::{Connection, params};

use super::recent_events;
use crate::sqlite::message_ids::{BLOCK, after_append, catch_up, forget_pruned};
use crate::sqlite::schema::MIGRATIONS;

fn store() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    MIGRATIONS.to_latest(&mut conn).unwrap();
    conn
}

/// Stores `n` events of `source` as ingest does (with `check`: completing
/// blocks writes their lists), returning their seqs.
fn send(conn: &Connection, source: &str, n: i64, check: bool) -> Vec<i64> {
    let mut insert = conn
        .prepare(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES (?1, ?2, 'track', 0, '{}')",
        )
        .unwrap();
    let seqs: Vec<i64> = (0..n)
        .map(|i| {
            insert
                .insert(params![source, format!("{source}-{i}")])
                .unwrap()
        })
        .collect();
    if check && let (Some(first), Some(last)) = (seqs.first(), seqs.last()) {
        after_append(conn, *first, *last).unwrap();
    }
    seqs
}

fn page(conn: &Connection, source: &str, before: Option<i64>, limit: u32) -> Vec<i64> {
    recent_events(conn, source, before, limit)
        .unwrap()
        .into_iter()
        .map(|e| e.seq)
        .collect()
}

fn listed(conn: &Connection) -> Vec<(i64, String)> {
    let mut stmt = conn
        .prepare("SELECT block, sources FROM event_block_sources ORDER BY block")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_quiet_source_is_paged_newest_first_across_blocks_of_a_busy_one() {
    let conn = store();
    let mut quiet = Vec::new();
    for _ in 0..5 {
        send(&conn, "busy", 3_000, true);
        quiet.extend(send(&conn, "quiet", 2, true));
    }
    let total = 5 * 3_002;
    assert_eq!(listed(&conn).len(), usize::try_from(total / BLOCK).unwrap());
    quiet.reverse();
    assert_eq!(
        page(&conn, "quiet", None, 100),
        quiet,
        "every one, newest first"
    );
    assert_eq!(page(&conn, "quiet", None, 3), quiet[..3]);
    assert_eq!(
        page(&conn, "quiet", Some(quiet[2]), 3),
        quiet[3..6],
        "the cursor is exclusive"
    );
    assert_eq!(page(&conn, "busy", None, 2).len(), 2);
    assert!(page(&conn, "never", None, 10).is_empty());
}

#[test]
fn blocks_list_every_writers_sources_once_complete() {
    let conn = store();
    send(&conn, "a", 10, true);
    // Another writer that does not check (the profile engine's messages),
    // then an append that completes the block.
    send(&conn, "internal", 10, false);
    send(&conn, "b", BLOCK, true);
    let ten = |from: i64| {
        (from..from + 10)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(
        listed(&conn),
        [(0, format!("a\t{}\nb\ninternal\t{}", ten(1), ten(11)))],
        "sources with few calls list their seqs; busy ones only their name"
    );
    assert_eq!(page(&conn, "internal", None, 100).len(), 10);
}

#[test]
fn lists_are_built_at_open_for_events_stored_without_them() {
    let mut conn = store();
    send(&conn, "old", 2 * BLOCK + 7, false);
    assert!(listed(&conn).is_empty());
    assert_eq!(page(&conn, "old", None, 5).len(), 5, "tail scan alone");
    catch_up(&mut conn).unwrap();
    assert_eq!(
        listed(&conn),
        [(0, "old".to_owned()), (1, "old".to_owned())]
    );
    let seqs = page(&conn, "old", Some(5_000), 10_000);
    assert_eq!(seqs.len(), 4_999);
    assert_eq!(seqs.first(), Some(&4_999));
}

#[test]
fn retention_drops_the_lists_of_emptied_blocks() {
    let conn = store();
    send(&conn, "a", 3 * BLOCK + 1, true);
    conn.execute("DELETE FROM events WHERE seq < ?1", [2 * BLOCK + 5])
        .unwrap();
    forget_pruned(&conn).unwrap();
    assert_eq!(
        listed(&conn).iter().map(|(b, _)| *b).collect::<Vec<_>>(),
        [2]
    );
    assert_eq!(
        page(&conn, "a", None, 100_000).len(),
        usize::try_from(BLOCK + 1 - 4).unwrap()
    );
}

#[test]
fn a_listed_call_that_was_purged_is_skipped_not_returned() {
    let conn = store();
    let quiet = send(&conn, "quiet", 3, true);
    send(&conn, "busy", BLOCK, true);
    conn.execute("DELETE FROM events WHERE seq = ?1", [quiet[1]])
        .unwrap();
    conn.execute(
        "UPDATE events SET source_id = 'privacy' WHERE seq = ?1",
        [quiet[2]],
    )
    .unwrap();
    assert_eq!(page(&conn, "quiet", None, 10), [quiet[0]]);
}
