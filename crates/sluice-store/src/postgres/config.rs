//! How to open a [`super::PostgresStore`].

use std::time::Duration;

use crate::{Result, StoreError};

/// Settings of the shared PostgreSQL backend.
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// A libpq-style URL, e.g. `postgres://sluice:pw@db.internal:5432/sluice`.
    /// Key-value strings (`host=... dbname=...`) are accepted too.
    pub url: String,
    /// Connections kept in the pool (at least 2: the ingest writer holds one
    /// while it commits a group; reads and other writes use the rest).
    pub pool_size: usize,
    /// The schema holding Sluice's tables; `None` uses the server's
    /// `search_path` (normally `public`). Set it to share one database with
    /// other applications, or to give each test its own tables. Created when
    /// missing. Letters, digits and `_` only.
    pub schema: Option<String>,
    /// How long a caller waits for a free pooled connection or a new one.
    pub connect_timeout: Duration,
    /// Upper bound on the events written by one group commit. Bounds the
    /// latency a single group adds to everyone queued behind it.
    pub max_group_events: usize,
    /// Upper bound on the calls folded into one group commit.
    pub max_group_jobs: usize,
    /// Upper bound on the event bytes (bodies) of one group: a group is sent
    /// as a few statements, so this caps the size of one statement.
    pub max_group_bytes: usize,
    /// Deliveries this node settles before a drained backlog earns a
    /// `VACUUM deliveries` (see `postgres/vacuum.rs`); 0 never vacuums.
    pub vacuum_after_settled: u64,
    /// How often the pool's upkeep runs: closing idle connections, and
    /// checking that no newer Sluice has migrated the database (see
    /// `postgres/upkeep.rs`).
    pub upkeep_interval: Duration,
    /// A pooled connection unused this long is closed.
    pub idle_timeout: Duration,
    /// How long a source's committed message ids are remembered to drop
    /// resent events (24 h); `None` stores every call. The events are the
    /// memory: no row of its own per event (see `postgres/dedup.rs`).
    pub dedup_window: Option<Duration>,
}

impl PostgresConfig {
    /// Defaults for the database at `url`: 16 connections, default schema,
    /// 10 s connect timeout, groups of up to 8192 events, 1024 calls or
    /// 16 MiB of bodies; a vacuum after 50,000 settled deliveries; upkeep
    /// every 15 s, closing connections idle for 5 minutes; a 24-hour
    /// deduplication window.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresConfig {
            url: url.into(),
            pool_size: 16,
            schema: None,
            connect_timeout: Duration::from_secs(10),
            max_group_events: 8192,
            max_group_jobs: 1024,
            max_group_bytes: 16 << 20,
            vacuum_after_settled: 50_000,
            upkeep_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(300),
            dedup_window: Some(Duration::from_secs(24 * 3600)),
        }
    }

    /// The server the URL names, for messages: `postgres at HOST:PORT/DB`,
    /// never the user or password.
    pub(super) fn server_name(&self) -> String {
        let Some(parsed) = super::tls::split(&self.url)
            .ok()
            .and_then(|(conn, _)| conn.parse::<tokio_postgres::Config>().ok())
        else {
            return "postgres (URL does not parse)".into();
        };
        let hosts: Vec<String> = parsed
            .get_hosts()
            .iter()
            .zip(parsed.get_ports().iter().chain(std::iter::repeat(&5432)))
            .map(|(host, port)| match host {
                tokio_postgres::config::Host::Tcp(h) => format!("{h}:{port}"),
                tokio_postgres::config::Host::Unix(p) => format!("{}", p.display()),
            })
            .collect();
        format!(
            "postgres at {}/{}",
            hosts.join(","),
            parsed.get_dbname().unwrap_or("")
        )
    }

    /// The schema name, checked: it is spliced into SQL (`CREATE SCHEMA`,
    /// `search_path`), where identifiers cannot be bound as parameters.
    pub(super) fn checked_schema(&self) -> Result<Option<&str>> {
        let Some(schema) = self.schema.as_deref() else {
            return Ok(None);
        };
        let mut chars = schema.chars();
        let valid_start = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let valid_rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid_start && valid_rest && schema.len() <= 63 {
            Ok(Some(schema))
        } else {
            Err(StoreError::backend(
                crate::error::ErrorKind::Config,
                format!(
                    "invalid schema name {schema:?}: use 1-63 lowercase letters, digits and '_', \
                 not starting with a digit"
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_named_without_its_credentials() {
        let named = PostgresConfig::new("postgres://sluice:pw-s3cret@db.internal:6543/events")
            .server_name();
        assert_eq!(named, "postgres at db.internal:6543/events");
        assert_eq!(
            PostgresConfig::new("postgres://u@h/d").server_name(),
            "postgres at h:5432/d"
        );
        assert_eq!(
            PostgresConfig::new("postgres://u@h/d?sslmode=verify-full&sslrootcert=/ca.pem")
                .server_name(),
            "postgres at h:5432/d"
        );
    }

    fn with_schema(schema: &str) -> PostgresConfig {
        PostgresConfig {
            schema: Some(schema.into()),
            ..PostgresConfig::new("postgres://localhost/sluice")
        }
    }

    #[test]
    fn plain_lowercase_schema_names_are_accepted() {
        let config = with_schema("sluice_t_01");
        assert_eq!(config.checked_schema().ok().flatten(), Some("sluice_t_01"));
    }

    #[test]
    fn schema_names_that_need_quoting_are_refused() {
        for bad in [
            "",
            "1abc",
            "Sluice",
            "a-b",
            "a\"; DROP TABLE x; --",
            &"a".repeat(64),
        ] {
            assert!(
                with_schema(bad).checked_schema().is_err(),
                "{bad:?} accepted"
            );
        }
    }
}
