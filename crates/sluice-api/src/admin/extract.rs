//! Extractors that answer failures in the API's JSON error shape, rather than
//! axum's plain-text rejections.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Admin request bodies are small; anything larger is refused unread.
pub const MAX_ADMIN_BODY: usize = 64 * 1024;

/// A JSON object body, read under [`MAX_ADMIN_BODY`].
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_ADMIN_BODY)
            .await
            .map_err(|_| ApiError::too_large(format!("body exceeds {MAX_ADMIN_BODY} bytes")))?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            Ok(_) => Err(ApiError::bad_request(
                "invalid_json",
                "body must be a JSON object",
            )),
            Err(e) => Err(ApiError::bad_request(
                "invalid_json",
                format!("invalid JSON: {e}"),
            )),
        }
    }
}

/// An optional JSON object body: an empty body reads as `{}`.
pub struct OptionalJsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for OptionalJsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_ADMIN_BODY)
            .await
            .map_err(|_| ApiError::too_large(format!("body exceeds {MAX_ADMIN_BODY} bytes")))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonObject(Map::new()));
        }
        let req = Request::from_parts(parts, Body::from(bytes));
        JsonObject::from_request(req, state)
            .await
            .map(|JsonObject(m)| OptionalJsonObject(m))
    }
}

/// Query parameters as strings; typed parsing happens in [`Params`] getters so
/// each failure names its parameter.
pub struct Params(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(map) = Query::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
        Ok(Params(map))
    }
}

impl Params {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// `limit`, defaulting to `default` and capped at `max`.
    pub fn limit(&self, default: u32, max: u32) -> Result<u32, ApiError> {
        match self.str("limit") {
            None => Ok(default),
            Some(s) => match s.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::bad_request(
                    "invalid_query",
                    format!("limit: must be an integer from 1 to {max}"),
                )),
            },
        }
    }

    pub fn i64(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.str(name)
            .map(|s| {
                s.parse::<i64>().map_err(|_| {
                    ApiError::bad_request("invalid_query", format!("{name}: must be an integer"))
                })
            })
            .transpose()
    }
}

/// Reads an optional field of a JSON object with a typed getter, naming the
/// field in the error when its type is wrong.
pub fn opt_field<'a, T>(
    body: &'a Map<String, Value>,
    name: &str,
    get: impl Fn(&'a Value) -> Option<T>,
    expected: &str,
) -> Result<Option<T>, ApiError> {
    match body.get(name) {
        None => Ok(None),
        Some(v) => get(v)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(name, format!("must be {expected}"))),
    }
}

/// Refuses a body with a field outside `fields`, naming it (and the fields
/// there are): a misspelt optional field must not be silently ignored, as
/// `{"enabeld": false}` creating an enabled source would be.
pub fn known_fields(body: &Map<String, Value>, fields: &[&str]) -> Result<(), ApiError> {
    match body.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(ApiError::invalid(
            k,
            format!("is not a known field (fields: {})", fields.join(", ")),
        )),
        None => Ok(()),
    }
}

/// A required, non-empty string field.
pub fn required_name(body: &Map<String, Value>, name: &str) -> Result<String, ApiError> {
    let v = opt_field(body, name, Value::as_str, "a string")?
        .ok_or_else(|| ApiError::invalid(name, "is required"))?;
    non_empty(name, v)
}

pub fn non_empty(name: &str, v: &str) -> Result<String, ApiError> {
    let v = v.trim();
    if v.is_empty() {
        return Err(ApiError::invalid(name, "must not be empty"));
    }
    if v.chars().count() > 200 {
        return Err(ApiError::invalid(name, "must be at most 200 characters"));
    }
    // A name is shown in lists, tables and logs: a newline or an escape
    // sequence there would forge a line or restyle an operator's terminal.
    if v.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            name,
            "must not contain control characters",
        ));
    }
    Ok(v.to_owned())
}
