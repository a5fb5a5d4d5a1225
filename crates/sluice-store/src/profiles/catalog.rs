//! [`DefinitionStore`]: reads of the definitions (`computations`) whose cost
//! follows what is read, not how many definitions exist: pages of a list,
//! lookups by key or id, and the definitions changed since the engine last
//! looked.
//!
//! # Changes
//! Every change of a definition (create, edit, delete, a destination
//! connected, disconnected or deleted) draws the next number of a single
//! counter (`computations_version`) and stamps the row with it
//! (`computations.change_version`), in the changing transaction, by
//! triggers. The counter row is locked by the change until it commits, so
//! numbers are drawn in commit order on both backends: a reader that saw
//! version `v` misses no change at or below `v`.

use async_trait::async_trait;

use crate::{Computation, Result};

/// A page of the definitions of one class, oldest first.
#[derive(Debug, Clone)]
pub struct ComputationPage {
    /// `trait` or `audience`.
    pub class: String,
    /// The id of the last definition of the previous page (exclusive).
    pub after: Option<String>,
    pub limit: u32,
}

/// Definitions read by page, by key, by id, or by change.
#[async_trait]
pub trait DefinitionStore: Send + Sync + 'static {
    /// The current change version, then every definition (deleted ones
    /// included) changed after version `after` (all of them for `-1`).
    async fn computations_changed(&self, after: i64) -> Result<(i64, Vec<Computation>)>;
    /// Live definitions of a class in creation order, after a cursor.
    /// An `after` that names no definition gives an empty page.
    async fn computations_page(&self, page: ComputationPage) -> Result<Vec<Computation>>;
    /// How many live definitions a class has.
    async fn count_computations(&self, class: &str) -> Result<u64>;
    /// The live definitions with these keys.
    async fn computations_by_key(&self, keys: Vec<String>) -> Result<Vec<Computation>>;
    /// The definitions with these ids, deleted ones included.
    async fn computations_by_id(&self, ids: Vec<String>) -> Result<Vec<Computation>>;
}
