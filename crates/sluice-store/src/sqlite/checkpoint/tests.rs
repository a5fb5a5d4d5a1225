use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{Checkpointer, Timing, wal_path};

fn timing() -> Timing {
    Timing {
        min_interval: Duration::from_millis(10),
        idle: Duration::from_millis(50),
        shrink_above: 64 << 10,
        busy_timeout: Duration::from_secs(5),
    }
}

/// A WAL-mode database at `path` whose WAL holds some megabytes: the
/// connection's own auto-checkpoint is off, so only the thread checkpoints.
fn writer(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE t (x TEXT NOT NULL);",
    )
    .expect("schema");
    conn
}

fn write_megabytes(conn: &Connection, mb: usize) {
    let row = "x".repeat(1000);
    for _ in 0..mb {
        conn.execute_batch("BEGIN").expect("begin");
        for _ in 0..1000 {
            conn.execute("INSERT INTO t (x) VALUES (?1)", [&row])
                .expect("insert");
        }
        conn.execute_batch("COMMIT").expect("commit");
    }
}

/// The checkpoint thread on a connection of its own, with short timings.
fn checkpointer(path: &Path) -> Checkpointer {
    Checkpointer::spawn_with(
        Connection::open(path).expect("open"),
        wal_path(path),
        timing(),
    )
    .expect("spawn")
}

fn wal_len(path: &Path) -> u64 {
    std::fs::metadata(wal_path(path)).map_or(0, |m| m.len())
}

/// Polls until `cond` holds or two seconds pass; returns whether it held.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

#[test]
fn shrinks_the_wal_to_nothing_once_commits_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let conn = writer(&path);
    write_megabytes(&conn, 4);
    assert!(wal_len(&path) > 2 << 20, "the WAL holds the writes");
    let thread = checkpointer(&path);
    thread.nudge();
    assert!(
        eventually(|| wal_len(&path) == 0),
        "WAL left at {}",
        wal_len(&path)
    );
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 4000, "every committed row is in the database");
    thread.stop();
}

#[test]
fn keeps_the_wal_while_a_reader_needs_it_and_shrinks_it_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let conn = writer(&path);
    write_megabytes(&conn, 2);
    // A read transaction that started before the checkpoint pins the WAL.
    let reader = Connection::open(&path).expect("open reader");
    reader.execute_batch("BEGIN").expect("begin");
    let _: i64 = reader
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("read");
    let thread = checkpointer(&path);
    thread.nudge();
    std::thread::sleep(Duration::from_millis(300));
    assert!(wal_len(&path) > 1 << 20, "the reader's WAL was kept");
    // The writer is never held up meanwhile.
    write_megabytes(&conn, 1);
    reader.execute_batch("COMMIT").expect("end read");
    assert!(
        eventually(|| wal_len(&path) == 0),
        "WAL left at {}",
        wal_len(&path)
    );
    thread.stop();
}

#[test]
fn leaves_a_small_wal_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let conn = writer(&path);
    conn.execute("INSERT INTO t (x) VALUES ('one row')", [])
        .expect("insert");
    let before = wal_len(&path);
    assert!(before > 0 && before < 64 << 10);
    let thread = checkpointer(&path);
    thread.nudge();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        wal_len(&path),
        before,
        "a WAL under the threshold keeps its size"
    );
    thread.stop();
}

/// The writer nudges the thread only after a group that changed rows: an
/// idle store still runs read-only writer jobs (the delivery dispatcher's
/// claims that find nothing due), and a nudge for each would put off the
/// shrink forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_that_change_nothing_do_not_put_off_the_shrink() {
    use super::super::writer::{GroupLimits, Writer};

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let conn = writer(&path);
    write_megabytes(&conn, 4);
    let limits = GroupLimits {
        max_weight: 100,
        max_jobs: 100,
    };
    let lock = super::super::lock::acquire(&path, Duration::ZERO).expect("lock");
    let writer = Writer::spawn(conn, checkpointer(&path), limits, lock, None).expect("writer");
    writer
        .run(1, |c| {
            Ok(c.execute("INSERT INTO t (x) VALUES ('last')", [])?)
        })
        .await
        .expect("write");
    // Read-only jobs every 10 ms, well inside the 50 ms idle period.
    let polled = Instant::now();
    let mut shrunk = false;
    while polled.elapsed() < Duration::from_secs(1) && !shrunk {
        let n: i64 = writer
            .run(1, |c| {
                Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?)
            })
            .await
            .expect("read");
        assert!(n > 0);
        tokio::time::sleep(Duration::from_millis(10)).await;
        shrunk = wal_len(&path) == 0;
    }
    assert!(shrunk, "WAL left at {} while idle", wal_len(&path));
    writer.close().await;
}
