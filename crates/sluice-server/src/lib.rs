//! The Sluice server: configuration, start-up, shutdown, and the wiring of
//! store → API → delivery, and the profile engine.
//!
//! Modules:
//! - [`config`]: layered configuration (defaults, TOML file, `SLUICE_*`).
//! - [`bootstrap`]: sources and destinations declared in a file.
//! - [`admin_token`]: the admin token, configured or generated once.
//! - [`tasks`]: background upkeep (routing refresh, retention).
//! - [`audit_prune`]: the audit log's retention.
//! - [`delivery_metrics`]: the delivery engine's counters on `/metrics`.
//! - [`health`]: the delivery health tally merged into the store, pruned.
//! - [`membership`]: this node's heartbeat, and the live node count that
//!   splits per-destination concurrency.
//! - [`serve`]: the HTTP accept loop with its timeouts, connection cap and
//!   bounded shutdown.
//! - [`rlimit`]: the open-file limit.
//! - [`privacy`]: the suppression sync and the regulation job.
//! - [`backup`]: `sluice backup`, the embedded store copied online.
//!
//! [`run`] is what the `sluice` binary calls and what tests call, on a
//! listener bound to port 0.

pub mod admin_token;
pub mod alerts;
pub mod audit_prune;
pub mod backup;
pub mod bootstrap;
pub mod config;
pub mod delivery_metrics;
pub mod health;
pub mod membership;
pub mod privacy;
mod profile_metrics;
pub mod rlimit;
pub mod serve;
pub mod tasks;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::registry::Registry;
use sluice_api::admin::webhook_settings;
use sluice_api::{AppState, BodyBudget, Metrics, MetricsAccess, RouteTable};
use sluice_delivery::{DeliveryConfig, DeliveryEngine, Hooks};
use sluice_schema::Tracker;
use sluice_store::Store;
use sluice_store::keys;
use sluice_store::postgres::{PostgresConfig, PostgresStore};
use sluice_store::sqlite::{SqliteConfig, SqliteStore, Synchronous};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::StorageBackend;
pub use config::Config;

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("store: {0}")]
    Store(#[from] sluice_store::StoreError),
    #[error(transparent)]
    Bootstrap(#[from] bootstrap::BootstrapError),
    #[error("delivery: {0}")]
    Delivery(#[from] sluice_delivery::DeliveryError),
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
    #[error("backup: {0}")]
    Backup(#[from] sluice_store::sqlite::BackupError),
}

/// Things `run` reports to its caller while starting.
pub trait Announce: Send + Sync {
    /// An admin token was generated; it is shown this once and only its hash
    /// is stored.
    fn admin_token_generated(&self, token: &str);
}

/// Prints announcements on standard error, outside the log stream so the
/// token never lands in log storage.
pub struct StderrAnnounce;

impl Announce for StderrAnnounce {
    fn admin_token_generated(&self, token: &str) {
        eprintln!(
            "\n  Generated admin token (shown once; set SLUICE_ADMIN_TOKEN to choose your own):\n\n    {token}\n"
        );
    }
}

/// [`StderrAnnounce`] for `log_format = "json"`: the same notice as one JSON
/// object on one line, laid out as the JSON log lines around it (timestamp,
/// level, fields, target), so the stream stays one object per line.
pub struct JsonStderrAnnounce;

impl Announce for JsonStderrAnnounce {
    fn admin_token_generated(&self, token: &str) {
        eprintln!("{}", token_notice_json(token, chrono::Utc::now()));
    }
}

fn token_notice_json(token: &str, now: chrono::DateTime<chrono::Utc>) -> serde_json::Value {
    serde_json::json!({
        "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": "WARN",
        "fields": {
            "message": "generated admin token (shown once; set SLUICE_ADMIN_TOKEN to choose your own)",
            "admin_token": token,
        },
        "target": "sluice_server",
    })
}

/// The opened store, kept concrete so that `run` can close it cleanly.
pub enum OpenStore {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl OpenStore {
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            OpenStore::Sqlite(s) => s.clone(),
            OpenStore::Postgres(p) => p.clone(),
        }
    }

    /// Finishes queued writes and releases the database.
    pub async fn close(&self) {
        match self {
            OpenStore::Sqlite(s) => s.close().await,
            OpenStore::Postgres(p) => p.close().await,
        }
    }
}

/// Opens the store named by `config`.
pub async fn open_store(config: &Config) -> Result<OpenStore, ServerError> {
    match config.storage.backend {
        StorageBackend::Sqlite => {
            let mut sqlite = SqliteConfig::new(config.sqlite_path());
            sqlite.synchronous = match config.storage.synchronous.as_str() {
                "normal" => Synchronous::Normal,
                _ => Synchronous::Full,
            };
            sqlite.dedup_window = config.storage.dedup_window();
            sqlite.secure_delete = config.storage.secure_delete;
            Ok(OpenStore::Sqlite(Arc::new(
                SqliteStore::open(sqlite).await?,
            )))
        }
        StorageBackend::Postgres => {
            let url = config
                .storage
                .postgres_url
                .clone()
                .ok_or(config::ConfigError::Invalid {
                    key: "storage.postgres_url",
                    why: "is required when storage.backend = \"postgres\"".into(),
                })?;
            let mut pg = PostgresConfig::new(url);
            pg.pool_size = config.storage.postgres_pool_size;
            pg.schema = config.storage.postgres_schema.clone();
            pg.dedup_window = config.storage.dedup_window();
            Ok(OpenStore::Postgres(Arc::new(
                PostgresStore::open(pg).await?,
            )))
        }
    }
}

fn delivery_config(config: &Config) -> Result<DeliveryConfig, ServerError> {
    let d = &config.delivery;
    Ok(DeliveryConfig {
        timeout: Duration::from_millis(d.timeout_ms),
        retry_window: Duration::from_secs(d.retry_window_secs),
        backoff_base: Duration::from_millis(d.backoff_base_ms),
        backoff_cap: Duration::from_millis(d.backoff_cap_ms),
        concurrency_per_destination: d.concurrency_per_destination,
        extra_ca_file: d.extra_ca_file.clone(),
        network: outbound_rules(config)?.network,
        masker: config.masker(),
        ..DeliveryConfig::default()
    }
    .sized_for_timeout_and_concurrency())
}

/// The network guard and credential masking, from `delivery.*`.
fn outbound_rules(config: &Config) -> Result<webhook_settings::Rules, ServerError> {
    let network = config
        .network_policy()
        .map_err(|e| config::ConfigError::Invalid {
            key: "delivery.allow_networks",
            why: e.to_string(),
        })?;
    Ok(webhook_settings::Rules {
        network,
        masker: config.masker(),
    })
}

fn profile_config(config: &Config) -> sluice_profiles::EngineConfig {
    let p = &config.personas;
    sluice_profiles::EngineConfig {
        poll_interval: Duration::from_millis(p.poll_interval_ms),
        lease_ttl: Duration::from_secs(p.lease_ttl_secs),
        batch: p.batch_events.max(1),
        defer_to_ingest: p.defer_to_ingest,
        schedule_ahead: Duration::from_secs(p.schedule_ahead_secs),
        space_id: p.space_id.clone(),
        ..sluice_profiles::EngineConfig::default()
    }
}

/// Runs Sluice on `listener` until `shutdown` completes, then stops
/// accepting, finishes in-flight requests (and so their commits), lets
/// delivery wind down, and returns.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    announce: &dyn Announce,
) -> Result<(), ServerError> {
    let opened = open_store(&config).await?;
    let store = opened.shared();
    let rules = outbound_rules(&config)?;
    if rules.network.allows_everything() {
        tracing::warn!(
            "delivery.allow_networks allows every address: the SSRF guard is off, and \
             destinations can reach loopback, private networks and cloud metadata"
        );
    } else if !rules.network.allowed().is_empty() {
        let allowed: Vec<String> = rules
            .network
            .allowed()
            .iter()
            .map(ToString::to_string)
            .collect();
        tracing::info!(allowed = %allowed.join(","), "delivery may reach these non-public networks");
    }
    let token = admin_token::resolve(store.as_ref(), config.admin_token.as_deref()).await?;
    if let Some(generated) = &token.generated {
        announce.admin_token_generated(generated);
    }
    if let Some(path) = &config.bootstrap {
        bootstrap::apply(store.as_ref(), path, &rules).await?;
    }

    let (stop_tx, stop_rx) = watch::channel(false);
    let engine_stop = wait_for(stop_rx.clone());
    let delivery = delivery_config(&config)?;
    let alerting = alerts::start(&config, &delivery, store.clone(), stop_rx.clone())?;
    let (sink, alerts_view) = match &alerting {
        Some((sink, view, _)) => (Some(sink.clone()), Some(view.clone())),
        None => (None, None),
    };
    let tally = config
        .delivery
        .health
        .then(|| Arc::new(sluice_store::health::Tally::new()));
    let hooks = Hooks {
        alerts: sink,
        tally: tally.clone(),
    };
    let (engine, engine_task) =
        DeliveryEngine::start_with(store.clone(), delivery, hooks, engine_stop)?;
    let health_merge = tally.clone().map(|tally| {
        let every = Duration::from_millis(config.delivery.health_flush_ms);
        health::spawn(store.clone(), tally, every, stop_rx.clone())
    });
    let heartbeat = membership::spawn(store.clone(), engine.clone(), stop_rx.clone());

    let profiles = config.personas.enabled.then(|| {
        let wake_delivery = engine.clone();
        sluice_profiles::engine::start(
            store.clone(),
            profile_config(&config),
            Arc::new(move || wake_delivery.notify()),
            wait_for(stop_rx.clone()),
        )
    });
    let wake_profiles = profiles.as_ref().map(|(handle, _)| handle.clone());

    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    delivery_metrics::register(&mut registry, engine.clone());
    if let Some(handle) = &wake_profiles {
        profile_metrics::register(&mut registry, handle.clone());
    }
    let capped = prometheus_client::metrics::counter::Counter::<u64>::default();
    registry.register(
        "sluice_deliveries_dead_lettered_pending_cap",
        "Pending deliveries dead-lettered because their destination was over delivery.max_pending_per_destination",
        capped.clone(),
    );
    let routes = RouteTable::load(store.clone()).await?;
    let schema = config
        .schema
        .enabled
        .then(|| Arc::new(Tracker::new(config.schema.max_entries_per_source)));
    let suppressions = Arc::new(sluice_api::suppression::Suppressions::new());
    suppressions.refresh(store.as_ref()).await?;
    let suppression_sync =
        privacy::spawn_sync(store.clone(), suppressions.clone(), stop_rx.clone());
    let wake_for_regulations = engine.clone();
    let regulation_job = privacy::spawn_job(
        store.clone(),
        privacy::JobConfig {
            poll_interval: Duration::from_millis(config.personas.poll_interval_ms),
            lease_ttl: Duration::from_secs(config.personas.lease_ttl_secs),
            settle: privacy::settle_time(Duration::from_millis(config.storage.timeout_ms)),
        },
        Arc::new(move || wake_for_regulations.notify()),
        stop_rx.clone(),
    );
    let ready = Arc::new(AtomicBool::new(false));
    let notify = engine.clone();
    let invalidate = engine.clone();
    let app = Arc::new(AppState {
        store: store.clone(),
        store_timeout: Duration::from_millis(config.storage.timeout_ms),
        routes: routes.clone(),
        suppressions,
        limits: config.limits(),
        trust_forwarded_for: config.trust_forwarded_for,
        admin_token_hash: token.hash,
        metrics_access: MetricsAccess {
            token_hash: config.metrics.token.as_deref().map(keys::hash_secret),
            separate_listener: config.metrics.listen.is_some(),
        },
        bodies: BodyBudget::new(
            config.http.body_budget_bytes,
            config.http.anonymous_body_budget_bytes,
            Duration::from_millis(config.http.body_timeout_ms),
        ),
        on_commit: Arc::new(move || {
            notify.notify();
            if let Some(p) = &wake_profiles {
                p.notify();
            }
        }),
        on_config_change: Arc::new(move || invalidate.invalidate_destinations()),
        metrics,
        registry: Arc::new(registry),
        ready: ready.clone(),
        outbound: rules,
        schema: schema.clone(),
        incidents: alerts::incidents(alerts_view),
        tally: tally.clone(),
    });
    let upkeep = tasks::spawn(
        store.clone(),
        routes,
        &config.retention,
        tasks::PendingCap::new(&config.delivery, capped),
        stop_rx.clone(),
    );
    let audit_pruner = audit_prune::spawn(store.clone(), &config.audit, stop_rx.clone());
    let schema_flusher = schema.clone().map(|tracker| {
        tasks::spawn_schema_flush(store.clone(), tracker, &config.schema, stop_rx.clone())
    });

    // The dashboard's pages sit next to the APIs; it adds no fallback, so
    // unknown paths keep the API's JSON 404.
    let router = sluice_api::router(app.clone()).merge(sluice_dashboard::router(app.clone()));
    let service = sluice_api::App::new(app.clone(), router);
    let opts = serve_options(&config);
    let metrics_side = match config.metrics.listen {
        Some(addr) => {
            let side = serve::bind(addr)?;
            tracing::info!(addr = %side.local_addr()?, "metrics listening");
            Some(serve::spawn_side_listener(
                side,
                sluice_api::App::router_only(sluice_api::metrics_router(app)),
                opts.clone(),
                stop_rx.clone(),
            ))
        }
        None => None,
    };
    tracing::info!(
        addr = %listener.local_addr()?,
        storage = ?config.storage.backend,
        data_dir = %config.data_dir.display(),
        max_connections = opts.max_connections,
        "sluice listening"
    );
    ready.store(true, Ordering::Release);
    let ready_flag = ready.clone();
    serve::serve(listener, service, opts, async move {
        shutdown.await;
        ready_flag.store(false, Ordering::Release);
    })
    .await;

    let _ = stop_tx.send(true);
    if let Some(side) = metrics_side {
        let _ = side.await;
    }
    if let Err(e) = engine_task.await {
        tracing::error!(error = %e, "delivery engine task failed");
    }
    if let (Some(merge), Some(tally)) = (health_merge, &tally) {
        let _ = merge.await;
        // Delivery and ingest have stopped counting: merge the rest.
        health::flush(store.as_ref(), tally).await;
    }
    if let Some((_, task)) = profiles
        && let Err(e) = task.await
    {
        tracing::error!(error = %e, "profile engine task failed");
    }
    if let Some((_, _, task)) = alerting {
        let _ = task.await;
    }
    upkeep.abort();
    if let Some(pruner) = audit_pruner {
        pruner.abort();
    }
    if let Some(flusher) = schema_flusher {
        // It writes what is pending once more on its way out.
        if let Err(e) = flusher.await {
            tracing::error!(error = %e, "schema flush task failed");
        }
    }
    let _ = regulation_job.await;
    let _ = suppression_sync.await;
    let _ = heartbeat.await;
    opened.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// The accept loop's limits, with the connection cap lowered below the
/// process's open-file limit.
pub fn serve_options(config: &Config) -> serve::ServeOptions {
    let h = &config.http;
    let soft = rlimit::nofile().map(|(soft, _)| soft);
    let max_connections = rlimit::effective_max_connections(h.max_connections, soft);
    if max_connections < h.max_connections {
        tracing::warn!(
            configured = h.max_connections,
            used = max_connections,
            open_file_limit = soft,
            "http.max_connections lowered to stay below the open-file limit"
        );
    }
    serve::ServeOptions {
        head_timeout: Duration::from_millis(h.head_timeout_ms),
        keep_alive_idle: Duration::from_millis(h.keep_alive_idle_ms),
        max_connections,
        max_head_bytes: h.max_head_bytes,
        shutdown_grace: Duration::from_millis(h.shutdown_grace_ms),
    }
}

/// A future that completes once the watch flips to true (or its sender is gone).
pub(crate) async fn wait_for(mut rx: watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::token_notice_json;

    #[test]
    fn the_json_token_notice_is_one_log_shaped_line() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let line = token_notice_json("tok-123", at).to_string();
        assert!(!line.contains('\n'), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(back["level"], "WARN");
        assert_eq!(back["fields"]["admin_token"], "tok-123");
        assert_eq!(back["timestamp"], "2027-01-15T08:00:00.000000Z");
    }
}
