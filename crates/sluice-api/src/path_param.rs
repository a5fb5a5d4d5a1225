//! [`PathParam`]: axum's `Path` with the API's error shape.
//!
//! A path parameter that does not fit its type (`/deliveries/abc/replay`,
//! an id that is not an integer) or is not UTF-8 once decoded (`%FF`)
//! names nothing that exists, so it is a `404 not_found` in the JSON shape
//! of every other error, as admin-api.md says. axum's own rejection would
//! be a plain-text 400 that quotes the parameter.

use axum::extract::{FromRequestParts, MatchedPath, Path};
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
            Err(_) => {
                let route = parts
                    .extensions
                    .get::<MatchedPath>()
                    .map_or(parts.uri.path(), MatchedPath::as_str);
                Err(ApiError::not_found(resource_of(route)))
            }
        }
    }
}

/// The kind of resource a route names, as the handlers' own `404`
/// messages call it (`source not found`): the last collection segment
/// before its first parameter (`/sources/{id}/schema` → "source",
/// `/api/v1/deliveries/abc/replay` → "delivery").
pub fn resource_of(route: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("sources", "source"),
        ("destinations", "destination"),
        ("deliveries", "delivery"),
        ("computed-traits", "computed trait"),
        ("audiences", "audience"),
        ("regulations", "regulation"),
        ("profiles", "profile"),
    ];
    route
        .split('/')
        .take_while(|segment| !segment.starts_with('{'))
        .filter_map(|segment| KINDS.iter().find(|(c, _)| *c == segment).map(|(_, k)| *k))
        .last()
        .unwrap_or("resource")
}

#[cfg(test)]
mod tests {
    use super::resource_of;

    #[test]
    fn an_id_that_does_not_parse_is_named_by_the_kind_its_route_names() {
        for (route, kind) in [
            ("/api/v1/sources/{id}", "source"),
            ("/sources/{id}/debugger/newer", "source"),
            ("/destinations/{id}/deliveries", "destination"),
            ("/api/v1/deliveries/abc/replay", "delivery"),
            ("/api/v1/destinations/%FF/filters", "destination"),
            ("/computed-traits/{id}", "computed trait"),
            ("/audiences/{id}", "audience"),
            ("/regulations/{id}", "regulation"),
            ("/elsewhere/{id}", "resource"),
            ("", "resource"),
        ] {
            assert_eq!(resource_of(route), kind, "{route}");
        }
    }
}
