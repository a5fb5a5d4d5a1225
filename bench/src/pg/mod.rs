//! The PostgreSQL side of `--backend postgres`: where the server comes from
//! (the project's test-server script unless a URL is given), one schema per
//! scenario, and what the database did during a load phase ([`watch`]:
//! commits, rows written by table, write-ahead log, sessions waiting on
//! locks, from PostgreSQL's own statistics views; [`cpu`]: the server's CPU
//! time, from `/proc` when it runs on this machine).

mod cpu;
mod watch;

pub use watch::{DbActivity, TableWrites, Watch};

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use tokio_postgres::{Client, NoTls};

/// Starts (or finds running) the test server through
/// `scripts/postgres-test-server.sh start` and returns its URL. Run from the
/// repository root, as the bench's documented commands are.
pub fn start_test_server() -> anyhow::Result<String> {
    project_server(
        "scripts/postgres-test-server.sh",
        "--backend postgres --postgres-url",
    )
}

/// Starts the project's Kafka test broker (or finds it running) through
/// `scripts/kafka-test-server.sh start` and returns its bootstrap servers.
pub fn start_kafka_test_broker() -> anyhow::Result<String> {
    project_server(
        "scripts/kafka-test-server.sh",
        "--backend kafka --kafka-bootstrap",
    )
}

/// Runs `script start` and returns the last line it prints: where the
/// server listens. `flag` names the option that makes the script
/// unnecessary, for the error when it is missing.
fn project_server(script: &str, flag: &str) -> anyhow::Result<String> {
    let path = Path::new(script);
    if !path.is_file() {
        bail!("without {flag} the bench needs {script} (run from the repository root)");
    }
    let out = Command::new(path)
        .arg("start")
        .output()
        .with_context(|| format!("running {script} start"))?;
    if !out.status.success() {
        bail!(
            "{script} start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let printed = String::from_utf8_lossy(&out.stdout);
    let address = printed.trim().lines().last().unwrap_or_default().to_owned();
    if address.is_empty() {
        bail!("{script} start printed nothing to connect to");
    }
    Ok(address)
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

pub(crate) async fn connect(url: &str) -> anyhow::Result<Client> {
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
