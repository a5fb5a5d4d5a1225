//! Profiles, computed traits and audiences (Segment's "Personas"/Engage),
//! sent to Webhooks destinations as `identify` calls through the outbox.
//!
//! Modules:
//! - [`definition`]: computed-trait kinds and the audience condition
//!   language, parsed with errors naming the field; cycle detection.
//! - [`key`]: keys derived from names (snake_case, accents folded).
//! - `check`: the semantic checks of a parsed definition, each refusal
//!   naming the field by its full JSON path.
//! - [`filter`]: property filters and comparisons.
//! - [`index`]: which definitions a change to a person can affect.
//! - [`reads`]: which event properties the definitions read, and a parse
//!   of an event's properties that keeps only those.
//! - [`profile`]: the profile document and the identity and trait merge rules.
//! - [`compute`]: evaluation of a definition over a profile at a time, with
//!   the next time a window changes the result.
//! - [`message`]: the identify messages emitted.
//! - [`engine`]: the task that feeds on committed events (durable cursor,
//!   one lease-holding node, one transaction per step).
//! - [`refs`]: the definitions one refers to, read by key.
//! - [`preview`]: a definition evaluated over stored profiles, unsaved.
//!
//! The modules before `engine` are pure and unit-tested without I/O; the engine wraps
//! them. Why this shape, the limits and the timing: `docs/personas.md`.

mod check;
pub mod compute;
pub mod definition;
pub mod engine;
pub mod error;
pub mod filter;
pub mod index;
pub mod key;
pub mod message;
pub mod preview;
pub mod profile;
pub mod reads;
pub mod refs;

pub use definition::{AUDIENCE, Definition, TRAIT};
pub use engine::{EngineConfig, EngineHandle};
pub use error::{DefinitionError, ProfileError};
