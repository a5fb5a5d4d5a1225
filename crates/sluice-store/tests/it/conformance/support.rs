//! Builders and shortcuts shared by the checks.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use sluice_store::keys::hash_secret;
use sluice_store::{
    AppendRequest, Attempt, AttemptReport, DeliveryFilter, DeliveryRecord, NewDestination,
    NewEvent, NewSource, Outcome, Source, Store, WebhookSettings, WebhookUrl,
};

pub(super) type Shared = Arc<dyn Store>;

/// 2024-03-01T12:00:00Z: the fixed "now" of the checks.
pub(super) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_709_294_400, 0).expect("fixed time is valid")
}

/// `t0` plus `secs` seconds.
pub(super) fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

/// The write key of the source with `id` in these checks.
pub(super) fn key_hash(id: &str) -> String {
    hash_secret(&format!("write-key-{id}"))
}

pub(super) fn new_source(id: &str) -> NewSource {
    NewSource {
        id: id.into(),
        name: format!("Source {id}"),
        enabled: true,
        write_key_hash: key_hash(id),
        write_key_hint: "writ…".into(),
    }
}

pub(super) async fn source(store: &Shared, id: &str) -> Source {
    store
        .create_source(new_source(id))
        .await
        .expect("create source")
}

pub(super) fn settings(url: &str) -> WebhookSettings {
    WebhookSettings {
        urls: vec![WebhookUrl {
            url: url.into(),
            headers: vec![("X-Team".into(), "data".into())],
        }],
        shared_secret: Some("s3cret".into()),
        ..WebhookSettings::default()
    }
}

pub(super) fn new_destination(id: &str, source_ids: &[&str]) -> NewDestination {
    NewDestination {
        id: id.into(),
        name: format!("Destination {id}"),
        kind: "Webhooks".into(),
        enabled: true,
        settings: settings("https://example.test/hook"),
        source_ids: source_ids.iter().map(|s| s.to_string()).collect(),
    }
}

pub(super) fn event(message_id: &str, destination_ids: &[&str]) -> NewEvent {
    NewEvent {
        message_id: message_id.into(),
        event_type: "track".into(),
        body: format!(r#"{{"messageId":"{message_id}","type":"track"}}"#),
        destination_ids: destination_ids.iter().map(|d| d.to_string()).collect(),
        ..NewEvent::default()
    }
}

/// Appends `events` for `source_id`, received at `received_at`.
pub(super) async fn append(
    store: &Shared,
    source_id: &str,
    received_at: DateTime<Utc>,
    events: Vec<NewEvent>,
) {
    store
        .append(AppendRequest {
            source_id: source_id.into(),
            received_at,
            events,
        })
        .await
        .expect("append");
}

/// Every delivery matching `filter` (its limit ignored), newest first.
pub(super) async fn deliveries(store: &Shared, filter: DeliveryFilter) -> Vec<DeliveryRecord> {
    store
        .list_deliveries(&DeliveryFilter {
            limit: 10_000,
            ..filter
        })
        .await
        .expect("list deliveries")
}

/// Deliveries to `destination_id`, newest first.
pub(super) async fn deliveries_to(store: &Shared, destination_id: &str) -> Vec<DeliveryRecord> {
    deliveries(
        store,
        DeliveryFilter {
            destination_id: Some(destination_id.into()),
            ..DeliveryFilter::default()
        },
    )
    .await
}

/// One attempt of round `n` at `when` answered with `status`.
pub(super) fn attempt(delivery_id: i64, n: u32, when: DateTime<Utc>, status: u16) -> Attempt {
    Attempt {
        delivery_id,
        attempt: n,
        at: when,
        url: "https://example.test/hook".into(),
        status: Some(status),
        error: None,
        latency_ms: 12,
        response: Some("ok".into()),
    }
}

/// A report of one attempt at `when` with `status` and `outcome`.
pub(super) fn report(
    delivery_id: i64,
    n: u32,
    when: DateTime<Utc>,
    status: u16,
    outcome: Outcome,
) -> AttemptReport {
    AttemptReport {
        delivery_id,
        at: when,
        attempts: vec![attempt(delivery_id, n, when, status)],
        outcome,
    }
}
