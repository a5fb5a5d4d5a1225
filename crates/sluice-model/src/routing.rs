//! Per-call destination selection through the `integrations` object.
//!
//! Clients address destinations by their documented, case-sensitive name
//! (`"Webhooks"`); the key `All` sets the default for names not mentioned.
//! Segment's libraries also let a destination key carry an options object
//! instead of `true` (`{"Webhooks": {"foo": 1}}`), which means "enabled, with
//! these options", so any non-boolean value under the name enables it.

use serde_json::{Map, Value};

/// The key that sets the default for destinations not named explicitly.
pub const ALL: &str = "All";

/// Whether a call with this `integrations` object goes to destination `name`.
///
/// In order: the value under `name` (case-sensitive) decides when it is a
/// boolean, and enables when it is any other non-null value; otherwise `All`
/// decides when it is a boolean; otherwise the destination is enabled.
pub fn destination_enabled(integrations: Option<&Map<String, Value>>, name: &str) -> bool {
    let Some(integrations) = integrations else {
        return true;
    };
    match integrations.get(name) {
        Some(Value::Bool(on)) => return *on,
        Some(Value::Null) | None => {}
        Some(_) => return true,
    }
    match integrations.get(ALL) {
        Some(Value::Bool(on)) => *on,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn enabled(integrations: Value) -> bool {
        destination_enabled(integrations.as_object(), "Webhooks")
    }

    #[test]
    fn missing_integrations_enables() {
        assert!(destination_enabled(None, "Webhooks"));
        assert!(enabled(json!({})));
    }

    #[test]
    fn explicit_false_disables() {
        assert!(!enabled(json!({"Webhooks": false})));
    }

    #[test]
    fn all_false_disables_unnamed_destination() {
        assert!(!enabled(json!({"All": false, "Mixpanel": true})));
    }

    #[test]
    fn named_true_overrides_all_false() {
        assert!(enabled(json!({"All": false, "Webhooks": true})));
    }

    #[test]
    fn named_false_overrides_all_true() {
        assert!(!enabled(json!({"All": true, "Webhooks": false})));
    }

    #[test]
    fn names_are_case_sensitive() {
        assert!(enabled(json!({"webhooks": false})));
        assert!(!enabled(json!({"webhooks": true, "All": false})));
        assert!(enabled(json!({"all": false})));
    }

    #[test]
    fn options_object_under_name_enables_even_when_all_is_false() {
        assert!(enabled(json!({"All": false, "Webhooks": {"opt": 1}})));
    }

    #[test]
    fn null_under_name_falls_back_to_all() {
        assert!(!enabled(json!({"All": false, "Webhooks": null})));
        assert!(enabled(json!({"Webhooks": null})));
    }

    #[test]
    fn non_boolean_all_is_ignored() {
        assert!(enabled(json!({"All": "false"})));
        assert!(enabled(json!({"All": 0})));
    }
}
