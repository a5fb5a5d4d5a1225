//! Black-box tests of `parse_request`: bytes in, envelope or error out.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod batch;
mod enrichment;
mod fuzz;
mod limits;
mod merged;
mod required;
mod shapes;
mod stored;
mod support;
mod timestamps;
