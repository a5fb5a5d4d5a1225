//! Test support for Sluice, shared by the delivery and server test suites.
//!
//! Modules:
//! - [`receiver`]: [`Receiver`], a local HTTP/HTTPS webhook endpoint that
//!   records every request and answers from a script.
//! - [`reply`]: [`Reply`], one scripted answer (status, headers, delay, hang).
//! - [`relay`]: [`Relay`], a TCP relay to a server that can cut every
//!   connection, as an outage does.
//! - `tls`: in-process certificates for [`Receiver::start_tls`] (self-signed)
//!   and [`Receiver::start_tls_private_ca`] (issued by a private CA).
//!
//! Its functions panic with a clear message instead of returning errors: they run
//! only inside tests, where a panic is the failure report.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "used only by tests, where a panic with its message is the failure report"
)]

pub mod receiver;
pub mod relay;
pub mod reply;
mod tls;

pub use receiver::{Receiver, RecordedRequest};
pub use relay::Relay;
pub use reply::Reply;
