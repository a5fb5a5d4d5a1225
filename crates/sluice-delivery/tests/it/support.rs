//! Shared fixtures: a real SQLite store in a temp dir, the real engine with
//! short timings, and functions that create destinations and append events.

use sluice_store::CatalogStore;
use sluice_store::DeliveryStore;
use sluice_store::EventStore;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Value, json};
use sluice_delivery::{DeliveryConfig, DeliveryEngine, EngineHandle};
use sluice_outbound::NetworkPolicy;
use sluice_store::sqlite::{SqliteConfig, SqliteStore};
use sluice_store::{
    AppendRequest, Attempt, DeliveryFilter, DeliveryRecord, DeliveryState, NewDestination,
    NewEvent, NewSource, WebhookSettings, WebhookUrl,
};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const SOURCE: &str = "src_1";
pub const WAIT: Duration = Duration::from_secs(10);

/// Timings that run the whole policy in well under a second per retry.
pub fn fast_config() -> DeliveryConfig {
    DeliveryConfig {
        timeout: Duration::from_millis(300),
        retry_window: Duration::from_secs(30),
        backoff_base: Duration::from_millis(30),
        backoff_cap: Duration::from_millis(120),
        max_retry_after: Duration::from_secs(5),
        concurrency_per_destination: 8,
        max_queued_per_destination: 8,
        max_in_flight: 64,
        claim_batch: 32,
        poll_interval: Duration::from_millis(50),
        lease: Duration::from_secs(5),
        destination_cache_ttl: Duration::from_millis(50),
        shutdown_grace: Duration::from_secs(1),
        response_body_cap: 4096,
        extra_ca_file: None,
        // Every receiver in these tests listens on loopback.
        network: loopback_allowed(),
        masker: Default::default(),
    }
}

/// The guard with loopback allowed: the one place these tests open it.
pub fn loopback_allowed() -> NetworkPolicy {
    NetworkPolicy::new(vec![
        "127.0.0.0/8".parse().expect("cidr"),
        "::1/128".parse().expect("cidr"),
    ])
}

pub async fn open_store(path: &Path) -> Arc<SqliteStore> {
    let store = SqliteStore::open(SqliteConfig::new(path))
        .await
        .expect("open sqlite store");
    Arc::new(store)
}

/// A store with one source, in a temp dir kept alive by the returned guard.
pub async fn new_store() -> (TempDir, Arc<SqliteStore>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(&dir.path().join("sluice.db")).await;
    store
        .create_source(NewSource {
            id: SOURCE.into(),
            name: "test".into(),
            enabled: true,
            write_key_hash: "hash".into(),
            write_key_hint: "wk_".into(),
        })
        .await
        .expect("create source");
    (dir, store)
}

/// A running engine and the switch that stops it.
pub struct Running {
    pub handle: EngineHandle,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Running {
    pub fn start(store: Arc<SqliteStore>, config: DeliveryConfig) -> Running {
        let (tx, rx) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let (handle, task) = DeliveryEngine::start(store, config, shutdown).expect("engine starts");
        Running {
            handle,
            stop: Some(tx),
            task,
        }
    }

    /// Graceful shutdown: returns once in-flight reports are written.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(WAIT, &mut self.task)
            .await
            .expect("engine stops within the grace")
            .expect("engine task ends cleanly");
    }
}

pub fn url(url: &str) -> WebhookUrl {
    WebhookUrl {
        url: url.to_owned(),
        headers: Vec::new(),
    }
}

pub async fn destination(
    store: &SqliteStore,
    id: &str,
    urls: Vec<WebhookUrl>,
    secret: Option<&str>,
    enabled: bool,
) -> String {
    store
        .create_destination(NewDestination {
            id: id.into(),
            name: id.into(),
            kind: "Webhooks".into(),
            enabled,
            settings: WebhookSettings {
                urls,
                shared_secret: secret.map(str::to_owned),
                ..WebhookSettings::default()
            },
            source_ids: vec![SOURCE.into()],
        })
        .await
        .expect("create destination");
    id.to_owned()
}

/// Creates an enabled destination connected to the test source with
/// `settings` as given.
pub async fn destination_with(store: &SqliteStore, id: &str, settings: WebhookSettings) -> String {
    store
        .create_destination(NewDestination {
            id: id.into(),
            name: id.into(),
            kind: "Webhooks".into(),
            enabled: true,
            settings,
            source_ids: vec![SOURCE.into()],
        })
        .await
        .expect("create destination");
    id.to_owned()
}

/// A stored (enriched) track event body.
pub fn track(message_id: &str) -> Value {
    json!({
        "type": "track", "messageId": message_id, "userId": "u-1",
        "event": "Order Completed", "properties": {"total": 12.5, "n": 1.0},
        "context": {"ip": "203.0.113.9", "library": {"name": "test"}},
        "integrations": {}, "timestamp": "2024-05-01T12:00:00.250Z",
        "receivedAt": "2024-05-01T12:00:00.270Z",
    })
}

/// Appends events (as stored bodies) routed to `destinations`.
pub async fn append(store: &SqliteStore, bodies: &[Value], destinations: &[&str]) {
    let events = bodies
        .iter()
        .map(|body| NewEvent {
            message_id: body["messageId"].as_str().unwrap_or("m").to_owned(),
            event_type: body["type"].as_str().unwrap_or("track").to_owned(),
            body: body.to_string(),
            destination_ids: destinations.iter().map(|d| (*d).to_owned()).collect(),
            ..NewEvent::default()
        })
        .collect();
    store
        .append(AppendRequest {
            source_id: SOURCE.into(),
            received_at: Utc::now(),
            events,
        })
        .await
        .expect("append");
}

/// The deliveries of one message.
pub async fn deliveries(store: &SqliteStore, message_id: &str) -> Vec<DeliveryRecord> {
    store
        .list_deliveries(&DeliveryFilter {
            message_id: Some(message_id.into()),
            limit: 100,
            ..DeliveryFilter::default()
        })
        .await
        .expect("list deliveries")
}

/// Polls until the message's only delivery reaches `state`.
pub async fn wait_state(
    store: &SqliteStore,
    message_id: &str,
    state: DeliveryState,
) -> DeliveryRecord {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = deliveries(store, message_id).await;
        if let Some(d) = found.iter().find(|d| d.state == state) {
            return d.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{message_id} never reached {state:?}: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn attempts(store: &SqliteStore, delivery_id: i64) -> Vec<Attempt> {
    store
        .list_attempts(delivery_id)
        .await
        .expect("list attempts")
}
