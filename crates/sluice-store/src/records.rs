//! Record logic shared by every backend: applying patches, normalising
//! connections, summarising attempts. Pure, so both backends agree by
//! construction rather than by parallel code.

use chrono::{DateTime, Utc};

use crate::{Attempt, Destination, DestinationPatch, Source, SourcePatch};

/// Events deleted per retention transaction, so pruning a large backlog
/// never holds the writer (SQLite) or row locks (PostgreSQL) for long.
pub(crate) const PRUNE_CHUNK: u32 = 2000;

/// `YYYY-MM-DD` of `t` in UTC: the usage counters' day. Written out by
/// hand: `format("%Y-%m-%d")` parses its pattern on every call, once per
/// ingest request on the writer thread.
pub(crate) fn utc_day(t: DateTime<Utc>) -> String {
    use chrono::Datelike;
    format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day())
}

/// The current time as every backend keeps it: whole milliseconds, so a
/// value read back equals the value written.
pub(crate) fn now() -> DateTime<Utc> {
    let t = Utc::now();
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

impl SourcePatch {
    /// Applies the patch to `source` as of `now`.
    pub(crate) fn apply(self, source: &mut Source, now: DateTime<Utc>) {
        if let Some(name) = self.name {
            source.name = name;
        }
        if let Some(enabled) = self.enabled {
            source.enabled = enabled;
        }
        if let Some((hash, hint)) = self.write_key {
            source.write_key_hash = hash;
            source.write_key_hint = hint;
        }
        source.updated_at = now;
    }
}

impl DestinationPatch {
    /// Applies name, enabled and settings to `dest` as of `now`. Connections
    /// (`source_ids`) need the database and are the backend's to apply.
    pub(crate) fn apply_fields(self, dest: &mut Destination, now: DateTime<Utc>) {
        if let Some(name) = self.name {
            dest.name = name;
        }
        if let Some(enabled) = self.enabled {
            dest.enabled = enabled;
        }
        if let Some(settings) = self.settings {
            dest.settings = settings;
        }
        dest.updated_at = now;
    }
}

/// Connected source ids as stored: sorted, without repeats.
pub(crate) fn normalized(mut source_ids: Vec<String>) -> Vec<String> {
    source_ids.sort();
    source_ids.dedup();
    source_ids
}

/// What went wrong in the last failed attempt, for the delivery's summary:
/// the transport error, else the HTTP status. URLs are left out since they
/// may carry credentials.
pub(crate) fn last_error(attempts: &[Attempt]) -> Option<String> {
    attempts
        .iter()
        .rev()
        .find_map(|a| match (&a.error, a.status) {
            (Some(e), _) => Some(e.clone()),
            (None, Some(status)) if !(200..300).contains(&status) => Some(format!("HTTP {status}")),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    #[test]
    fn utc_day_is_what_strftime_would_write() {
        for ms in [0, 1_767_225_599_999, 1_767_225_600_000, 4_102_444_800_000] {
            let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
            assert_eq!(super::utc_day(t), t.format("%Y-%m-%d").to_string());
        }
    }
}
