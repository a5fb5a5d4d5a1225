//! One module per page.
//!
//! - [`signin`]: sign-in and sign-out.
//! - [`overview`]: the setup checklist.
//! - [`catalog`]: destination types.
//! - [`sources`]: sources, write keys shown once.
//! - [`debugger`]: a source's live event stream.
//! - [`usage`]: calls and events per day per source.
//! - [`destinations`]: the list, a destination's page, the on/off switch.
//! - [`new_destination`]: the setup form, validated field by field.
//! - [`test_event`]: a signed test call through the real pipeline.
//! - [`deliveries`]: the delivery log, its chart, replay.

pub mod catalog;
pub mod debugger;
pub mod deliveries;
pub mod destinations;
pub mod new_destination;
pub mod overview;
pub mod signin;
pub mod sources;
pub mod test_event;
pub mod usage;
