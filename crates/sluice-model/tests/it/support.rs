//! Shared fixtures: a pinned request context and functions that make calls.

use std::net::{IpAddr, Ipv4Addr};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_model::{
    Endpoint, Envelope, Event, EventType, Limits, RequestContext, ValidationError, parse_request,
};

/// The arrival time of every test request: the one of the clock-skew
/// example in docs/collection-api.md.
pub const RECEIVED_AT: &str = "2024-05-06T19:11:01.266Z";
pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7));

pub fn ctx() -> RequestContext {
    RequestContext {
        received_at: at(RECEIVED_AT),
        client_ip: Some(CLIENT_IP),
    }
}

pub fn at(text: &str) -> DateTime<Utc> {
    sluice_model::time::parse(text).expect("test timestamp parses")
}

pub fn single_with(
    event_type: EventType,
    body: &str,
    limits: &Limits,
) -> Result<Envelope, ValidationError> {
    parse_request(
        Endpoint::Single(event_type),
        body.as_bytes(),
        &ctx(),
        limits,
    )
}

pub fn single(event_type: EventType, body: &str) -> Result<Envelope, ValidationError> {
    single_with(event_type, body, &Limits::default())
}

pub fn batch_with(body: &str, limits: &Limits) -> Result<Envelope, ValidationError> {
    parse_request(Endpoint::Batch, body.as_bytes(), &ctx(), limits)
}

pub fn batch(body: &str) -> Result<Envelope, ValidationError> {
    batch_with(body, &Limits::default())
}

/// The only event of an accepted request.
pub fn one(result: Result<Envelope, ValidationError>) -> Event {
    let mut envelope = result.expect("request accepted");
    assert_eq!(envelope.events.len(), 1, "one event expected");
    envelope.events.remove(0)
}

pub fn rejected(result: Result<Envelope, ValidationError>) -> ValidationError {
    match result {
        Ok(envelope) => panic!("expected rejection, got {envelope:?}"),
        Err(error) => error,
    }
}

/// The body's keys in order.
pub fn keys(event: &Event) -> Vec<String> {
    event.body().keys().cloned().collect()
}

pub fn field(event: &Event, key: &str) -> Value {
    event.body().get(key).cloned().unwrap_or(Value::Null)
}

/// `prefix` + a string of `x` + `suffix`, exactly `len` bytes long.
pub fn padded(prefix: &str, suffix: &str, len: usize) -> String {
    let fill = len
        .checked_sub(prefix.len() + suffix.len())
        .expect("target length fits the frame");
    format!("{prefix}{}{suffix}", "x".repeat(fill))
}

/// A valid track call of exactly `len` bytes.
pub fn track_call(len: usize) -> String {
    padded(
        r#"{"type":"track","event":"E","userId":"u","pad":""#,
        r#""}"#,
        len,
    )
}
