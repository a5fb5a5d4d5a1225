//! Group commit: which writes of a group commit when one of them fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Class, Job, PendingJob, commit_group};
use crate::Result;

fn db() -> Connection {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch("CREATE TABLE t (x TEXT NOT NULL UNIQUE); INSERT INTO t VALUES ('taken');")
        .expect("schema");
    conn
}

type Answer = oneshot::Receiver<Result<()>>;

/// A job inserting each of `rows` in turn; `taken` makes it fail, after
/// the rows before it were written.
fn job(class: Class, rows: &'static [&'static str]) -> (Box<dyn Job>, Answer) {
    let (reply, answer) = oneshot::channel();
    let work = move |c: &Connection| -> Result<()> {
        for row in rows {
            c.execute("INSERT INTO t VALUES (?1)", [row])?;
        }
        Ok(())
    };
    let job = Box::new(PendingJob {
        work: Some(work),
        outcome: None,
        reply,
        weight: 1,
        class,
        then: None,
    });
    (job, answer)
}

/// Runs the jobs as one group; returns whether each caller heard "ok".
fn run(jobs: Vec<(Box<dyn Job>, Answer)>) -> (Vec<bool>, Connection) {
    let conn = db();
    let (mut group, answers): (Vec<_>, Vec<_>) = jobs.into_iter().unzip();
    let (committed, _) = commit_group(&conn, &mut group, None);
    assert!(committed, "the group commits");
    let heard = answers
        .into_iter()
        .map(|mut a| matches!(a.try_recv(), Ok(Ok(()))))
        .collect();
    (heard, conn)
}

fn rows(conn: &Connection) -> Vec<String> {
    let mut stmt = conn.prepare("SELECT x FROM t ORDER BY x").expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

#[test]
fn a_failing_admin_write_rolls_back_alone() {
    let (heard, conn) = run(vec![
        job(Class::Other, &["a"]),
        job(Class::Other, &["half", "taken"]),
        job(Class::Other, &["b"]),
    ]);
    assert_eq!(heard, [true, false, true]);
    assert_eq!(rows(&conn), ["a", "b", "taken"]);
}

#[test]
fn a_failing_append_rolls_back_the_appends_before_it_and_nothing_half_written() {
    let (heard, conn) = run(vec![
        job(Class::Ingest, &["a"]),
        job(Class::Ingest, &["b"]),
        job(Class::Ingest, &["half", "taken"]),
        job(Class::Ingest, &["c"]),
        job(Class::Other, &["d"]),
    ]);
    // Nobody heard "ok" for a write that did not commit, and every write
    // that committed was answered "ok".
    assert_eq!(heard, [false, false, false, true, true]);
    assert_eq!(rows(&conn), ["c", "d", "taken"]);
}

#[test]
fn other_writes_split_runs_of_appends() {
    let (heard, conn) = run(vec![
        job(Class::Ingest, &["a"]),
        job(Class::Other, &["taken"]),
        job(Class::Ingest, &["b"]),
        job(Class::Engine, &["c"]),
        job(Class::Ingest, &["half", "taken"]),
    ]);
    assert_eq!(heard, [true, false, true, true, false]);
    assert_eq!(rows(&conn), ["a", "b", "c", "taken"]);
}

/// A job whose caller has stopped waiting, counting in `ran` each time its
/// `then` runs.
fn unheard(class: Class, rows: &'static [&'static str], ran: &Arc<AtomicUsize>) -> Box<dyn Job> {
    let (reply, answer) = oneshot::channel();
    drop(answer);
    let ran = Arc::clone(ran);
    let work = move |c: &Connection| -> Result<Arc<AtomicUsize>> {
        for row in rows {
            c.execute("INSERT INTO t VALUES (?1)", [row])?;
        }
        Ok(ran)
    };
    Box::new(PendingJob {
        work: Some(work),
        outcome: None,
        reply,
        weight: 1,
        class,
        then: Some(|ran: &mut Arc<AtomicUsize>| {
            ran.fetch_add(1, Ordering::SeqCst);
        }),
    })
}

#[test]
fn then_runs_on_each_committed_result_even_with_nobody_waiting() {
    let ran = Arc::new(AtomicUsize::new(0));
    let conn = db();
    let mut group = vec![
        unheard(Class::Ingest, &["a"], &ran),
        unheard(Class::Ingest, &["half", "taken"], &ran),
        unheard(Class::Ingest, &["c"], &ran),
        unheard(Class::Other, &["d"], &ran),
    ];
    let (committed, _) = commit_group(&conn, &mut group, None);
    assert!(committed);
    // "a" was rolled back with the failing append after it.
    assert_eq!(rows(&conn), ["c", "d", "taken"]);
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}
