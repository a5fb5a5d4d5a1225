//! [`PathParam`]: axum's `Path` with the API's error shape.
//!
//! A path parameter that does not fit its type (`/deliveries/abc/replay`,
//! an id that is not an integer) or is not UTF-8 once decoded (`%FF`)
//! names nothing that exists, so it is a `404 not_found` in the JSON shape
//! of every other error, as admin-api.md says. axum's own rejection would
//! be a plain-text 400 that quotes the parameter.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A path parameter, refused as `404 not_found` when it does not parse.
#[derive(Debug)]
pub struct PathParam<T>(pub T);

impl<T, S> FromRequestParts<S> for PathParam<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(PathParam(value)),
            Err(_) => Err(ApiError::not_found("the resource this path names")),
        }
    }
}
