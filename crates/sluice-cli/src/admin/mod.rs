//! Commands on the admin API.
//!
//! - [`resources`]: `sources` and `destinations` (list, get, create).
//! - [`deliveries`]: `deliveries` (the attempt log) and `replay`.
//! - [`team`]: `users` and `tokens`.

pub mod deliveries;
pub mod resources;
pub mod team;
