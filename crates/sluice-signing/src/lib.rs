//! Webhook body serialization and signing that JavaScript receivers agree with.
//!
//! Sluice's Webhooks destination signs each delivered body with
//! `X-Signature` = lowercase hex HMAC-SHA1(shared secret, body). Many
//! receivers, following Segment's own examples, verify by recomputing the
//! HMAC over `JSON.stringify(req.body)`: a *re-serialized* parse of the body,
//! not the raw bytes. Their check only passes when the bytes we send are
//! exactly what `JSON.stringify(JSON.parse(body))` yields, so the body is
//! rendered by [`json`] in JavaScript's canonical form before it is signed by
//! [`signature`].
//!
//! ```
//! use serde_json::json;
//! use sluice_signing::{sign, to_js_json, verify};
//!
//! let body = to_js_json(&json!({ "b": 1.0, "0": "x", "big": 1e21 }));
//! assert_eq!(body, r#"{"0":"x","b":1,"big":1e+21}"#);
//! let signature = sign(b"shared secret", body.as_bytes());
//! assert!(verify(b"shared secret", body.as_bytes(), &signature));
//! ```
//!
//! Everything here is pure: no I/O, no clocks, no randomness.
//!
//! Modules:
//! - [`json`]: `serde_json::Value` → the exact bytes of JavaScript's
//!   `JSON.stringify` (key order, number form, string escapes).
//! - [`signature`]: hex HMAC-SHA1 signing and constant-time verification.
//! - [`standard`]: Standard Webhooks signatures (`webhook-signature`,
//!   HMAC-SHA256 keyed by a `whsec_…` secret), opt-in per destination.

pub mod json;
pub mod signature;
pub mod standard;

pub use json::{to_js_json, write_js_json};
pub use signature::{sign, verify};
