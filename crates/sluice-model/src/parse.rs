//! Request body → validated, enriched events.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::{Endpoint, EventType, Limits, ValidationError};

/// Facts about the HTTP request that enrichment needs.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Server time when the request arrived; becomes `receivedAt`.
    pub received_at: DateTime<Utc>,
    /// The client's address (peer, or trusted `X-Forwarded-For`); fills
    /// `context.ip` when the client did not set it.
    pub client_ip: Option<IpAddr>,
}

/// A parsed request: the write key found in the body, if any, and its events.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub write_key: Option<String>,
    pub events: Vec<Event>,
}

/// One validated, enriched call.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub message_id: String,
    pub event_type: EventType,
    pub user_id: Option<String>,
    pub anonymous_id: Option<String>,
    pub received_at: DateTime<Utc>,
    pub timestamp: DateTime<Utc>,
    /// The whole message as stored and later delivered: the client's keys
    /// (batch-level `context`/`integrations` merged in, `writeKey` removed)
    /// plus `type`, `messageId`, `receivedAt`, `timestamp`,
    /// `originalTimestamp` (when the client sent one), `sentAt` (when known)
    /// and `context.ip`, timestamps rendered by [`crate::time::format`].
    pub body: Map<String, Value>,
}

/// Parses, validates and enriches one collection request. A request with any
/// invalid item is rejected whole.
pub fn parse_request(
    endpoint: Endpoint,
    body: &[u8],
    ctx: &RequestContext,
    limits: &Limits,
) -> Result<Envelope, ValidationError> {
    let _ = (endpoint, body, ctx, limits);
    Err(ValidationError::new(
        crate::ErrorCode::InvalidJson,
        "not implemented yet",
    ))
}
