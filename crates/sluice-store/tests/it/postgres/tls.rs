//! TLS to PostgreSQL against the test server, which
//! `scripts/postgres-test-server.sh` starts with a certificate for
//! `localhost` (and not for `127.0.0.1`) issued by a CA of its own, whose
//! file it names with `ca`.

use std::time::Duration;

use sluice_store::{PostgresConfig, PostgresStore};
use tokio_postgres::NoTls;

use super::{TestSchema, url};

const CA_VAR: &str = "SLUICE_TEST_POSTGRES_CA";

fn ca() -> String {
    std::env::var(CA_VAR).unwrap_or_else(|_| {
        panic!("{CA_VAR} is not set: {CA_VAR}=$(scripts/postgres-test-server.sh ca)")
    })
}

/// The test server's URL with `host` in place of 127.0.0.1, and `query`
/// appended (it also names the connections, to find them afterwards).
fn url_with(host: &str, query: &str, name: &str) -> String {
    let base = url().replacen("127.0.0.1", host, 1);
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}application_name={name}&{query}")
}

async fn open(url: String, schema: &TestSchema) -> Result<PostgresStore, String> {
    let config = PostgresConfig {
        schema: Some(schema.name.clone()),
        pool_size: 2,
        connect_timeout: Duration::from_secs(5),
        ..PostgresConfig::new(url)
    };
    PostgresStore::open(config).await.map_err(|e| e.to_string())
}

/// Whether the connections named `name` are encrypted, as the server sees
/// them; `None` when there is none.
async fn encrypted(name: &str) -> Option<bool> {
    let (client, conn) = tokio_postgres::connect(&url(), NoTls)
        .await
        .expect("connect to the test server");
    tokio::spawn(conn);
    let rows = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.application_name = $1",
            &[&name],
        )
        .await
        .expect("read pg_stat_ssl");
    let all: Vec<bool> = rows.iter().map(|r| r.get(0)).collect();
    let first = *all.first()?;
    assert!(
        all.iter().all(|&x| x == first),
        "mixed connections: {all:?}"
    );
    Some(first)
}

fn name(label: &str) -> String {
    format!("tls_{label}_{:08x}", rand::random::<u32>())
}

#[tokio::test]
async fn verify_full_with_the_servers_ca_connects_encrypted() {
    let schema = TestSchema::new();
    let name = name("full");
    let query = format!("sslmode=verify-full&sslrootcert={}", ca());
    let store = open(url_with("localhost", &query, &name), &schema)
        .await
        .expect("verify-full against the right name and CA");
    assert_eq!(encrypted(&name).await, Some(true));
    store.close().await;
}

#[tokio::test]
async fn verify_full_refuses_a_certificate_issued_for_another_name() {
    let schema = TestSchema::new();
    let query = format!("sslmode=verify-full&sslrootcert={}", ca());
    let err = open(url_with("127.0.0.1", &query, &name("name")), &schema)
        .await
        .err()
        .expect("the certificate names localhost, not 127.0.0.1");
    assert!(err.contains("certificate"), "{err}");
}

#[tokio::test]
async fn verify_ca_accepts_the_chain_whatever_the_name() {
    let schema = TestSchema::new();
    let name = name("ca");
    let query = format!("sslmode=verify-ca&sslrootcert={}", ca());
    let store = open(url_with("127.0.0.1", &query, &name), &schema)
        .await
        .expect("verify-ca does not check the name");
    assert_eq!(encrypted(&name).await, Some(true));
    store.close().await;
}

#[tokio::test]
async fn verify_full_without_the_ca_refuses_an_untrusted_server() {
    let schema = TestSchema::new();
    let err = open(
        url_with("localhost", "sslmode=verify-full", &name("roots")),
        &schema,
    )
    .await
    .err()
    .expect("the test CA is not among the system's roots");
    assert!(err.contains("certificate"), "{err}");
}

#[tokio::test]
async fn require_encrypts_without_checking_the_certificate() {
    let schema = TestSchema::new();
    let name = name("require");
    let store = open(url_with("127.0.0.1", "sslmode=require", &name), &schema)
        .await
        .expect("require accepts any certificate, as libpq does");
    assert_eq!(encrypted(&name).await, Some(true));
    store.close().await;
}

#[tokio::test]
async fn the_default_uses_tls_when_the_server_offers_it() {
    let schema = TestSchema::new();
    let name = name("prefer");
    let store = open(url_with("127.0.0.1", "connect_timeout=5", &name), &schema)
        .await
        .expect("prefer");
    assert_eq!(encrypted(&name).await, Some(true));
    store.close().await;
}

#[tokio::test]
async fn disable_connects_in_plain_tcp() {
    let schema = TestSchema::new();
    let name = name("plain");
    let store = open(url_with("127.0.0.1", "sslmode=disable", &name), &schema)
        .await
        .expect("plain TCP when asked for");
    assert_eq!(encrypted(&name).await, Some(false));
    store.close().await;
}

#[tokio::test]
async fn an_unknown_sslmode_is_refused_with_its_name() {
    let schema = TestSchema::new();
    let err = open(
        url_with("127.0.0.1", "sslmode=verify_full", &name("bad")),
        &schema,
    )
    .await
    .err()
    .expect("a misspelt mode must not fall back to plain TCP");
    assert!(err.contains("verify_full"), "{err}");
}
