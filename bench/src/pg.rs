//! The PostgreSQL side of `--backend postgres`: where the server comes from
//! (the project's test-server script unless a URL is given), one schema per
//! scenario, and what the database did during a load phase (commits, rows
//! written, sessions waiting on locks), read from PostgreSQL's own
//! statistics views.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio_postgres::{Client, NoTls};

/// Starts (or finds running) the test server through
/// `scripts/postgres-test-server.sh start` and returns its URL. Run from the
/// repository root, as the bench's documented commands are.
pub fn start_test_server() -> anyhow::Result<String> {
    let script = Path::new("scripts/postgres-test-server.sh");
    if !script.is_file() {
        bail!(
            "--backend postgres without --postgres-url needs {} (run from the repository root)",
            script.display()
        );
    }
    let out = Command::new(script)
        .arg("start")
        .output()
        .context("running scripts/postgres-test-server.sh start")?;
    if !out.status.success() {
        bail!(
            "postgres-test-server.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let url = url.lines().last().unwrap_or_default().to_owned();
    if url.is_empty() {
        bail!("postgres-test-server.sh start printed no URL");
    }
    Ok(url)
}

/// A schema name no other scenario of this run (or a concurrent run) uses.
pub fn fresh_schema() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "bench_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn connect(url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    tokio::spawn(connection);
    Ok(client)
}

/// Bytes of every table and index in `schema` (heap, TOAST, indexes).
pub async fn schema_bytes(url: &str, schema: &str) -> anyhow::Result<u64> {
    let client = connect(url).await?;
    let row = client
        .query_one(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')",
            &[&schema],
        )
        .await?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// Drops a scenario's schema (best effort; the data is throwaway).
pub async fn drop_schema(url: &str, schema: &str) {
    if let Ok(client) = connect(url).await {
        let _ = client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await;
    }
}

/// Counters of the whole database from `pg_stat_database`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DbCounters {
    pub commits: i64,
    pub rows_written: i64,
}

async fn counters(client: &Client) -> anyhow::Result<DbCounters> {
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
    Ok(DbCounters {
        commits: row.get(0),
        rows_written: row.get(1),
    })
}

/// What PostgreSQL did during one load phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct DbActivity {
    pub commits: i64,
    pub rows_written: i64,
    /// Samples (every 50 ms) that found at least one session waiting on a
    /// heavyweight lock, and the most sessions waiting in one sample.
    pub lock_wait_samples: u64,
    pub samples: u64,
    pub max_lock_waiters: i64,
}

/// Watches the database from now until [`Watch::finish`].
pub struct Watch {
    client: Arc<Client>,
    start: DbCounters,
    sampler: tokio::task::JoinHandle<()>,
    locks: Arc<Mutex<(u64, u64, i64)>>,
}

impl Watch {
    pub async fn start(url: &str) -> anyhow::Result<Watch> {
        let client = Arc::new(connect(url).await?);
        let start = counters(&client).await?;
        let locks = Arc::new(Mutex::new((0u64, 0u64, 0i64)));
        let (c, l) = (client.clone(), locks.clone());
        let sampler = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let waiting = c
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE datname = current_database() AND wait_event_type = 'Lock'",
                        &[],
                    )
                    .await
                    .map(|r| r.get::<_, i64>(0))
                    .unwrap_or(0);
                if let Ok(mut g) = l.lock() {
                    g.1 += 1;
                    if waiting > 0 {
                        g.0 += 1;
                    }
                    g.2 = g.2.max(waiting);
                }
            }
        });
        Ok(Watch {
            client,
            start,
            sampler,
            locks,
        })
    }

    pub async fn finish(self) -> anyhow::Result<DbActivity> {
        self.sampler.abort();
        let end = counters(&self.client).await?;
        let (lock_wait_samples, samples, max_lock_waiters) =
            self.locks.lock().map(|g| *g).unwrap_or_default();
        Ok(DbActivity {
            commits: end.commits - self.start.commits,
            rows_written: end.rows_written - self.start.rows_written,
            lock_wait_samples,
            samples,
            max_lock_waiters,
        })
    }
}
