//! Who may open which dashboard page and send which form: the same roles
//! as the admin API ([`sluice_api::access`]), by the page's route.
//!
//! - `admin`: users, API tokens, the audit log, regulations and
//!   suppressions (reading them too).
//! - `editor`: every other form that changes something.
//! - `viewer`: every other page; signing out and the own account page
//!   (its password too).
//!
//! [`crate::layout::SignedIn`] checks it for every signed-in route, so a
//! page cannot forget to; a refused request changes nothing and gets the
//! `403` error page. The pages also leave out what a role cannot use: the
//! navigation shows admins' pages to admins only, and a viewer's pages
//! hide their forms.

use axum::http::Method;
use sluice_store::Role;

/// Route prefixes open to admins only.
pub const ADMIN_ONLY: &[&str] = &[
    "/users",
    "/tokens",
    "/audit",
    "/regulations",
    "/suppressions",
];

/// Routes any signed-in person may post to.
const ANYONE_POSTS: &[&str] = &["/signout", "/account/password", "/account/sessions/revoke"];

/// The role a `method` request to the dashboard route `path` (its pattern,
/// such as `/sources/{id}`) needs.
pub fn required_role(method: &Method, path: &str) -> Role {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if ADMIN_ONLY.iter().any(|p| under(p)) {
        Role::Admin
    } else if *method == Method::GET || *method == Method::HEAD || ANYONE_POSTS.contains(&path) {
        Role::Viewer
    } else {
        Role::Editor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_need_a_viewer_forms_an_editor_and_team_pages_an_admin() {
        assert_eq!(required_role(&Method::GET, "/sources/{id}"), Role::Viewer);
        assert_eq!(required_role(&Method::POST, "/sources"), Role::Editor);
        assert_eq!(required_role(&Method::POST, "/signout"), Role::Viewer);
        assert_eq!(required_role(&Method::GET, "/account"), Role::Viewer);
        assert_eq!(
            required_role(&Method::POST, "/account/password"),
            Role::Viewer
        );
        assert_eq!(
            required_role(&Method::GET, "/delivery-health"),
            Role::Viewer
        );
        assert_eq!(required_role(&Method::GET, "/audit"), Role::Admin);
        assert_eq!(
            required_role(&Method::GET, "/regulations/{id}"),
            Role::Admin
        );
        assert_eq!(
            required_role(&Method::POST, "/users/{id}/delete"),
            Role::Admin
        );
    }
}
