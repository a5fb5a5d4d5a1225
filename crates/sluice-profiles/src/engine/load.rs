//! Loading profiles for a step.

use sluice_store::{ProfileRecord, Store, StoreError};

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
