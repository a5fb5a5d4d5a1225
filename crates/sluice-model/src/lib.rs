//! The message model of the Segment-compatible tracking API.
//!
//! Everything here is pure: bytes and a request context in, validated and
//! enriched events (or a precise validation error) out. No I/O, no clocks:
//! the caller passes `received_at`, so tests pin time exactly.
//!
//! Modules:
//! - [`kind`]: the six call types and the collection endpoints that carry them.
//! - [`limits`]: size and count limits, with Segment's defaults (32 KB a
//!   call, 500 KB a batch).
//! - [`parse`]: request body → [`Envelope`] (write key, validated events).
//! - [`enrich`]: messageId, receivedAt, clock-skew corrected timestamp, context.ip.
//! - [`merge`]: batch-level `context`/`integrations` merged into each item,
//!   within the per-event size and nesting limits.
//! - [`time`]: lenient timestamp parsing and canonical rendering.
//! - [`text`]: repairs of raw JSON text (lone UTF-16 surrogate escapes) before parsing.
//! - [`shape`]: what an event looks like to the source schema, its rules and
//!   filters (type, name, top-level property or trait keys and JSON types),
//!   taken during the parse when asked.
//! - [`outline`]: where each top-level member sits in a stored message's
//!   text, noted while writing it (with the shape), so filters read a
//!   value without scanning the rest.
//! - [`scan`]: stepping through validated JSON text member by member,
//!   values as text (the shape's keys, filters' values).
//! - [`routing`]: the `integrations` object decides whether a destination gets a call.
//! - `raw` (internal): a call's top level with values kept as raw JSON text
//!   (the ingest fast path); [`RawTop`] is its read-only public face.
//! - [`error`]: the validation error type with stable codes.

pub mod enrich;
pub mod error;
pub mod kind;
pub mod limits;
pub mod merge;
pub mod outline;
pub mod parse;
pub(crate) mod raw;
pub mod routing;
pub mod scan;
pub mod shape;
pub mod text;
pub mod time;
mod validate;

pub use error::{ErrorCode, ValidationError};
pub use kind::{Endpoint, EventType};
pub use limits::Limits;
pub use outline::Outline;
pub use parse::{
    Envelope, Event, Extras, RequestContext, parse_request, parse_request_with,
    parse_request_with_shapes,
};
pub use raw::RawTop;
pub use routing::destination_enabled;
pub use shape::{JsonType, Shape};
pub use text::replace_lone_surrogates;
