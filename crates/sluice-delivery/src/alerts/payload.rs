//! The alert message (docs/alerts.md) and its Standard Webhooks headers.

use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::json;
use sluice_signing::standard;

use super::incident::{Event, EventKind};
use crate::sender::StandardHeaders;

/// One alert to send: its body and the `webhook-id` kept across retries.
#[derive(Debug, Clone)]
pub(super) struct Alert {
    pub id: String,
    pub body: Bytes,
}

/// Builds the alert for `event`. `incident` names the incident (the same
/// in its opening and its recovery).
pub(super) fn build(
    event: &Event,
    name: &str,
    incident: &str,
    window: Duration,
    node: &str,
    now: DateTime<Utc>,
) -> Alert {
    let c = &event.counts;
    let opened_ago = Instant::now().saturating_duration_since(event.opened);
    let opened_at = now - chrono::Duration::from_std(opened_ago).unwrap_or_default();
    let mut data = json!({
        "incident_id": incident,
        "destination_id": event.destination_id,
        "destination_name": name,
        "reason": event.reason.as_str(),
        "success_rate": c.rate(),
        "window_secs": window.as_secs_f64(),
        "attempts": c.attempts,
        "successes": c.successes,
        "failures": c.attempts - c.successes,
        "dead": c.dead,
        "pending": c.pending,
        "opened_at": opened_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "node": node,
    });
    if event.kind == EventKind::Recovered {
        data["duration_secs"] = json!(opened_ago.as_secs());
    }
    if let Some(message_id) = &c.message_id {
        data["message_id"] = json!(message_id);
        data["error"] = json!(c.error);
    }
    let body = json!({
        "type": event.kind.as_str(),
        "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": data,
    });
    Alert {
        id: standard::webhook_id(incident, event.kind.as_str()),
        body: Bytes::from(body.to_string()),
    }
}

/// The headers of one try at `now`, signed with `key`.
pub(super) fn headers(key: &[u8], alert: &Alert, now: DateTime<Utc>) -> StandardHeaders {
    let timestamp = now.timestamp();
    StandardHeaders {
        id: alert.id.clone(),
        timestamp,
        signature: standard::signature_header(&[key], &alert.id, timestamp, &alert.body),
    }
}
