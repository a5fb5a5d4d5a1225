//! Form bodies (`application/x-www-form-urlencoded`), read under a cap.

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use sluice_api::ApiError;

/// Dashboard forms are small; anything larger is refused unread.
pub const MAX_FORM_BYTES: usize = 64 * 1024;

/// The fields of a submitted form, in order.
pub struct Form(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = crate::layout::PageError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let body: Body = req.into_body();
        let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
            .await
            .map_err(|_| ApiError::too_large(format!("form exceeds {MAX_FORM_BYTES} bytes")))?;
        Ok(Form(
            url::form_urlencoded::parse(&bytes)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ))
    }
}

impl Form {
    /// The first value of `name`, trimmed; empty when absent.
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.trim())
    }

    /// The first value of `name` as sent, untrimmed (secrets).
    pub fn raw(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Every value of `name` (checkbox groups).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn checked(&self, name: &str) -> bool {
        self.0.iter().any(|(k, v)| k == name && v != "off")
    }
}
