//! API errors: a stable code, an HTTP status and a message safe for clients.
//!
//! Every error body has the shape `{"success":false,"code":"…","message":"…"}`
//! (segment-analytics-python reads `code` and `message` from every non-200
//! answer and fails without them), plus `"index"` when one batch item was
//! refused. Internal failures are logged here and
//! reach clients only as `unavailable` (503, retry later), never with their
//! text.

use std::time::Duration;

use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sluice_model::ValidationError;
use sluice_store::StoreError;
use sluice_store::log_gate::LogGate;

/// `Retry-After` on every `503`, in seconds.
pub const RETRY_AFTER_SECS: &str = "1";

/// An error answered to an API client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// The refused batch item, when one item sank the batch.
    pub index: Option<usize>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            index: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A body field that failed validation; the message names the field.
    pub fn invalid(field: &str, why: impl std::fmt::Display) -> Self {
        Self::bad_request("invalid_field", format!("{field}: {why}"))
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::bad_request("body_too_large", message)
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        ApiError {
            index: e.index,
            ..ApiError::bad_request(e.code.as_str(), e.message)
        }
    }
}

/// Store failures logged at most once a second: during an outage (a full
/// disk, a database down) every request fails alike, and a line per request
/// would flood the log. Each line counts the ones left out since the last.
static OUTAGE_LOG: LogGate = LogGate::new(Duration::from_secs(1));

impl ApiError {
    /// The store did not answer within `storage.timeout_ms`. The write may
    /// still complete: a client's retry can then store a duplicate, which
    /// the at-least-once contract allows.
    pub fn store_timeout() -> Self {
        if let Some(suppressed) = OUTAGE_LOG.allow() {
            tracing::warn!(
                similar_since_last = suppressed,
                "the store did not answer in time; answered 503"
            );
        }
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "storage did not answer in time, retry later",
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::not_found(&what),
            StoreError::Conflict(what) => ApiError::new(StatusCode::CONFLICT, "conflict", what),
            StoreError::Closed => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "shutting down",
            ),
            // Unreachable, busy or contended: the same call may work soon.
            e @ StoreError::Backend { .. } if e.is_transient() => {
                if let Some(suppressed) = OUTAGE_LOG.allow() {
                    tracing::error!(error = %e, similar_since_last = suppressed, "store failure");
                }
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "storage is unavailable, retry later",
                )
            }
            // A fault that retrying will not mend: say so, log it in full.
            e @ StoreError::Backend { .. } => {
                if let Some(suppressed) = OUTAGE_LOG.allow() {
                    let cause = std::error::Error::source(&e).map(ToString::to_string);
                    tracing::error!(error = %e, cause, similar_since_last = suppressed, "store fault");
                }
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "storage failed; the server log has the details",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"success": false, "code": self.code, "message": self.message});
        if let Some(index) = self.index {
            body["index"] = json!(index);
        }
        let mut response = (self.status, Json(body)).into_response();
        // Every 503 is temporary (storage, shutdown, the body budget): say
        // when to come back, so clients back off instead of hammering.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
