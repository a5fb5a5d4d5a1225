//! Regulations (see `crate::regulations`): requests, suppressions and the
//! reads of the admin API in `admin`; the job's lease and the frame of its
//! purge step in `purge`, with the delete notifications a step writes in
//! `notify`. The scan for a subject's data and what a purge deletes stay
//! in the backends (`regulations/purge.rs`), which hand the latter to
//! `purge::commit`.

mod admin;
mod notify;
pub(crate) mod purge;

pub(crate) use admin::{
    add_suppressed, changes, create, detail, list, next, suppressed_usage, suppressions,
};
