//! Source schema and filtering: what each source sends, and what may pass.
//!
//! Pure, no I/O: the ingest path and the admin API wrap these cores; the
//! store keeps their documents and aggregates.
//!
//! Modules:
//! - [`path`]: dotted property paths (`properties.plan.tier`): parse, read, remove.
//! - [`shape`] (re-exported from `sluice-model`, which takes it during the
//!   ingest parse): type, name, top-level property or trait keys and their
//!   JSON types, which the schema, rules and filters all need.
//! - [`read`]: the values at a few property paths, read from JSON text in one
//!   pass, or through the message's outline.
//! - [`rules`]: a source's block rules and tracking plan, and their verdicts.
//! - [`filters`]: a destination's filters (drop an event, drop fields).
//! - [`condition`]: the conditions filters test.
//! - [`tracker`]: the bounded in-memory schema aggregate, flushed periodically.
//! - [`error`]: [`RuleError`], which names the offending field.

pub mod condition;
pub mod error;
pub mod filters;
pub mod path;
pub mod read;
pub mod rules;
pub use sluice_model::shape;
pub mod tracker;

pub use error::RuleError;
pub use filters::{FilterOutcome, FilterSet};
pub use path::PropertyPath;
pub use rules::{SourceRules, Verdict};
pub use shape::{JsonType, Shape};
pub use tracker::{EntryDelta, EntryKind, SourceDelta, Tracker};
