//! The body of `POST /regulations`, read under its own cap and checked
//! field by field, and what each regulation type does.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::admin::extract::known_fields;
use crate::error::ApiError;

/// The most subject ids one regulation takes (as Segment).
pub const MAX_SUBJECTS: usize = 5000;

/// A regulation body may carry 5,000 ids of up to 1,024 bytes each, more
/// than the admin API's usual cap.
pub const MAX_REGULATION_BODY: usize = 6 * 1024 * 1024;

/// A JSON object body read under [`MAX_REGULATION_BODY`].
pub struct RegulationBody(pub Map<String, Value>);

impl<S: Send + Sync> axum::extract::FromRequest<S> for RegulationBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, _state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_REGULATION_BODY)
            .await
            .map_err(|_| {
                ApiError::too_large(format!("body exceeds {MAX_REGULATION_BODY} bytes"))
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(RegulationBody(map)),
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

/// What a regulation type does: (suppress change, purge, notify).
pub fn regulation_kind(name: &str) -> Option<(Option<bool>, bool, bool)> {
    Some(match name {
        "DELETE_ONLY" => (None, true, true),
        "SUPPRESS_WITH_DELETE" => (Some(true), true, true),
        "SUPPRESS_ONLY" => (Some(true), false, false),
        "UNSUPPRESS" => (Some(false), false, false),
        "DELETE_INTERNAL" => (None, true, false),
        "SUPPRESS_WITH_DELETE_INTERNAL" => (Some(true), true, false),
        _ => return None,
    })
}

/// Whether a regulation type suppresses its subjects and purges their data
/// (`SUPPRESS_WITH_DELETE`, `SUPPRESS_WITH_DELETE_INTERNAL`): its purge waits
/// until the suppression holds on every node (`docs/privacy.md`).
pub fn suppresses_and_purges(name: &str) -> bool {
    matches!(regulation_kind(name), Some((Some(true), true, _)))
}

/// Checks a request body; every error names its field.
pub(super) fn parse(
    body: &Map<String, Value>,
) -> Result<(String, Vec<String>, Option<String>), ApiError> {
    // A misspelt `source_id` must not widen a deletion to every source.
    known_fields(body, FIELDS)?;
    let kind = match body.get("regulationType") {
        Some(Value::String(s)) if regulation_kind(s).is_some() => s.clone(),
        Some(Value::String(s)) => {
            return Err(ApiError::invalid(
                "regulationType",
                format!(
                    "unknown type '{s}' (DELETE_ONLY, SUPPRESS_WITH_DELETE, SUPPRESS_ONLY, \
                     UNSUPPRESS, DELETE_INTERNAL, SUPPRESS_WITH_DELETE_INTERNAL)"
                ),
            ));
        }
        _ => return Err(ApiError::invalid("regulationType", "is required")),
    };
    match body.get("subjectType") {
        None => {}
        Some(Value::String(s)) if s == "USER_ID" => {}
        Some(_) => return Err(ApiError::invalid("subjectType", "must be \"USER_ID\"")),
    }
    let Some(Value::Array(items)) = body.get("subjectIds") else {
        return Err(ApiError::invalid(
            "subjectIds",
            "must be a list of user ids",
        ));
    };
    if items.is_empty() {
        return Err(ApiError::invalid("subjectIds", "must not be empty"));
    }
    if items.len() > MAX_SUBJECTS {
        return Err(ApiError::invalid(
            "subjectIds",
            format!("at most {MAX_SUBJECTS} ids per regulation"),
        ));
    }
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() && s.len() <= 1024 => {
                if seen.insert(s.as_str()) {
                    ids.push(s.clone());
                }
            }
            _ => {
                return Err(ApiError::invalid(
                    "subjectIds",
                    "each id must be a non-empty string of at most 1024 bytes",
                ));
            }
        }
    }
    // Two spellings of one field: both present is ambiguous (a `null` in one
    // would otherwise widen the regulation to every source), so refused.
    if body.contains_key("source_id") && body.contains_key("sourceId") {
        return Err(ApiError::invalid(
            "source_id",
            "give one of 'source_id' and 'sourceId', not both",
        ));
    }
    let source = match body.get("source_id").or_else(|| body.get("sourceId")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ApiError::invalid("source_id", "must be a string")),
    };
    Ok((kind, ids, source))
}

/// The fields of `POST /regulations` (`sourceId` spells `source_id` too).
pub const FIELDS: &[&str] = &[
    "regulationType",
    "subjectType",
    "subjectIds",
    "source_id",
    "sourceId",
];

/// The body of `POST /regulations` (Segment's Regulations API); other
/// fields are refused.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct RegulationInput {
    /// `DELETE_ONLY`, `SUPPRESS_WITH_DELETE`, `SUPPRESS_ONLY`, `UNSUPPRESS`,
    /// `DELETE_INTERNAL` or `SUPPRESS_WITH_DELETE_INTERNAL`.
    pub regulationType: String,
    /// `USER_ID` (the only kind).
    pub subjectType: Option<String>,
    /// 1 to 5000 non-empty strings; duplicates count once.
    pub subjectIds: Vec<String>,
    /// Limit the regulation to one source.
    pub source_id: Option<String>,
    /// `source_id` in Segment's spelling; giving both is refused.
    pub sourceId: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn field_of(e: ApiError) -> String {
        format!("{e:?}")
    }

    #[test]
    fn bad_requests_name_the_field() {
        let empty = parse(&body(
            json!({"regulationType": "DELETE_ONLY", "subjectIds": []}),
        ));
        assert!(field_of(empty.unwrap_err()).contains("subjectIds"));
        let many: Vec<String> = (0..=MAX_SUBJECTS).map(|i| format!("u{i}")).collect();
        let over = parse(&body(
            json!({"regulationType": "DELETE_ONLY", "subjectIds": many}),
        ));
        assert!(field_of(over.unwrap_err()).contains("at most 5000"));
        let kind = parse(&body(
            json!({"regulationType": "FORGET", "subjectIds": ["u"]}),
        ));
        assert!(field_of(kind.unwrap_err()).contains("regulationType"));
    }

    #[test]
    fn duplicate_ids_count_once() {
        let (_, ids, _) = parse(&body(json!({
            "regulationType": "SUPPRESS_ONLY", "subjectIds": ["a", "b", "a"]
        })))
        .unwrap_or_default();
        assert_eq!(ids, vec!["a".to_string(), "b".to_string()]);
    }
}
