//! What PostgreSQL did during one load phase: commits and rows written
//! (database-wide, and by table of the scenario's schema), write-ahead log
//! bytes, the server's CPU time, and how often sessions waited on a lock.
//!
//! Row counts come from `pg_stat_user_tables`, which each backend updates
//! on its own schedule: at the end of a transaction at most once a second,
//! and, when it then goes idle, some 10 s later (PostgreSQL 15's
//! `PGSTAT_IDLE_INTERVAL`). `pg_stat_force_next_flush()` reaches only the
//! calling backend, so [`Watch::finish`] reads CPU and WAL at the end of the
//! phase and the row counts [`STATS_SETTLE`] later, once every backend has
//! reported. Work that lands in that wait (a delivery's last attempt
//! report) is part of the phase; the nodes' background work (heartbeats)
//! adds a few rows.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::Client;

use super::connect;
use super::cpu::Server;

/// How long after a phase the row counts are read: past PostgreSQL's
/// 10 s idle flush of backend statistics.
pub const STATS_SETTLE: Duration = Duration::from_secs(11);

/// How often `pg_stat_activity` is sampled for lock waits.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// Rows one table took during a phase (`pg_stat_user_tables`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableWrites {
    pub inserted: i64,
    pub updated: i64,
    /// Of `updated`, the heap-only ones (no index entry written).
    pub hot_updated: i64,
    pub deleted: i64,
}

impl TableWrites {
    pub fn total(&self) -> i64 {
        self.inserted + self.updated + self.deleted
    }

    fn since(&self, before: &TableWrites) -> TableWrites {
        TableWrites {
            inserted: self.inserted - before.inserted,
            updated: self.updated - before.updated,
            hot_updated: self.hot_updated - before.hot_updated,
            deleted: self.deleted - before.deleted,
        }
    }
}

/// `pg_stat_activity` samples taken during a phase.
#[derive(Debug, Clone, Default)]
pub struct LockTally {
    pub samples: u64,
    /// Samples in which at least one session waited on a heavyweight lock.
    pub samples_waiting: u64,
    /// Active client sessions, summed over the samples.
    pub active: u64,
    /// Of those, the ones waiting on a heavyweight lock.
    pub waiting: u64,
    pub max_waiting: u64,
    /// The statements found waiting (their start), and how often.
    pub statements: BTreeMap<String, u64>,
}

/// What PostgreSQL did during one load phase.
#[derive(Debug, Clone, Default)]
pub struct DbActivity {
    pub commits: i64,
    /// Rows inserted, updated or deleted in the whole database.
    pub rows_written: i64,
    /// The scenario schema's tables that were written, by name.
    pub tables: BTreeMap<String, TableWrites>,
    pub wal_bytes: i64,
    /// The server's CPU seconds; `None` when it does not run on this machine.
    pub cpu_secs: Option<f64>,
    pub locks: LockTally,
}

#[derive(Debug, Clone, Default)]
struct Counters {
    commits: i64,
    rows_written: i64,
    tables: BTreeMap<String, TableWrites>,
}

/// Watches the database from now until [`Watch::finish`].
pub struct Watch {
    client: Arc<Client>,
    schema: String,
    server: Option<Server>,
    start: Counters,
    start_wal: i64,
    start_cpu: Option<f64>,
    sampler: tokio::task::JoinHandle<()>,
    locks: Arc<Mutex<LockTally>>,
}

impl Watch {
    /// Starts watching the database at `url`; rows are counted by table of
    /// `schema`.
    pub async fn start(url: &str, schema: &str) -> anyhow::Result<Watch> {
        let client = Arc::new(connect(url).await?);
        let backend: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .get(0);
        let server = u32::try_from(backend).ok().and_then(Server::of_backend);
        let start = counters(&client, schema).await?;
        let start_wal = wal_position(&client).await?;
        let start_cpu = server.and_then(Server::cpu_secs);
        let locks = Arc::new(Mutex::new(LockTally::default()));
        let sampler = tokio::spawn(sample(client.clone(), locks.clone()));
        Ok(Watch {
            client,
            schema: schema.to_owned(),
            server,
            start,
            start_wal,
            start_cpu,
            sampler,
            locks,
        })
    }

    /// Ends the watch: CPU and WAL now, row counts [`STATS_SETTLE`] later.
    pub async fn finish(self) -> anyhow::Result<DbActivity> {
        let cpu = self.server.and_then(Server::cpu_secs);
        let wal = wal_position(&self.client).await?;
        self.sampler.abort();
        let locks = self.locks.lock().map(|g| g.clone()).unwrap_or_default();
        tokio::time::sleep(STATS_SETTLE).await;
        let end = counters(&self.client, &self.schema).await?;
        let empty = TableWrites::default();
        let tables = end
            .tables
            .iter()
            .map(|(name, now)| {
                let before = self.start.tables.get(name).unwrap_or(&empty);
                (name.clone(), now.since(before))
            })
            .filter(|(_, writes)| writes.total() > 0)
            .collect();
        Ok(DbActivity {
            commits: end.commits - self.start.commits,
            rows_written: end.rows_written - self.start.rows_written,
            tables,
            wal_bytes: wal - self.start_wal,
            cpu_secs: cpu.zip(self.start_cpu).map(|(end, start)| end - start),
            locks,
        })
    }
}

async fn counters(client: &Client, schema: &str) -> anyhow::Result<Counters> {
    // Statistics are cached per transaction; a fresh snapshot each read.
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await?;
    let row = client
        .query_one(
            "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted \
             FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?;
    let tables = client
        .query(
            "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del \
             FROM pg_stat_user_tables WHERE schemaname = $1",
            &[&schema],
        )
        .await?
        .iter()
        .map(|r| {
            let writes = TableWrites {
                inserted: r.get(1),
                updated: r.get(2),
                hot_updated: r.get(3),
                deleted: r.get(4),
            };
            (r.get::<_, String>(0), writes)
        })
        .collect();
    Ok(Counters {
        commits: row.get(0),
        rows_written: row.get(1),
        tables,
    })
}

/// Bytes of write-ahead log the server has written since it was created.
async fn wal_position(client: &Client) -> anyhow::Result<i64> {
    let row = client
        .query_one(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// Samples the database's client sessions every [`SAMPLE_EVERY`] until
/// aborted.
async fn sample(client: Arc<Client>, tally: Arc<Mutex<LockTally>>) {
    loop {
        tokio::time::sleep(SAMPLE_EVERY).await;
        let Ok(rows) = client
            .query(
                "SELECT wait_event_type IS NOT DISTINCT FROM 'Lock', left(query, 200) \
                 FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid() \
                   AND backend_type = 'client backend' AND state = 'active'",
                &[],
            )
            .await
        else {
            continue;
        };
        let Ok(mut t) = tally.lock() else { return };
        let mut waiting = 0;
        for row in &rows {
            if row.get::<_, bool>(0) {
                waiting += 1;
                *t.statements.entry(statement(row.get(1))).or_default() += 1;
            }
        }
        t.samples += 1;
        t.active += rows.len() as u64;
        t.waiting += waiting;
        t.samples_waiting += u64::from(waiting > 0);
        t.max_waiting = t.max_waiting.max(waiting);
    }
}

/// A statement's first words, on one line: enough to tell which one waits.
fn statement(query: &str) -> String {
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut line = words.join(" ");
    if line.len() > 60 {
        let cut = (0..=60)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_one_short_line() {
        assert_eq!(
            statement("INSERT INTO usage\n   (a, b)"),
            "INSERT INTO usage (a, b)"
        );
        let long = format!("SELECT {}", "x, ".repeat(40));
        assert_eq!(statement(&long).chars().count(), 61);
    }

    #[test]
    fn table_writes_count_inserts_updates_and_deletes() {
        let before = TableWrites {
            inserted: 1,
            updated: 2,
            hot_updated: 1,
            deleted: 0,
        };
        let after = TableWrites {
            inserted: 11,
            updated: 22,
            hot_updated: 11,
            deleted: 3,
        };
        let d = after.since(&before);
        assert_eq!(
            (d.inserted, d.updated, d.hot_updated, d.deleted),
            (10, 20, 10, 3)
        );
        assert_eq!(d.total(), 33);
    }
}
