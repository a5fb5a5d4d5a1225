//! Loading profiles for a step.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{ProfileRecord, Store, StoreError};

use super::diff::group_values;

/// Reads split in this many parts load at once (SQLite has 4 readers).
const LOAD_PARTS: usize = 4;

/// [`sluice_store::ProfileStore::load_profiles`] of a page, its parts read
/// at once on separate connections: a page is thousands of point reads.
pub async fn load_records(
    store: &dyn Store,
    ids: Vec<String>,
    events: bool,
) -> Result<Vec<ProfileRecord>, StoreError> {
    let part = ids.len().div_ceil(LOAD_PARTS).max(1);
    let reads = ids
        .chunks(part)
        .map(|c| store.load_profiles(c.to_vec(), events));
    let parts = futures::future::try_join_all(reads).await?;
    Ok(parts.into_iter().flatten().collect())
}

/// Stored values by profile, then computation.
pub type Values = HashMap<String, HashMap<String, Value>>;

/// The values of `ids` as they stand at `now`: stored values with the
/// scheduled changes due by then applied. Also returns the profiles that
/// have scheduled changes: a step that evaluates them settles them (see
/// [`sluice_store::ProfileCommit::settle`]).
pub async fn values_at(
    store: &dyn Store,
    ids: Vec<String>,
    now: DateTime<Utc>,
) -> Result<(Values, Vec<String>), StoreError> {
    let (values, scheduled) =
        tokio::try_join!(store.values_of(ids.clone()), store.scheduled_of(ids))?;
    let mut out = group_values(values);
    let mut settle = BTreeSet::new();
    for s in scheduled {
        settle.insert(s.profile_id.clone());
        if s.at > now {
            continue;
        }
        let of = out.entry(s.profile_id).or_default();
        match s.value.and_then(|v| serde_json::from_str(&v).ok()) {
            Some(v) => of.insert(s.computation_id, v),
            None => of.remove(&s.computation_id),
        };
    }
    Ok((out, settle.into_iter().collect()))
}
