//! Configuration, in layers: the commented defaults (here and in `sections`), then an optional
//! TOML file, then `SLUICE_*` environment variables (nested keys joined with
//! `__`, e.g. `SLUICE_DELIVERY__TIMEOUT_MS=2000`), then [`Config::validate`].
//! `docs/configuration.md` is the reference for every key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

mod alerts;
mod kafka;
mod sections;
pub use alerts::AlertsSettings;
pub use kafka::KafkaSettings;
pub use sections::*;

pub use crate::serve::settings::{HttpSettings, MetricsSettings};

/// Why configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(String),
    #[error("configuration: {key}: {why}")]
    Invalid { key: &'static str, why: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the HTTP server binds. Default: loopback only, port 8088.
    pub listen: SocketAddr,
    /// Where the embedded store keeps its files. Default: `./sluice-data`.
    pub data_dir: PathBuf,
    /// The admin API token. When unset, one is generated on first start,
    /// printed once, and only its hash is kept.
    pub admin_token: Option<String>,
    /// `text` (default) or `json` log lines.
    pub log_format: LogFormat,
    /// Use `X-Forwarded-For` for `context.ip`, and `X-Forwarded-Proto` for
    /// the dashboard's `Secure` cookies; only behind a trusted proxy.
    pub trust_forwarded_for: bool,
    /// An optional file declaring sources and destinations, applied at start.
    pub bootstrap: Option<PathBuf>,
    pub storage: StorageConfig,
    pub limits: LimitsConfig,
    pub delivery: DeliverySettings,
    pub retention: RetentionConfig,
    pub audit: AuditConfig,
    pub schema: SchemaConfig,
    pub http: HttpSettings,
    pub metrics: MetricsSettings,
    pub personas: PersonasConfig,
    pub alerts: AlertsSettings,
    /// The Kafka shape's event log; off by default.
    pub kafka: KafkaSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// Embedded SQLite in `data_dir`: zero setup, one node.
    #[default]
    Sqlite,
    /// One PostgreSQL database shared by several nodes (docs/postgres.md).
    Postgres,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8088)),
            data_dir: PathBuf::from("sluice-data"),
            admin_token: None,
            log_format: LogFormat::Text,
            trust_forwarded_for: false,
            bootstrap: None,
            storage: StorageConfig::default(),
            limits: LimitsConfig::default(),
            delivery: DeliverySettings::default(),
            retention: RetentionConfig::default(),
            audit: AuditConfig::default(),
            schema: SchemaConfig::default(),
            http: HttpSettings::default(),
            metrics: MetricsSettings::default(),
            personas: PersonasConfig::default(),
            alerts: AlertsSettings::default(),
            kafka: KafkaSettings::default(),
        }
    }
}

/// The top-level keys, read off the defaults so the list cannot drift.
/// `SLUICE_*` variables the `sluice` binary reads itself, which are not
/// configuration keys: the log filter, the config file, and the settings of
/// the operator commands (`sluice import`, `tail`, … in `sluice-cli`).
/// `SLUICE_ADMIN_TOKEN` needs no entry: it is the `admin_token` key.
pub const NOT_CONFIG: &[&str] = &["LOG", "CONFIG", "URL", "WRITE_KEY", "SHARED_SECRET"];

fn top_level_keys() -> Vec<String> {
    match serde_json::to_value(Config::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

fn first_segment(key: &str) -> &str {
    key.split("__")
        .next()
        .unwrap_or(key)
        .split('.')
        .next()
        .unwrap_or(key)
}

impl Config {
    /// The embedded store's database file in [`Config::data_dir`].
    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("sluice.db")
    }

    /// Defaults, then `file` if given, then the `SLUICE_*` variables of the
    /// process environment, then validation.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_from(file, Self::env())
    }

    /// The `SLUICE_*` variables that name a configuration key. Variables
    /// whose first part is not a top-level key (`SLUICE_LOG`, a deployment
    /// tool's `SLUICE_BUILD`, a test harness's `SLUICE_BIN`) are not ours and
    /// are left out, reported by [`Config::ignored_env_vars`]; a typo inside a
    /// known section (`SLUICE_DELIVERY__TIMOUT_MS`) is still an error.
    pub fn env() -> Env {
        let known = top_level_keys();
        Env::prefixed("SLUICE_")
            .filter(move |key| {
                known
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(first_segment(key.as_str())))
            })
            .split("__")
    }

    /// `SLUICE_*` variables in the environment that are not configuration,
    /// other than the binary's own ([`NOT_CONFIG`]),
    /// so the binary can warn about likely typos.
    pub fn ignored_env_vars() -> Vec<String> {
        let known = top_level_keys();
        let mut ignored: Vec<String> = std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| {
                let Some(rest) = name.strip_prefix("SLUICE_") else {
                    return false;
                };
                let first = first_segment(rest);
                !NOT_CONFIG.contains(&first) && !known.iter().any(|k| k.eq_ignore_ascii_case(first))
            })
            .collect();
        ignored.sort();
        ignored
    }

    /// [`Config::load`] with an explicit environment provider, for tests
    /// (which must never mutate the process environment).
    pub fn load_from(file: Option<&Path>, env: Env) -> Result<Config, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::Load(format!(
                    "{} does not exist",
                    path.display()
                )));
            }
            figment = figment.merge(Toml::file(path));
        }
        let config: Config = figment
            .merge(env)
            .extract()
            .map_err(|e| ConfigError::Load(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, why: &str| {
            Err(ConfigError::Invalid {
                key,
                why: why.into(),
            })
        };
        if !matches!(self.storage.synchronous.as_str(), "full" | "normal") {
            return invalid("storage.synchronous", "must be 'full' or 'normal'");
        }
        if self.storage.backend == StorageBackend::Postgres {
            if self
                .storage
                .postgres_url
                .as_deref()
                .is_none_or(str::is_empty)
            {
                return invalid(
                    "storage.postgres_url",
                    "is required when storage.backend = \"postgres\"",
                );
            }
            if self.storage.postgres_pool_size < 2 {
                return invalid("storage.postgres_pool_size", "must be at least 2");
            }
        }
        if self.kafka.enabled() {
            if !cfg!(feature = "kafka") {
                return invalid(
                    "kafka.bootstrap_servers",
                    "this build has no Kafka support: build with `--features kafka` (docs/kafka.md)",
                );
            }
            if self.storage.backend != StorageBackend::Postgres {
                return invalid(
                    "kafka.bootstrap_servers",
                    "needs storage.backend = \"postgres\": the Kafka shape keeps its state there",
                );
            }
            if self.kafka.partitions < 1 || self.kafka.replication < 1 {
                return invalid(
                    "kafka.partitions",
                    "partitions and replication must be at least 1",
                );
            }
            if self.kafka.ack_timeout_ms == 0 || self.kafka.retention_hours == 0 {
                return invalid(
                    "kafka.ack_timeout_ms",
                    "timeouts and retention must be above 0",
                );
            }
            if let Err((key, why)) = self.kafka.check_security() {
                return Err(ConfigError::Invalid { key, why });
            }
        }
        if self.storage.timeout_ms == 0 {
            return invalid("storage.timeout_ms", "must be above 0");
        }
        if self.admin_token.as_ref().is_some_and(|t| t.len() < 16) {
            return invalid("admin_token", "must be at least 16 characters");
        }
        let l = &self.limits;
        if l.max_call_bytes == 0 || l.max_batch_bytes < l.max_call_bytes || l.max_batch_events == 0
        {
            return invalid(
                "limits",
                "need 0 < max_call_bytes <= max_batch_bytes and max_batch_events > 0",
            );
        }
        let d = &self.delivery;
        if d.timeout_ms == 0 || d.backoff_base_ms == 0 || d.backoff_cap_ms < d.backoff_base_ms {
            return invalid(
                "delivery",
                "need timeout_ms > 0 and 0 < backoff_base_ms <= backoff_cap_ms",
            );
        }
        if d.concurrency_per_destination == 0 {
            return invalid("delivery.concurrency_per_destination", "must be at least 1");
        }
        if let Err(e) = self.network_policy() {
            return Err(ConfigError::Invalid {
                key: "delivery.allow_networks",
                why: e.to_string(),
            });
        }
        if d.pending_cap_interval_ms == 0 {
            return invalid("delivery.pending_cap_interval_ms", "must be at least 1");
        }
        if !(100..=60_000).contains(&d.health_flush_ms) {
            return invalid("delivery.health_flush_ms", "must be from 100 to 60000");
        }
        if self.schema.flush_interval_ms == 0 {
            return invalid("schema.flush_interval_ms", "must be at least 1");
        }
        if self.schema.max_entries_per_source == 0 {
            return invalid("schema.max_entries_per_source", "must be at least 1");
        }
        if self.personas.poll_interval_ms == 0 {
            return invalid("personas.poll_interval_ms", "must be at least 1");
        }
        if self.personas.lease_ttl_secs == 0 {
            return invalid("personas.lease_ttl_secs", "must be at least 1");
        }
        if self.personas.space_id.is_empty() || self.personas.space_id.len() > 100 {
            return invalid("personas.space_id", "must be 1 to 100 characters");
        }
        if self.retention.interval_secs == 0 {
            return invalid("retention.interval_secs", "must be at least 1");
        }
        if self.audit.prune_interval_secs == 0 {
            return invalid("audit.prune_interval_secs", "must be at least 1");
        }
        if self.audit.prune_batch == 0 {
            return invalid("audit.prune_batch", "must be at least 1");
        }
        if let Some((key, why)) = self.alerts.problem() {
            return Err(ConfigError::Invalid { key, why });
        }
        self.http.validate()?;
        self.metrics.validate()
    }

    /// The network guard `delivery.allow_networks` describes.
    pub fn network_policy(
        &self,
    ) -> Result<sluice_outbound::NetworkPolicy, sluice_outbound::CidrError> {
        let allow = self
            .delivery
            .allow_networks
            .iter()
            .map(|c| c.parse())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(sluice_outbound::NetworkPolicy::new(allow))
    }

    /// Which header values are credentials.
    pub fn masker(&self) -> sluice_outbound::Masker {
        sluice_outbound::Masker::new(&self.delivery.sensitive_headers)
    }

    pub fn limits(&self) -> sluice_model::Limits {
        sluice_model::Limits {
            max_call_bytes: self.limits.max_call_bytes,
            max_batch_bytes: self.limits.max_batch_bytes,
            max_batch_events: self.limits.max_batch_events,
        }
    }
}
