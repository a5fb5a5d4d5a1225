//! Outbound safety: what a customer-controlled webhook URL may reach, and how
//! credentials inside destination settings are shown.
//!
//! Pure, no I/O: the delivery connector and the admin API both call in here,
//! so the rules cannot drift between "may this URL be saved" and "may this
//! address be connected to".
//!
//! Modules:
//! - [`ca`]: per-destination CA bundles; only CA certificates are accepted.
//! - [`cidr`]: CIDR blocks (`10.0.0.0/8`, `fe80::/10`), parsing and membership.
//! - [`network`]: [`NetworkPolicy`], the blocked ranges and the operator's
//!   allow list; checks addresses and URL hosts.
//! - [`headers`]: which static header names a URL entry may not carry (one
//!   rule for the admin API and the sender).
//! - [`mask`]: which header names are sensitive, and the masked forms of
//!   header values and URL userinfo.
//! - [`redact`]: secrets hidden inside text a receiver sent back (the
//!   attempt log's response snippet).

pub mod ca;
pub mod cidr;
pub mod headers;
pub mod mask;
pub mod network;
pub mod redact;

pub use ca::CaError;
pub use cidr::{Cidr, CidrError};
pub use headers::is_refused_static_header;
pub use mask::Masker;
pub use network::{Blocked, NetworkPolicy};
