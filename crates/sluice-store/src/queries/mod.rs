//! The store's query logic, written once for both backends.
//!
//! Each function takes a [`crate::sql::Db`] (any connection or transaction)
//! or a [`crate::sql::Conn`] (when it opens a transaction itself), and the
//! backends' `store_impl` modules hand it theirs: SQLite runs it inside the
//! writer's or a reader's job, PostgreSQL on a pooled connection. See
//! [`crate::sql`] for what differs between the two and where.
//!
//! Modules, one per concern:
//! - `audit`: the audit log.
//! - `computations`: Personas definitions, their jobs and stored values.
//! - `definitions`: Personas definitions by page, key, id and change.
//! - `deliveries`: the delivery log, replay and retention.
//! - `destinations`: destinations and their connections to sources.
//! - `engine`: the profile engine's job queue, bookkeeping and removals.
//! - `health`: the delivery health aggregates.
//! - `regulations`: privacy requests, suppressions, delete notifications.
//! - `seen`: the Kafka shape's saved deduplication keys.
//! - `source_schema`: the observed schema's reads, rules and filters.
//! - `sources`: service settings, revoked sessions, sources.
//! - `team`: users, API tokens and user sessions.

pub(crate) mod audit;
pub(crate) mod computations;
pub(crate) mod definitions;
pub(crate) mod deliveries;
pub(crate) mod destinations;
pub(crate) mod engine;
pub(crate) mod health;
pub(crate) mod regulations;
pub(crate) mod seen;
pub(crate) mod source_schema;
pub(crate) mod sources;
pub(crate) mod tally;
pub(crate) mod team;
