//! The in-memory suppression set ingest consults (see `docs/privacy.md`).
//!
//! Ingest must not pay a database round trip per request, so every node keeps
//! the whole set of suppressed user ids in memory and applies the store's
//! change log (`RegulationStore::suppression_changes`, ordered by version)
//! on a short timer and right after a regulation is created here. A call
//! whose `userId` is suppressed (or an alias whose `previousId` is) is
//! dropped before the commit; the drop is
//! counted in memory and flushed to the store's `usage_suppressed` counters
//! by the same timer.
//!
//! - `set`: the ids' compact representation (an arena and a table of
//!   offsets, about 30 bytes per id).
//!
//! Cost at ingest: a request takes the read lock once (never per event)
//! and hashes each `userId` once; the lock is written only while a page of
//! changes is applied, which happens when a regulation changes the list,
//! not on every sync tick (an idle sync is one indexed query that returns
//! nothing). While nothing is suppressed no lock is taken at all.

mod set;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, RwLock};

use chrono::{DateTime, Utc};
use sluice_model::{Event, EventType};
use sluice_store::{RegulationStore, StoreError, SuppressedCount};

/// Changes read per store query while catching up.
const CHANGES_PAGE: u32 = 10_000;

/// The suppressed user ids and the suppressed counts not yet flushed.
#[derive(Default)]
pub struct Suppressions {
    ids: RwLock<set::IdSet>,
    /// Fast path: no lock is taken while nothing is suppressed.
    any: AtomicBool,
    /// The highest change version applied.
    version: AtomicI64,
    /// Serializes refreshes so changes apply in version order.
    refreshing: tokio::sync::Mutex<()>,
    unflushed: Mutex<HashMap<(String, String), u64>>,
}

impl Suppressions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies every change made since the last refresh.
    pub async fn refresh(&self, store: &dyn RegulationStore) -> Result<(), StoreError> {
        let _turn = self.refreshing.lock().await;
        loop {
            let from = self.version.load(Ordering::Acquire);
            let changes = store.suppression_changes(from, CHANGES_PAGE).await?;
            let Some(last) = changes.last().map(|c| c.version) else {
                return Ok(());
            };
            {
                let mut ids = self.ids.write().unwrap_or_else(|p| p.into_inner());
                for change in changes {
                    if change.suppressed {
                        ids.insert(&change.user_id);
                    } else {
                        ids.remove(&change.user_id);
                    }
                }
                self.any.store(!ids.is_empty(), Ordering::Release);
            }
            self.version.store(last, Ordering::Release);
        }
    }

    /// How many ids are suppressed.
    pub fn len(&self) -> usize {
        self.ids.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Heap bytes the in-memory set holds on this node.
    pub fn memory_bytes(&self) -> usize {
        self.ids
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .heap_bytes()
    }

    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Removes the events of suppressed users from `events`, counts them for
    /// `source_id`, and returns how many were removed.
    pub fn drop_suppressed(
        &self,
        source_id: &str,
        events: &mut Vec<Event>,
        received_at: DateTime<Utc>,
    ) -> u64 {
        if !self.any.load(Ordering::Acquire) {
            return 0;
        }
        let before = events.len();
        {
            let ids = self.ids.read().unwrap_or_else(|p| p.into_inner());
            events.retain(|e| !names_suppressed(e, &ids));
        }
        let dropped = (before - events.len()) as u64;
        if dropped > 0 {
            let day = received_at.format("%Y-%m-%d").to_string();
            let mut unflushed = self.unflushed.lock().unwrap_or_else(|p| p.into_inner());
            *unflushed.entry((source_id.to_owned(), day)).or_default() += dropped;
        }
        dropped
    }

    /// Whether a call already in an event log (the Kafka shape) names a
    /// suppressed user, by the same rule as ingest: its `userId`, or an
    /// alias's `previousId`. A call that does is counted as suppressed for
    /// `source_id`, and its consumer drops it instead of delivering it, so
    /// calls accepted before a regulation are not delivered after it.
    pub fn suppresses_logged(
        &self,
        source_id: &str,
        event_type: &str,
        json: &str,
        received_at: DateTime<Utc>,
    ) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        #[derive(serde::Deserialize)]
        struct Who {
            #[serde(rename = "userId")]
            user_id: Option<serde_json::Value>,
        }
        let user = serde_json::from_str::<Who>(json)
            .ok()
            .and_then(|w| as_id(w.user_id?));
        let suppressed = {
            let ids = self.ids.read().unwrap_or_else(|p| p.into_inner());
            user.is_some_and(|u| ids.contains(&u))
                || (event_type == "alias" && previous_id(json).is_some_and(|p| ids.contains(&p)))
        };
        if suppressed {
            let day = received_at.format("%Y-%m-%d").to_string();
            let mut unflushed = self.unflushed.lock().unwrap_or_else(|p| p.into_inner());
            *unflushed.entry((source_id.to_owned(), day)).or_default() += 1;
        }
        suppressed
    }

    /// Writes the counts gathered since the last flush to the store; on
    /// failure they are kept for the next try.
    pub async fn flush(&self, store: &dyn RegulationStore) -> Result<(), StoreError> {
        let taken = std::mem::take(&mut *self.unflushed.lock().unwrap_or_else(|p| p.into_inner()));
        if taken.is_empty() {
            return Ok(());
        }
        let counts: Vec<SuppressedCount> = taken
            .iter()
            .map(|((source_id, day), events)| SuppressedCount {
                source_id: source_id.clone(),
                day: day.clone(),
                events: *events,
            })
            .collect();
        if let Err(e) = store.add_suppressed(counts).await {
            let mut unflushed = self.unflushed.lock().unwrap_or_else(|p| p.into_inner());
            for (key, n) in taken {
                *unflushed.entry(key).or_default() += n;
            }
            return Err(e);
        }
        Ok(())
    }
}

/// Whether `event` names a suppressed user: its `userId`, or for an
/// `alias`, its `previousId` too, so that an alias cannot link a suppressed
/// (or deleted and suppressed) id to a new profile and bring its identity
/// back.
fn names_suppressed(event: &Event, ids: &set::IdSet) -> bool {
    if event.user_id.as_ref().is_some_and(|u| ids.contains(u)) {
        return true;
    }
    event.event_type == EventType::Alias
        && previous_id(&event.json).is_some_and(|p| ids.contains(&p))
}

/// An alias's `previousId` as a string (numbers as their text, as ingest
/// treats a numeric `userId`).
fn previous_id(json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Alias {
        #[serde(rename = "previousId")]
        previous_id: Option<serde_json::Value>,
    }
    as_id(serde_json::from_str::<Alias>(json).ok()?.previous_id?)
}

/// An id field as a string: numbers as their text, as ingest treats a
/// numeric `userId`.
fn as_id(value: serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suppressing(ids: &[&str]) -> Suppressions {
        let s = Suppressions::new();
        {
            let mut set = s.ids.write().unwrap();
            for id in ids {
                set.insert(id);
            }
        }
        s.any.store(!ids.is_empty(), Ordering::Release);
        s
    }

    #[test]
    fn a_logged_call_of_a_suppressed_user_is_dropped_and_counted() {
        let s = suppressing(&["u1", "42"]);
        let at = Utc::now();
        assert!(s.suppresses_logged("src", "track", r#"{"userId":"u1"}"#, at));
        assert!(s.suppresses_logged("src", "identify", r#"{"userId":42}"#, at));
        assert!(s.suppresses_logged("src", "alias", r#"{"userId":"n","previousId":"u1"}"#, at));
        assert!(!s.suppresses_logged("src", "track", r#"{"userId":"u2","previousId":"u1"}"#, at));
        assert!(!s.suppresses_logged("src", "page", r#"{"anonymousId":"u1"}"#, at));
        let counted: u64 = s.unflushed.lock().unwrap().values().sum();
        assert_eq!(counted, 3);
    }

    #[test]
    fn nothing_suppressed_reads_no_call() {
        let s = suppressing(&[]);
        assert!(!s.suppresses_logged("src", "track", "not even json", Utc::now()));
    }
}
