//! Regulations (see `crate::regulations`): requests, suppressions and the
//! reads of the admin API in `admin`, the delete notifications a purge
//! step writes in `notify`. The job's lease, scan and purge stay in the
//! backends (`regulations/purge.rs`), which call `notify` in their
//! transaction.

mod admin;
pub(crate) mod notify;

pub(crate) use admin::{
    add_suppressed, changes, create, detail, list, next, suppressed_usage, suppressions,
};
