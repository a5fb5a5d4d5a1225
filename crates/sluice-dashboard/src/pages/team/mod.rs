//! The team's pages, through the admin API's handlers (same checks, same
//! messages, same audit entries):
//!
//! - [`users`]: the list of users and the form that adds one.
//! - [`user`]: one user: role, new password, sessions, deletion.
//! - [`tokens`]: API tokens, each shown once when made.
//! - [`audit`]: the audit log, filtered and paged.
//! - [`account`]: who is signed in, their own password, and signing out
//!   everywhere.

pub mod account;
pub mod audit;
pub mod tokens;
pub mod user;
pub mod users;

use maud::{Markup, html};
use sluice_store::Role;

/// A role's select, with `current` chosen.
pub fn role_select(id: &str, current: Role) -> Markup {
    html! {
        select #(id) name="role" {
            @for r in Role::ALL.iter().rev() {
                option value=(r.as_str()) selected[*r == current] { (r.as_str()) " — " (role_words(*r)) }
            }
        }
    }
}

/// What a role may do, in a few words.
pub fn role_words(role: Role) -> &'static str {
    match role {
        Role::Admin => "everything, users and the audit log too",
        Role::Editor => "changes sources, destinations, filters, Personas",
        Role::Viewer => "reads only",
    }
}
