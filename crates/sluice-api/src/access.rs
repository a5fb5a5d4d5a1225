//! Who may call which admin route: the role each route needs, decided in
//! one place from its method and path. The admin router enforces it
//! ([`crate::admin::router`]) and the OpenAPI document states it on every
//! operation (`x-sluice-role`, and the `apiToken` security requirement's
//! scope), both from [`required_role`].
//!
//! - `admin`: users, API tokens, the audit log, regulations and
//!   suppressions: reading them too (they name people and hold personal
//!   data).
//! - `editor`: every other change: sources, destinations, filters, rules,
//!   computed traits, audiences, replays.
//! - `viewer`: every other read, and the caller's own account (`/me`, its
//!   password too). Secrets are masked for every role alike: no answer
//!   shows a stored secret in full.

use axum::http::Method;
use sluice_store::Role;

/// Admin API paths (relative to [`crate::admin::PREFIX`]) under which
/// everything needs the admin role.
pub const ADMIN_ONLY: &[&str] = &[
    "/users",
    "/tokens",
    "/audit",
    "/regulations",
    "/suppressions",
];

/// Admin API paths under which every call is about the caller's own
/// account, open to every role.
pub const OWN_ACCOUNT: &[&str] = &["/me"];

/// The role a call of `method` on the admin route `path` (the route's
/// pattern relative to [`crate::admin::PREFIX`], such as `/sources/{id}`)
/// needs.
pub fn required_role(method: &Method, path: &str) -> Role {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if ADMIN_ONLY.iter().any(|p| under(p)) {
        Role::Admin
    } else if *method == Method::GET
        || *method == Method::HEAD
        || OWN_ACCOUNT.iter().any(|p| under(p))
    {
        Role::Viewer
    } else {
        Role::Editor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_a_viewer_and_changes_an_editor() {
        assert_eq!(required_role(&Method::GET, "/sources"), Role::Viewer);
        assert_eq!(required_role(&Method::HEAD, "/sources/{id}"), Role::Viewer);
        assert_eq!(required_role(&Method::GET, "/me"), Role::Viewer);
        assert_eq!(required_role(&Method::POST, "/me/password"), Role::Viewer);
        assert_eq!(required_role(&Method::POST, "/metrics"), Role::Editor);
        assert_eq!(
            required_role(&Method::GET, "/delivery-health"),
            Role::Viewer
        );
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(required_role(&m, "/destinations/{id}"), Role::Editor);
        }
    }

    #[test]
    fn people_tokens_audit_and_regulations_need_an_admin_even_to_read() {
        for path in [
            "/users",
            "/users/{id}/sessions",
            "/tokens/{id}",
            "/audit",
            "/regulations/{id}",
            "/suppressions",
        ] {
            assert_eq!(required_role(&Method::GET, path), Role::Admin, "{path}");
            assert_eq!(required_role(&Method::POST, path), Role::Admin, "{path}");
        }
        assert_eq!(required_role(&Method::GET, "/usersettings"), Role::Viewer);
    }
}
