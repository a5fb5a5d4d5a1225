//! A source's block rules and tracking plan.
//!
//! Document (what the admin API takes and shows):
//!
//! ```json
//! {
//!   "blocked_events": ["Debug Ping"],
//!   "blocked_identify_traits": ["ssn"],
//!   "blocked_group_traits": ["internal_id"],
//!   "tracking_plan": {"enabled": true, "events": ["Order Completed"]}
//! }
//! ```
//!
//! Every key is optional. Blocking applies to track events by name; with the
//! tracking plan enabled, a track event whose name is not listed is blocked
//! too. Page, screen, identify, group and alias calls are never blocked
//! whole; identify and group calls lose their blocked trait keys.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::RuleError;
use crate::shape::Shape;

/// Most names one list may hold.
pub const MAX_LIST: usize = 2000;
/// Longest name, in characters.
pub const MAX_NAME: usize = 200;

/// The rule that blocks a listed track event.
pub const RULE_BLOCKED_EVENT: &str = "blocked_events";
/// The rule that blocks a track event missing from the tracking plan.
pub const RULE_TRACKING_PLAN: &str = "tracking_plan";

/// Parsed, ready-to-evaluate rules of one source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceRules {
    pub blocked_events: Vec<String>,
    pub blocked_identify_traits: Vec<String>,
    pub blocked_group_traits: Vec<String>,
    pub plan_enabled: bool,
    pub plan_events: Vec<String>,
    blocked_set: HashSet<String>,
    plan_set: HashSet<String>,
}

/// What the rules decide about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Blocked by the named rule.
    Block(&'static str),
}

impl SourceRules {
    /// Parses a rules document, naming the offending field on error.
    pub fn parse(doc: &Value) -> Result<SourceRules, RuleError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| RuleError::new("rules", "must be a JSON object"))?;
        const KEYS: [&str; 4] = [
            "blocked_events",
            "blocked_identify_traits",
            "blocked_group_traits",
            "tracking_plan",
        ];
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(RuleError::new(
                k.as_str(),
                format!("unknown field (fields: {})", KEYS.join(", ")),
            ));
        }
        let mut rules = SourceRules {
            blocked_events: names(obj, "blocked_events", "blocked_events")?,
            blocked_identify_traits: names(
                obj,
                "blocked_identify_traits",
                "blocked_identify_traits",
            )?,
            blocked_group_traits: names(obj, "blocked_group_traits", "blocked_group_traits")?,
            ..SourceRules::default()
        };
        match obj.get("tracking_plan") {
            None | Some(Value::Null) => {}
            Some(Value::Object(plan)) => {
                if let Some(k) = plan.keys().find(|k| *k != "enabled" && *k != "events") {
                    return Err(RuleError::new(
                        format!("tracking_plan.{k}"),
                        "unknown field (fields: enabled, events)",
                    ));
                }
                rules.plan_enabled = match plan.get("enabled") {
                    None => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(RuleError::new("tracking_plan.enabled", "must be a boolean"));
                    }
                };
                rules.plan_events = names(plan, "events", "tracking_plan.events")?;
            }
            Some(_) => return Err(RuleError::new("tracking_plan", "must be an object")),
        }
        rules.blocked_set = rules.blocked_events.iter().cloned().collect();
        rules.plan_set = rules.plan_events.iter().cloned().collect();
        Ok(rules)
    }

    /// The document form, as stored and shown.
    pub fn to_value(&self) -> Value {
        json!({
            "blocked_events": self.blocked_events,
            "blocked_identify_traits": self.blocked_identify_traits,
            "blocked_group_traits": self.blocked_group_traits,
            "tracking_plan": {"enabled": self.plan_enabled, "events": self.plan_events},
        })
    }

    /// True when no rule can act on any call.
    pub fn is_empty(&self) -> bool {
        self.blocked_set.is_empty()
            && self.blocked_identify_traits.is_empty()
            && self.blocked_group_traits.is_empty()
            && !self.plan_enabled
    }

    /// Whether a call passes. Only track calls can be blocked whole.
    pub fn verdict(&self, shape: &Shape) -> Verdict {
        if shape.kind != "track" {
            return Verdict::Pass;
        }
        let name = shape.name.as_deref().unwrap_or_default();
        if self.blocked_set.contains(name) {
            return Verdict::Block(RULE_BLOCKED_EVENT);
        }
        if self.plan_enabled && !self.plan_set.contains(name) {
            return Verdict::Block(RULE_TRACKING_PLAN);
        }
        Verdict::Pass
    }

    /// The blocked trait keys for a call of `kind`.
    pub fn blocked_traits(&self, kind: &str) -> &[String] {
        match kind {
            "identify" => &self.blocked_identify_traits,
            "group" => &self.blocked_group_traits,
            _ => &[],
        }
    }

    /// The body without its blocked trait keys, or `None` when the call
    /// carries none of them (the body is then used as it is).
    ///
    /// An identify's blocked keys go from `context.traits` as well as from
    /// `traits`: RudderStack's libraries send an identify's traits only
    /// there, analytics.js copies them there, and the profile engine reads
    /// `context.traits` when `traits` is empty, so a key left there would
    /// reach profiles and destinations all the same. A group's
    /// `context.traits` are the user's, not the group's, and stay.
    pub fn strip_traits(&self, shape: &Shape, body: &str) -> Option<String> {
        let blocked = self.blocked_traits(shape.kind);
        if blocked.is_empty() {
            return None;
        }
        let identify = shape.kind == "identify";
        if !identify && !shape.fields.iter().any(|(k, _)| blocked.contains(k)) {
            return None;
        }
        let mut message: Map<String, Value> = serde_json::from_str(body).ok()?;
        let mut removed = remove_keys(message.get_mut("traits"), blocked);
        if identify {
            let context_traits = message
                .get_mut("context")
                .and_then(Value::as_object_mut)
                .and_then(|c| c.get_mut("traits"));
            removed |= remove_keys(context_traits, blocked);
        }
        if !removed {
            return None;
        }
        serde_json::to_string(&message).ok()
    }
}

/// Removes `keys` from `value` when it is an object; whether any was there.
fn remove_keys(value: Option<&mut Value>, keys: &[String]) -> bool {
    let Some(object) = value.and_then(Value::as_object_mut) else {
        return false;
    };
    let mut removed = false;
    for key in keys {
        removed |= object.shift_remove(key).is_some();
    }
    removed
}

/// A list of distinct, non-empty names under `key` of `obj`.
fn names(obj: &Map<String, Value>, key: &str, field: &str) -> Result<Vec<String>, RuleError> {
    let list = match obj.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(RuleError::new(field, "must be an array of strings")),
    };
    if list.len() > MAX_LIST {
        return Err(RuleError::new(field, format!("at most {MAX_LIST} names")));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let name = item
            .as_str()
            .ok_or_else(|| RuleError::new(format!("{field}[{i}]"), "must be a string"))?;
        if name.is_empty() || name.chars().count() > MAX_NAME {
            return Err(RuleError::new(
                format!("{field}[{i}]"),
                format!("must be 1 to {MAX_NAME} characters"),
            ));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(name: &str) -> Shape {
        Shape::of(&format!(r#"{{"type":"track","event":"{name}"}}"#), "track")
    }

    #[test]
    fn blocks_listed_track_events_only() {
        let rules = SourceRules::parse(&json!({"blocked_events": ["Debug Ping"]})).unwrap();
        assert_eq!(
            rules.verdict(&track("Debug Ping")),
            Verdict::Block(RULE_BLOCKED_EVENT)
        );
        assert_eq!(rules.verdict(&track("Order Completed")), Verdict::Pass);
        let page = Shape::of(r#"{"type":"page","name":"Debug Ping"}"#, "page");
        assert_eq!(rules.verdict(&page), Verdict::Pass);
    }

    #[test]
    fn tracking_plan_blocks_unplanned_events_when_enabled() {
        let doc = json!({"tracking_plan": {"enabled": true, "events": ["Signed Up"]}});
        let rules = SourceRules::parse(&doc).unwrap();
        assert_eq!(rules.verdict(&track("Signed Up")), Verdict::Pass);
        assert_eq!(
            rules.verdict(&track("Clicked")),
            Verdict::Block(RULE_TRACKING_PLAN)
        );
        let off = json!({"tracking_plan": {"enabled": false, "events": ["Signed Up"]}});
        assert_eq!(
            SourceRules::parse(&off).unwrap().verdict(&track("Clicked")),
            Verdict::Pass
        );
    }

    #[test]
    fn strips_blocked_traits_and_keeps_the_rest_in_order() {
        let rules = SourceRules::parse(&json!({"blocked_identify_traits": ["ssn"]})).unwrap();
        let body = r#"{"type":"identify","traits":{"name":"A","ssn":"1","age":3},"userId":"u"}"#;
        let shape = Shape::of(body, "identify");
        let out = rules.strip_traits(&shape, body).unwrap();
        assert_eq!(
            out,
            r#"{"type":"identify","traits":{"name":"A","age":3},"userId":"u"}"#
        );
        let clean = r#"{"type":"identify","traits":{"name":"A"}}"#;
        assert_eq!(
            rules.strip_traits(&Shape::of(clean, "identify"), clean),
            None
        );
        let group = r#"{"type":"group","traits":{"ssn":"1"}}"#;
        assert_eq!(rules.strip_traits(&Shape::of(group, "group"), group), None);
    }

    #[test]
    fn blocked_identify_traits_leave_context_traits_too() {
        let rules = SourceRules::parse(&json!({"blocked_identify_traits": ["ssn"]})).unwrap();
        // RudderStack: the traits only in `context.traits`.
        let rudder = r#"{"type":"identify","userId":"u","context":{"traits":{"ssn":"1","plan":"pro"},"ip":"1.2.3.4"}}"#;
        let out = rules
            .strip_traits(&Shape::of(rudder, "identify"), rudder)
            .unwrap();
        assert_eq!(
            out,
            r#"{"type":"identify","userId":"u","context":{"traits":{"plan":"pro"},"ip":"1.2.3.4"}}"#
        );
        // analytics.js: the same key in both places; neither keeps it.
        let both = r#"{"type":"identify","traits":{"ssn":"1"},"context":{"traits":{"ssn":"1"}}}"#;
        let out = rules
            .strip_traits(&Shape::of(both, "identify"), both)
            .unwrap();
        assert_eq!(
            out,
            r#"{"type":"identify","traits":{},"context":{"traits":{}}}"#
        );
        // A group's `context.traits` are the user's: untouched.
        let rules = SourceRules::parse(&json!({"blocked_group_traits": ["ssn"]})).unwrap();
        let group = r#"{"type":"group","traits":{"n":1},"context":{"traits":{"ssn":"1"}}}"#;
        assert_eq!(rules.strip_traits(&Shape::of(group, "group"), group), None);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"blocked_events": "x"}), "blocked_events"),
            (json!({"blocked_events": ["ok", 3]}), "blocked_events[1]"),
            (
                json!({"blocked_group_traits": [""]}),
                "blocked_group_traits[0]",
            ),
            (
                json!({"tracking_plan": {"enabled": "yes"}}),
                "tracking_plan.enabled",
            ),
            (
                json!({"tracking_plan": {"events": [1]}}),
                "tracking_plan.events[0]",
            ),
            (json!({"blocked": []}), "blocked"),
        ];
        for (doc, field) in cases {
            assert_eq!(SourceRules::parse(&doc).unwrap_err().field, field, "{doc}");
        }
    }

    #[test]
    fn document_round_trips() {
        let doc =
            json!({"blocked_events": ["A"], "tracking_plan": {"enabled": true, "events": ["B"]}});
        let rules = SourceRules::parse(&doc).unwrap();
        assert_eq!(SourceRules::parse(&rules.to_value()).unwrap(), rules);
        assert!(!rules.is_empty());
        assert!(SourceRules::parse(&json!({})).unwrap().is_empty());
    }
}
