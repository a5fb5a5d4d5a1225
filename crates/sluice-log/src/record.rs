//! What one record of the event log holds, and how it is keyed.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// Header naming the source that received the event.
pub const HEADER_SOURCE_ID: &str = "sluice-source-id";
/// Header carrying the event's `messageId`.
pub const HEADER_MESSAGE_ID: &str = "sluice-message-id";
/// Header carrying when Sluice received the event (RFC 3339, UTC, microseconds).
pub const HEADER_RECEIVED_AT: &str = "sluice-received-at";

/// One accepted event, as ingest appends it to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEvent {
    /// The source that received it.
    pub source_id: String,
    /// The person it is about: `userId`, else `anonymousId`.
    pub person: String,
    /// Its `messageId`.
    pub message_id: String,
    /// When Sluice received it; also the record's timestamp.
    pub received_at: DateTime<Utc>,
    /// The stored event's JSON, as the delivery and profile paths read it.
    pub payload: Vec<u8>,
}

impl LogEvent {
    /// The record's key: [`partition_key`] of its source and person.
    pub fn key(&self) -> String {
        partition_key(&self.source_id, &self.person)
    }
}

/// The key that places a person's events of one source in one partition,
/// and so in the order they were accepted: the first 16 bytes of
/// SHA-256(`source` NUL `person`), in hex.
///
/// Hashing keeps user ids out of the key (tools print keys) and spreads
/// them evenly; the partitioner then hashes this key as Kafka's Java
/// clients do (murmur2), so any client agrees on the partition.
pub fn partition_key(source_id: &str, person: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(source_id.as_bytes());
    hash.update([0]);
    hash.update(person.as_bytes());
    let digest = hash.finalize();
    let mut key = String::with_capacity(32);
    for byte in &digest[..16] {
        key.push(char::from(HEX[usize::from(byte >> 4)]));
        key.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    key
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `received_at` as the header carries it.
pub fn format_received_at(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_stable_and_separates_source_from_person() {
        assert_eq!(
            partition_key("src", "user-1"),
            partition_key("src", "user-1")
        );
        assert_eq!(partition_key("src", "user-1").len(), 32);
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(partition_key("ab", "c"), partition_key("a", "bc"));
        assert_ne!(
            partition_key("src", "user-1"),
            partition_key("src", "user-2")
        );
        assert_ne!(
            partition_key("src-a", "user-1"),
            partition_key("src-b", "user-1")
        );
    }

    #[test]
    fn key_is_the_hex_of_the_first_half_of_sha256() {
        // Pinned: every node and every release must place a person alike.
        assert_eq!(
            partition_key("source-1", "user-1"),
            "501dc6160aa34e781cd8182562b7be13"
        );
    }

    #[test]
    fn received_at_keeps_microseconds_in_utc() {
        let at = DateTime::parse_from_rfc3339("2024-05-01T10:20:30.123456+02:00")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(format_received_at(at), "2024-05-01T08:20:30.123456Z");
    }
}
