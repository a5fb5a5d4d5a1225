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
            Err(_) => Err(ApiError::not_found(resource_of(parts.uri.path()))),
        }
    }
}

/// The kind of resource a path names, for the same `404` message an
/// unknown id of that kind gets (`source not found`).
fn resource_of(path: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("sources", "source"),
        ("destinations", "destination"),
        ("deliveries", "delivery"),
        ("computed-traits", "computed trait"),
        ("audiences", "audience"),
        ("regulations", "regulation"),
        ("profiles", "profile"),
    ];
    path.split('/')
        .find_map(|segment| KINDS.iter().find(|(c, _)| *c == segment).map(|(_, k)| *k))
        .unwrap_or("resource")
}

#[cfg(test)]
mod tests {
    use super::resource_of;

    #[test]
    fn an_id_that_does_not_parse_is_named_by_the_kind_its_path_names() {
        assert_eq!(resource_of("/api/v1/sources/%FF"), "source");
        assert_eq!(resource_of("/api/v1/deliveries/abc/replay"), "delivery");
        assert_eq!(
            resource_of("/api/v1/destinations/%FF/filters"),
            "destination"
        );
        assert_eq!(resource_of("/api/v1/computed-traits/%FF"), "computed trait");
        assert_eq!(resource_of("/api/v1/elsewhere/%FF"), "resource");
    }
}
