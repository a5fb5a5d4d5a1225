//! One accepted call as a record of the Kafka shape's event log.
//!
//! In the database shapes ingest commits an event with its outbox: the
//! deliveries it decided (enabled destinations, minus the ones a filter
//! dropped, with the bodies filters changed). In the Kafka shape the record
//! carries the same decision, so delivery reads what ingest decided and a
//! destination edited afterwards does not re-route calls already accepted,
//! as in the other shapes.
//!
//! The value is JSON: the stored event itself is embedded as it is (not
//! re-escaped), beside the routing:
//!
//! ```json
//! {"v":1,"source":"src_1","at":1767225600000,"id":"msg-1","type":"track",
//!  "person":17,"to":["dst_1","dst_2"],"bodies":{"dst_2":{…}},"event":{…}}
//! ```
//!
//! `v` is the format's version; a reader refuses one it does not know
//! rather than guess. Fields added since are optional, absent when empty:
//! - `calls` and `dups`, on the first record of each API request: the
//!   request itself (1) and the calls it repeated within itself, which
//!   have no record; usage counts them as the database shapes do at ingest.
//! - `blocked`: `[rule, event name]` of a call a source rule blocked. It
//!   has no destinations; it is in the log so that it is counted.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{Blocked, NewEvent};

/// The format version this build writes and reads.
pub const VERSION: u8 = 1;

/// What a record says: the call, and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub source_id: String,
    pub received_at: DateTime<Utc>,
    pub message_id: String,
    pub event_type: String,
    /// The person's slot ([`crate::person_slot`]).
    pub person: u16,
    /// Destinations to deliver to.
    pub destination_ids: Vec<String>,
    /// Destinations whose filters changed the body: `(destination, body)`.
    pub bodies: Vec<(String, String)>,
    /// The enriched call as JSON text.
    pub body: String,
    /// What the record counts for besides itself.
    pub counts: RequestCounts,
    /// The rule that blocked the call, and its event name: nothing is
    /// delivered for it.
    pub blocked: Option<Blocked>,
}

/// What the first record of an API request counts for besides itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// API requests: 1 on a request's first record, else 0.
    pub calls: u32,
    /// Calls the request repeated within itself (same messageId), which
    /// have no record.
    pub duplicates: u32,
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("log record is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    #[error("log record of format version {0}, which this build does not read")]
    Version(u8),
}

/// Text fields are `Cow`: a value with a JSON escape in it (a quote or a
/// backslash in a client's messageId, say) cannot be borrowed from the
/// record and is read into a string of its own.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    v: u8,
    #[serde(borrow)]
    source: Cow<'a, str>,
    at: i64,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    person: u16,
    #[serde(default)]
    to: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    bodies: Vec<(Cow<'a, str>, &'a RawValue)>,
    #[serde(borrow)]
    event: &'a RawValue,
    #[serde(default, skip_serializing_if = "is_zero")]
    calls: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    dups: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blocked: Option<(Cow<'a, str>, Cow<'a, str>)>,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The record value of `event`, accepted from `source_id` at
/// `received_at`, counting also for `counts`, written straight from
/// ingest's event (no copy of its bodies). Bodies are JSON text ingest
/// produced; one that is not (never expected) is an error rather than a
/// broken record.
pub fn encode(
    source_id: &str,
    received_at: DateTime<Utc>,
    event: &NewEvent,
    counts: RequestCounts,
) -> Result<Vec<u8>, RecordError> {
    let mut bodies = Vec::with_capacity(event.bodies.len());
    for (destination, body) in &event.bodies {
        bodies.push((Cow::Borrowed(destination.as_str()), raw(body)?));
    }
    let wire = Wire {
        v: VERSION,
        source: Cow::Borrowed(source_id),
        at: received_at.timestamp_millis(),
        id: Cow::Borrowed(&event.message_id),
        kind: Cow::Borrowed(&event.event_type),
        person: event.person,
        to: event
            .destination_ids
            .iter()
            .map(|d| Cow::Borrowed(d.as_str()))
            .collect(),
        bodies,
        event: raw(&event.body)?,
        calls: counts.calls,
        dups: counts.duplicates,
        blocked: (event.blocked.as_ref()).map(|b| {
            (
                Cow::Borrowed(b.rule.as_str()),
                Cow::Borrowed(b.event.as_str()),
            )
        }),
    };
    Ok(serde_json::to_vec(&wire)?)
}

impl LogRecord {
    /// Reads a record's value.
    pub fn decode(value: &[u8]) -> Result<Self, RecordError> {
        let wire: Wire<'_> = serde_json::from_slice(value)?;
        if wire.v != VERSION {
            return Err(RecordError::Version(wire.v));
        }
        Ok(LogRecord {
            source_id: wire.source.into_owned(),
            received_at: DateTime::from_timestamp_millis(wire.at).unwrap_or_default(),
            message_id: wire.id.into_owned(),
            event_type: wire.kind.into_owned(),
            person: wire.person,
            destination_ids: wire.to.into_iter().map(Cow::into_owned).collect(),
            bodies: (wire.bodies.into_iter())
                .map(|(d, b)| (d.into_owned(), b.get().to_owned()))
                .collect(),
            body: wire.event.get().to_owned(),
            counts: RequestCounts {
                calls: wire.calls,
                duplicates: wire.dups,
            },
            blocked: wire.blocked.map(|(rule, event)| Blocked {
                rule: rule.into_owned(),
                event: event.into_owned(),
            }),
        })
    }

    /// The body `destination` is sent: its filtered one, else the call's.
    pub fn body_for(&self, destination: &str) -> &str {
        self.bodies
            .iter()
            .find(|(d, _)| d == destination)
            .map_or(self.body.as_str(), |(_, b)| b.as_str())
    }

    /// The call as ingest would append it to a store, with deliveries to
    /// `destinations` only: how a record enters the store's retry state
    /// after a first attempt that did not succeed.
    pub fn to_new_event(&self, destinations: &[String]) -> NewEvent {
        NewEvent {
            message_id: self.message_id.clone(),
            event_type: self.event_type.clone(),
            body: self.body.clone(),
            destination_ids: destinations.to_vec(),
            bodies: (self.bodies.iter())
                .filter(|(d, _)| destinations.contains(d))
                .cloned()
                .collect(),
            person: self.person,
            ..NewEvent::default()
        }
    }
}

fn raw(text: &str) -> Result<&RawValue, serde_json::Error> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_767_225_600_123).unwrap()
    }

    fn call() -> NewEvent {
        NewEvent {
            message_id: "msg-1".into(),
            event_type: "track".into(),
            person: 17,
            destination_ids: vec!["dst_1".into(), "dst_2".into()],
            bodies: vec![("dst_2".into(), r#"{"event":"Signed Up"}"#.into())],
            body: r#"{"event":"Signed Up","properties":{"plan":"pro \"x\""}}"#.into(),
            ..NewEvent::default()
        }
    }

    fn record() -> LogRecord {
        LogRecord::decode(&encode("src_1", at(), &call(), RequestCounts::default()).unwrap())
            .unwrap()
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let c = call();
        assert_eq!(
            record(),
            LogRecord {
                source_id: "src_1".into(),
                received_at: at(),
                message_id: c.message_id,
                event_type: c.event_type,
                person: c.person,
                destination_ids: c.destination_ids,
                bodies: c.bodies,
                body: c.body,
                counts: RequestCounts::default(),
                blocked: None,
            }
        );
    }

    #[test]
    fn a_requests_counts_and_a_block_read_back_and_are_absent_when_empty() {
        let plain =
            String::from_utf8(encode("src_1", at(), &call(), RequestCounts::default()).unwrap())
                .unwrap();
        assert!(
            !plain.contains("calls") && !plain.contains("blocked"),
            "{plain}"
        );
        let mut c = call();
        c.destination_ids.clear();
        c.blocked = Some(Blocked {
            rule: "blocked_events".into(),
            event: "Signed Up".into(),
        });
        let counts = RequestCounts {
            calls: 1,
            duplicates: 2,
        };
        let r = LogRecord::decode(&encode("src_1", at(), &c, counts).unwrap()).unwrap();
        assert_eq!(r.counts, counts);
        assert_eq!(r.blocked, c.blocked);
    }

    #[test]
    fn the_event_is_embedded_as_json_not_as_a_string() {
        let text =
            String::from_utf8(encode("src_1", at(), &call(), RequestCounts::default()).unwrap())
                .unwrap();
        assert!(text.contains(r#""event":{"event":"Signed Up""#), "{text}");
    }

    #[test]
    fn a_filtered_body_goes_only_to_its_destination() {
        let r = record();
        assert_eq!(r.body_for("dst_2"), r#"{"event":"Signed Up"}"#);
        assert_eq!(r.body_for("dst_1"), r.body);
        let retry = r.to_new_event(&["dst_1".into()]);
        assert_eq!(retry.destination_ids, vec!["dst_1".to_owned()]);
        assert!(retry.bodies.is_empty());
    }

    #[test]
    fn text_with_json_escapes_reads_back() {
        let mut c = call();
        c.message_id = "msg \"1\" \\ \u{e9}\n".into();
        c.destination_ids = vec!["dst \"q\"".into()];
        c.bodies = vec![("dst \"q\"".into(), r#"{"event":"\"x\""}"#.into())];
        c.blocked = Some(Blocked {
            rule: "blocked_events".into(),
            event: "Say \"hi\"".into(),
        });
        let r = LogRecord::decode(&encode("src \\ 1", at(), &c, RequestCounts::default()).unwrap())
            .unwrap();
        assert_eq!(r.source_id, "src \\ 1");
        assert_eq!(r.message_id, c.message_id);
        assert_eq!(r.destination_ids, c.destination_ids);
        assert_eq!(r.bodies, c.bodies);
        assert_eq!(r.blocked, c.blocked);
    }

    #[test]
    fn an_unknown_version_is_refused() {
        let text =
            String::from_utf8(encode("src_1", at(), &call(), RequestCounts::default()).unwrap())
                .unwrap()
                .replacen(r#""v":1"#, r#""v":9"#, 1);
        assert!(matches!(
            LogRecord::decode(text.as_bytes()),
            Err(RecordError::Version(9))
        ));
    }

    #[test]
    fn a_body_that_is_not_json_is_an_error() {
        let mut c = call();
        c.body = "not json".into();
        assert!(encode("src_1", at(), &c, RequestCounts::default()).is_err());
    }
}
