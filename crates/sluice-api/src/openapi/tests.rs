//! The documented request bodies name exactly the fields their handlers
//! accept: the handlers validate field by field (for messages that name the
//! field), so the request types are checked against the handlers' own lists.

use serde_json::Value;
use utoipa::PartialSchema;

use crate::admin::{deliveries, destinations, regulations, sources, webhook_settings};

fn fields<T: PartialSchema>() -> Vec<String> {
    let schema = serde_json::to_value(T::schema()).expect("schema");
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

#[test]
fn destination_body_documents_the_fields_the_handler_accepts() {
    assert_eq!(
        fields::<destinations::DestinationInput>(),
        sorted(destinations::FIELDS)
    );
}

#[test]
fn regulation_and_replay_bodies_document_the_fields_their_handlers_accept() {
    assert_eq!(
        fields::<regulations::RegulationInput>(),
        sorted(regulations::FIELDS)
    );
    assert_eq!(
        fields::<deliveries::ReplayBody>(),
        sorted(deliveries::REPLAY_FIELDS)
    );
}

#[test]
fn own_password_body_documents_the_fields_the_handler_accepts() {
    use crate::admin::team::own_password;
    assert_eq!(
        fields::<own_password::ChangePassword>(),
        sorted(own_password::FIELDS)
    );
}

#[test]
fn settings_body_documents_the_known_settings() {
    assert_eq!(
        fields::<webhook_settings::SettingsInput>(),
        sorted(webhook_settings::KNOWN_SETTINGS)
    );
    assert_eq!(
        fields::<webhook_settings::extras::StandardInput>(),
        sorted(webhook_settings::extras::STANDARD_KEYS)
    );
}

#[test]
fn source_update_body_documents_the_fields_that_can_change() {
    assert_eq!(
        fields::<sources::UpdateSource>(),
        sorted(sources::UPDATE_FIELDS)
    );
    assert_eq!(
        fields::<sources::CreateSource>(),
        sorted(&["name", "enabled"])
    );
}

#[test]
fn error_schema_matches_what_api_error_serializes() {
    use axum::response::IntoResponse;
    use sluice_model::{ErrorCode, ValidationError};
    let keys = |error: crate::ApiError| -> Vec<String> {
        let body = body_json(error.into_response());
        let mut v: Vec<String> = body.as_object().unwrap().keys().cloned().collect();
        v.sort();
        v
    };
    // A refused batch item carries every documented field, `index` included.
    let item = ValidationError {
        index: Some(2),
        ..ValidationError::new(ErrorCode::MissingField, "batch[2]: track requires 'event'")
    };
    assert_eq!(fields::<super::ErrorBody>(), keys(item.into()));
    // Every other error omits `index`.
    let mut plain = fields::<super::ErrorBody>();
    plain.retain(|f| f != "index");
    assert_eq!(plain, keys(crate::ApiError::not_found("source")));
}

fn body_json(response: axum::response::Response) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bytes = rt
        .block_on(axum::body::to_bytes(response.into_body(), 1 << 16))
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn every_documented_collection_kind_is_an_endpoint() {
    let schema = serde_json::to_value(crate::ingest::Kind::schema()).expect("schema");
    let names = schema["enum"].as_array().expect("enum");
    assert!(names.len() >= 8);
    for name in names {
        let name = name.as_str().unwrap();
        assert!(
            sluice_model::Endpoint::from_path_segment(name).is_some(),
            "/v1/{name} is documented but not served"
        );
    }
}
