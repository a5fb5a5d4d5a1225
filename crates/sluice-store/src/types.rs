//! Records the store keeps and the requests it takes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A source: one write key, many calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    /// SHA-256 of the write key, hex. The key itself is never stored.
    pub write_key_hash: String,
    /// The first few characters of the write key, for display.
    pub write_key_hint: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input to [`crate::CatalogStore::create_source`]; the caller generates id and key.
#[derive(Debug, Clone)]
pub struct NewSource {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    pub write_key_hash: String,
    pub write_key_hint: String,
}

/// A partial update of a source; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct SourcePatch {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    /// New write key (hash, hint), set by rotation.
    pub write_key: Option<(String, String)>,
}

/// One webhook URL entry: the URL and the static headers sent with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookUrl {
    pub url: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// Settings of a Webhooks destination, as stored (secret in clear: it is
/// needed to sign; the admin API masks it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WebhookSettings {
    pub urls: Vec<WebhookUrl>,
    #[serde(default)]
    pub shared_secret: Option<String>,
    /// Standard Webhooks signing, when the destination opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard_webhooks: Option<StandardWebhooks>,
    /// Extra trusted CA certificates (PEM) for this destination only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// A destination's Standard Webhooks secrets (`whsec_…`, in clear: needed to
/// sign). After a rotation the old secret keeps signing, beside the new
/// one, until `previous_until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandardWebhooks {
    pub secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_until: Option<DateTime<Utc>>,
}

/// A destination instance. `kind` is the catalog name, `Webhooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Destination {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub enabled: bool,
    pub settings: WebhookSettings,
    /// Connected sources, sorted.
    pub source_ids: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input to [`crate::CatalogStore::create_destination`].
#[derive(Debug, Clone)]
pub struct NewDestination {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub enabled: bool,
    pub settings: WebhookSettings,
    pub source_ids: Vec<String>,
}

/// A partial update of a destination; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct DestinationPatch {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub settings: Option<WebhookSettings>,
    pub source_ids: Option<Vec<String>>,
}

/// One accepted collection request: committed atomically with its usage
/// counts and the deliveries it fans out to.
#[derive(Debug, Clone)]
pub struct AppendRequest {
    pub source_id: String,
    pub received_at: DateTime<Utc>,
    pub events: Vec<NewEvent>,
}

/// What [`crate::EventStore::append`] did with a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Appended {
    /// Events stored (and fanned out to their deliveries).
    pub stored: u64,
    /// Events dropped because their source had already committed their
    /// `messageId` within the deduplication window (or earlier in the same
    /// request): answered like stored ones, never stored or delivered again.
    pub duplicates: u64,
    /// Every delivery of the stored events was leased to this node's own
    /// delivery engine at the commit and handed to it ([`crate::local`]):
    /// none is left for a claim, so the engine need not be woken.
    pub handed: bool,
}

/// One event to store, with the destinations it must be delivered to.
#[derive(Debug, Clone, Default)]
pub struct NewEvent {
    pub message_id: String,
    pub event_type: String,
    /// The enriched message as JSON text.
    pub body: String,
    /// Destination ids to create pending deliveries for.
    pub destination_ids: Vec<String>,
    /// Set when a source rule blocked the call: it is stored (marked, in the
    /// `blocked` column) and counted, but has no deliveries.
    pub blocked: Option<Blocked>,
    /// Destinations whose filters dropped the event: `(destination id,
    /// filter name)`. Each gets a delivery in state `filtered`.
    pub filtered: Vec<(String, String)>,
    /// Per-destination bodies that differ from `body` (fields dropped by a
    /// destination filter): `(destination id, body)`.
    pub bodies: Vec<(String, String)>,
    /// The slot of the call's person ([`crate::person_slot`]), which
    /// decides the profile engine partition that reads it.
    pub person: u16,
}

impl NewEvent {
    /// The body `destination` is sent when its filter changed the event's.
    pub fn own_body(&self, destination: &str) -> Option<&str> {
        (self.bodies.iter())
            .find(|(d, _)| d == destination)
            .map(|(_, b)| b.as_str())
    }
}

/// Why a call was blocked: the rule, and the event name counted against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// `blocked_events` or `tracking_plan`.
    pub rule: String,
    pub event: String,
}

/// A stored event, as the debugger shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Store-assigned, increasing: the pagination cursor.
    pub seq: i64,
    pub source_id: String,
    pub message_id: String,
    pub event_type: String,
    pub received_at: DateTime<Utc>,
    pub body: String,
    /// The rule that blocked the call, if one did. Consumers of committed
    /// events (delivery, profiles) must skip blocked events.
    #[serde(default)]
    pub blocked: Option<String>,
}

/// Per-source, per-day usage counters (UTC days, `YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageDay {
    pub day: String,
    pub api_calls: u64,
    /// Events stored.
    pub events: u64,
    /// Events dropped as duplicates of a `messageId` the source had already
    /// committed within the deduplication window.
    #[serde(default)]
    pub duplicates: u64,
}

/// Lifecycle of a delivery (one event to one destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its next attempt (`next_attempt_at`).
    Pending,
    /// Some URL answered 2xx.
    Succeeded,
    /// Given up: non-retryable error, or retry window exhausted.
    Dead,
    /// Dropped without sending: destination deleted or switched off.
    Discarded,
    /// Never sent: a destination filter dropped the event at ingest. The
    /// filter's name is kept in `last_error`.
    Filtered,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Succeeded => "succeeded",
            DeliveryState::Dead => "dead",
            DeliveryState::Discarded => "discarded",
            DeliveryState::Filtered => "filtered",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            DeliveryState::Pending,
            DeliveryState::Succeeded,
            DeliveryState::Dead,
            DeliveryState::Discarded,
            DeliveryState::Filtered,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// A delivery the worker has leased and must attempt now.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    pub delivery_id: i64,
    pub destination_id: String,
    pub event_seq: i64,
    pub message_id: String,
    pub event_body: String,
    /// Attempts made before this one.
    pub attempts: u32,
    /// When the first attempt was made; `None` before the first attempt.
    pub first_attempt_at: Option<DateTime<Utc>>,
    /// When the event was received: where the retry window of a delivery
    /// that was never attempted is measured from.
    pub received_at: DateTime<Utc>,
}

impl DueDelivery {
    /// A delivery of `message_id` (stored as `event_seq`, sent as
    /// `event_body`) to `destination_id` that no attempt has been made of.
    pub fn unattempted(
        delivery_id: i64,
        event_seq: i64,
        destination_id: String,
        message_id: String,
        event_body: String,
        received_at: DateTime<Utc>,
    ) -> DueDelivery {
        DueDelivery {
            delivery_id,
            destination_id,
            event_seq,
            message_id,
            event_body,
            attempts: 0,
            first_attempt_at: None,
            received_at,
        }
    }
}

/// One HTTP attempt against one URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempt {
    pub delivery_id: i64,
    pub attempt: u32,
    pub at: DateTime<Utc>,
    pub url: String,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Transport error (timeout, TLS, connect), when no response arrived.
    pub error: Option<String>,
    pub latency_ms: u64,
    /// The start of the response body, truncated.
    pub response: Option<String>,
}

/// What the worker decided after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Succeeded,
    Retry { at: DateTime<Utc> },
    Dead { error: String },
    Discarded { reason: String },
}

/// The result of attempting one leased delivery.
#[derive(Debug, Clone)]
pub struct AttemptReport {
    pub delivery_id: i64,
    pub at: DateTime<Utc>,
    pub attempts: Vec<Attempt>,
    pub outcome: Outcome,
}

/// A delivery as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeliveryRecord {
    pub id: i64,
    pub destination_id: String,
    pub source_id: String,
    pub event_seq: i64,
    pub message_id: String,
    pub state: DeliveryState,
    pub attempts: u32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub first_attempt_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// Which deliveries to list or replay. Results are newest first; `before_id`
/// is the cursor (exclusive).
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub destination_id: Option<String>,
    pub message_id: Option<String>,
    pub state: Option<DeliveryState>,
    pub before_id: Option<i64>,
    pub limit: u32,
}
