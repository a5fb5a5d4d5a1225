//! [`CatalogStore`]: the configuration the service keeps. Service settings,
//! sources with their write-key hashes, and destinations with their
//! connections. Small tables, read often (the routing table is rebuilt from
//! them), written only by the admin API.

use async_trait::async_trait;

use crate::{
    Destination, DestinationPatch, NewDestination, NewSource, Result, Source, SourcePatch,
};

/// Settings, sources and destinations. Every method is atomic.
#[async_trait]
pub trait CatalogStore: Send + Sync {
    // --- settings kept by the service itself -------------------------------
    /// Reads a service setting (for example the generated admin token hash).
    async fn get_meta(&self, key: &str) -> Result<Option<String>>;
    /// Stores `value` under `key` unless a value exists; returns the value kept.
    async fn put_meta_if_absent(&self, key: &str, value: &str) -> Result<String>;

    // --- signed-out dashboard sessions ---------------------------------------
    /// Records that the dashboard session `id` was signed out. It stays
    /// revoked until `expires_at` (Unix seconds), when its cookie would
    /// expire anyway; revocations that expired before `now` are deleted in
    /// the same call, so the table holds only live ones.
    async fn revoke_session(&self, id: &str, expires_at: i64, now: i64) -> Result<()>;
    /// Whether the dashboard session `id` was signed out (on any node).
    async fn session_revoked(&self, id: &str) -> Result<bool>;

    // --- sources ------------------------------------------------------------
    async fn create_source(&self, new: NewSource) -> Result<Source>;
    async fn list_sources(&self) -> Result<Vec<Source>>;
    async fn get_source(&self, id: &str) -> Result<Option<Source>>;
    /// The source whose write key hashes to `hash` (see [`crate::keys::hash_secret`]).
    async fn get_source_by_key_hash(&self, hash: &str) -> Result<Option<Source>>;
    async fn update_source(&self, id: &str, patch: SourcePatch) -> Result<Option<Source>>;
    /// Deletes a source, its connections and its usage; events and deliveries
    /// already stored stay until retention removes them.
    async fn delete_source(&self, id: &str) -> Result<bool>;

    // --- destinations -------------------------------------------------------
    /// Fails with [`crate::StoreError::NotFound`] when a connected source is missing.
    async fn create_destination(&self, new: NewDestination) -> Result<Destination>;
    async fn list_destinations(&self) -> Result<Vec<Destination>>;
    async fn get_destination(&self, id: &str) -> Result<Option<Destination>>;
    async fn update_destination(
        &self,
        id: &str,
        patch: DestinationPatch,
    ) -> Result<Option<Destination>>;
    /// Deletes a destination; its pending deliveries become `discarded`.
    async fn delete_destination(&self, id: &str) -> Result<bool>;
}
