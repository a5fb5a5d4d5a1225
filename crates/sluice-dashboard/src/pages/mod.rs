//! One module per page.
//!
//! - [`signin`]: sign-in and sign-out.
//! - [`overview`]: the setup checklist.
//! - [`catalog`]: destination types.
//! - [`sources`]: sources, write keys shown once.
//! - [`debugger`]: a source's live event stream.
//! - [`usage`]: calls and events per day per source.
//! - [`health`]: every destination's delivery health at a glance.
//! - [`destinations`]: the list, a destination's page, the on/off switch.
//! - [`destination_form`]: the destination form, validated field by field.
//! - [`destination_extras`]: its Standard Webhooks and CA bundle fields.
//! - [`destination_words`]: its error messages in the form's words.
//! - [`new_destination`]: the setup flow on that form.
//! - [`edit_destination`]: changing a destination's settings.
//! - [`lifecycle`]: renaming, disabling and deleting sources, deleting
//!   destinations, each after a confirmation page.
//! - [`test_event`]: a signed test call through the real pipeline.
//! - [`deliveries`]: the delivery log, its chart, replay.
//! - [`delivery_search`]: its search by call (type, name, user) and status.
//! - [`delivery_window`]: its time window, replay since, each row's call.
//! - [`schema`]: a source's schema, block toggles, the tracking plan.
//! - [`filters`]: destination filters on the destination page.
//! - [`incidents`]: the notice of destinations failing now (alerts).
//! - [`personas`]: computed traits and audiences: lists, builder, members.
//! - [`profiles`]: profile lookup.
//! - [`regulations`]: deletion and suppression requests, the suppression list.
//! - [`team`]: users, API tokens, the audit log, the own account.

pub mod catalog;
pub mod debugger;
pub mod deliveries;
pub mod delivery_search;
pub mod delivery_window;
pub mod destination_extras;
pub mod destination_form;
pub mod destination_words;
pub mod destinations;
pub mod edit_destination;
pub mod filters;
pub mod health;
pub mod incidents;
pub mod lifecycle;
pub mod new_destination;
pub mod overview;
pub mod personas;
pub mod profiles;
pub mod regulations;
pub mod schema;
pub mod signin;
pub mod sources;
pub mod team;
pub mod test_event;
pub mod usage;
