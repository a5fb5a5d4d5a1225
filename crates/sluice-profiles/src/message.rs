//! The identify messages the engine emits, stored like ingested calls so
//! the delivery engine shapes, signs and retries them (see
//! `sluice-delivery`'s payload builder for the final key order).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use sluice_store::{Computation, EmittedMessage};

use crate::profile::Profile;

/// The stored body of one change: `traits` holds only `key: value`
/// (`null` when a computed trait lost its value, `false` on audience exit).
/// `space_id` fills `context.personas.namespace` and `.space_id`, as
/// Segment's Engage space id does (see `docs/personas.md`).
pub fn identify(
    space_id: &str,
    computation: &Computation,
    profile: &Profile,
    value: &Value,
    now: DateTime<Utc>,
    destination_ids: Vec<String>,
) -> EmittedMessage {
    let message_id = format!("personas-{}", uuid::Uuid::new_v4());
    let mut body = Map::new();
    body.insert("type".into(), json!("identify"));
    body.insert("messageId".into(), json!(message_id));
    match profile.user_id() {
        Some(u) => {
            body.insert("userId".into(), json!(u));
        }
        None => {
            body.insert("anonymousId".into(), json!(profile.anonymous_id()));
        }
    }
    let mut traits = Map::new();
    traits.insert(computation.key.clone(), value.clone());
    body.insert("traits".into(), Value::Object(traits));
    body.insert(
        "context".into(),
        json!({"personas": {
            "computation_class": computation.class,
            "computation_key": computation.key,
            "computation_id": computation.id,
            "namespace": space_id,
            "space_id": space_id,
        }}),
    );
    body.insert(
        "timestamp".into(),
        json!(now.to_rfc3339_opts(SecondsFormat::Millis, true)),
    );
    EmittedMessage {
        computation_id: computation.id.clone(),
        message_id,
        body: Value::Object(body).to_string(),
        destination_ids,
        deliver_at: None,
    }
}
