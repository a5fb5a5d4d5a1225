//! The team: users ([`users`]), their sessions ([`sessions`]), API tokens
//! ([`tokens`]), the caller itself ([`me`]) and its own password
//! ([`own_password`]), and the audit log ([`audit`]). All but `/me` need
//! the admin role ([`crate::access`]).

pub mod audit;
pub mod me;
pub mod own_password;
pub mod sessions;
pub mod tokens;
pub mod users;

use serde_json::{Map, Value};
use sluice_store::Role;

use crate::admin::extract::opt_field;
use crate::error::{ApiError, ApiResult};

/// The longest username, in characters.
pub const MAX_USERNAME: usize = 64;

/// A username as stored: trimmed, lower-cased, 1 to 64 of `a-z 0-9 . _ @ + -`.
pub fn username(body: &Map<String, Value>, field: &str) -> ApiResult<String> {
    let raw = opt_field(body, field, Value::as_str, "a string")?
        .ok_or_else(|| ApiError::invalid(field, "is required"))?;
    let name = raw.trim().to_lowercase();
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_@+".contains(c);
    if name.is_empty() || name.chars().count() > MAX_USERNAME || !name.chars().all(allowed) {
        return Err(ApiError::invalid(
            field,
            format!(
                "must be 1 to {MAX_USERNAME} letters, digits or . _ @ + - (an email address works)"
            ),
        ));
    }
    Ok(name)
}

/// An optional role field.
pub fn role(body: &Map<String, Value>, field: &str) -> ApiResult<Option<Role>> {
    match opt_field(body, field, Value::as_str, "a string")? {
        None => Ok(None),
        Some(text) => Role::parse(text)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(field, "must be admin, editor or viewer")),
    }
}
