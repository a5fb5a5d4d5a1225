//! Definitions: computed-trait kinds and audience condition trees, parsed
//! from the admin API's JSON with errors that name the field.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::{Refers, reference_field};
use crate::error::DefinitionError;
use crate::filter::{Compare, Filter};

/// Upper bound of a window: about ten years.
const MAX_WINDOW_MS: i64 = 10 * 366 * 24 * 3600 * 1000;

/// "In the last N days / hours / seconds". Seconds exist for fine windows
/// and tests; the sweep granularity is documented in `docs/personas.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
}

impl Window {
    pub fn millis(&self) -> i64 {
        let d = i64::from(self.days.unwrap_or(0)) * 86_400_000;
        let h = i64::from(self.hours.unwrap_or(0)) * 3_600_000;
        let s = i64::from(self.seconds.unwrap_or(0)) * 1000;
        d + h + s
    }

    /// Refuses an empty or over-long window at `field`.
    pub(crate) fn check(&self, field: &str) -> Result<(), DefinitionError> {
        let ms = self.millis();
        if ms <= 0 {
            return Err(DefinitionError::new(
                field,
                "must give days, hours or seconds above 0",
            ));
        }
        if ms > MAX_WINDOW_MS {
            return Err(DefinitionError::new(field, "must be at most 3660 days"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraitKind {
    Counter,
    Sum,
    Avg,
    Min,
    Max,
    MostFrequent,
    First,
    Last,
    UniqueList,
    UniqueCount,
}

/// A computed trait over track event `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraitDefinition {
    pub kind: TraitKind,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Filter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Sources whose events count; empty = all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ids: Vec<String>,
}

/// How many times, for `performed`. Default: at least once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Count {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactly: Option<u64>,
}

impl Count {
    pub fn admits(&self, n: u64) -> bool {
        if self.at_least.is_none() && self.at_most.is_none() && self.exactly.is_none() {
            return n >= 1;
        }
        self.at_least.is_none_or(|m| n >= m)
            && self.at_most.is_none_or(|m| n <= m)
            && self.exactly.is_none_or(|m| n == m)
    }
}

fn default_type() -> String {
    "track".into()
}

/// An event the person performed (or did not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Performed {
    /// `track` (default), `page` or `screen`.
    #[serde(rename = "type", default = "default_type")]
    pub kind: String,
    /// Track event name, or page/screen name; required for track.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Filter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Count>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// The audience condition language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Condition {
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    Performed(Performed),
    NotPerformed(Performed),
    /// A trait from identify calls.
    Trait(Compare),
    /// A computed trait's current value, by key.
    ComputedTrait(Compare),
    /// Membership of another audience, by key.
    Audience(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudienceDefinition {
    pub condition: Condition,
    /// Off by default: a member needs a userId.
    #[serde(default)]
    pub include_anonymous: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ids: Vec<String>,
}

/// A parsed definition of either class.
#[derive(Debug, Clone, PartialEq)]
pub enum Definition {
    Trait(TraitDefinition),
    Audience(AudienceDefinition),
}

/// `trait` or `audience`: the class names used in messages and storage.
pub const TRAIT: &str = "trait";
pub const AUDIENCE: &str = "audience";

impl Definition {
    /// Parses and checks a definition of `class` (`trait`/`audience`).
    pub fn parse(class: &str, value: &Value) -> Result<Definition, DefinitionError> {
        let parsed = match class {
            TRAIT => Definition::Trait(from_json(value)?),
            _ => Definition::Audience(from_json(value)?),
        };
        crate::check::definition(&parsed)?;
        Ok(parsed)
    }

    /// Parses stored JSON text without checking it again: it was checked
    /// when it was saved, and a rule added since (a length limit, say) must
    /// not make a definition the engine already runs disappear on upgrade.
    pub fn from_stored(class: &str, text: &str) -> Result<Definition, DefinitionError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| DefinitionError::new("definition", e))?;
        Ok(match class {
            TRAIT => Definition::Trait(from_json(&value)?),
            _ => Definition::Audience(from_json(&value)?),
        })
    }

    pub fn to_json(&self) -> Value {
        match self {
            Definition::Trait(t) => serde_json::to_value(t),
            Definition::Audience(a) => serde_json::to_value(a),
        }
        .unwrap_or(Value::Null)
    }

    /// Keys of other audiences this one refers to.
    pub fn audience_refs(&self) -> BTreeSet<String> {
        self.refs(|c| match c {
            Condition::Audience(key) => Some(key),
            _ => None,
        })
    }

    /// Keys of the computed traits this audience compares.
    pub fn computed_trait_refs(&self) -> BTreeSet<String> {
        self.refs(|c| match c {
            Condition::ComputedTrait(cmp) => Some(&cmp.key),
            _ => None,
        })
    }

    /// The JSON path of the first condition comparing the computed trait
    /// `key`, to name it in a refusal (`definition.condition` if none).
    pub fn computed_trait_ref_field(&self, key: &str) -> String {
        self.reference_field(key, Refers::ComputedTrait)
    }

    /// The JSON path of the first reference to the audience `key`.
    pub fn audience_ref_field(&self, key: &str) -> String {
        self.reference_field(key, Refers::Audience)
    }

    fn reference_field(&self, key: &str, to: Refers) -> String {
        const ROOT: &str = "definition.condition";
        match self {
            Definition::Audience(a) => reference_field(&a.condition, ROOT, key, to),
            Definition::Trait(_) => None,
        }
        .unwrap_or_else(|| ROOT.to_owned())
    }

    fn refs(&self, pick: impl Fn(&Condition) -> Option<&String>) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        if let Definition::Audience(a) = self {
            collect_refs(&a.condition, &pick, &mut out);
        }
        out
    }
}

/// Deserializes `value`, naming the field that does not fit by its path
/// under `definition` (`definition.condition.and[0].performed.count`).
fn from_json<T: DeserializeOwned>(value: &Value) -> Result<T, DefinitionError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match path.as_str() {
            "." => "definition".to_owned(),
            p if p.starts_with('[') => format!("definition{p}"),
            p => format!("definition.{p}"),
        };
        DefinitionError::new(&field, e.into_inner())
    })
}

fn collect_refs(
    c: &Condition,
    pick: &impl Fn(&Condition) -> Option<&String>,
    out: &mut BTreeSet<String>,
) {
    match c {
        Condition::And(items) | Condition::Or(items) => {
            items.iter().for_each(|i| collect_refs(i, pick, out));
        }
        Condition::Not(inner) => collect_refs(inner, pick, out),
        leaf => {
            if let Some(key) = pick(leaf) {
                out.insert(key.clone());
            }
        }
    }
}

/// Finds a cycle in the audience graph `refs` (key → keys it refers to),
/// returned as the path `a -> b -> a`.
pub fn find_cycle(refs: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        key: &str,
        refs: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = path.iter().position(|k| k == key) {
            let mut cycle = path[pos..].to_vec();
            cycle.push(key.to_owned());
            return Some(cycle);
        }
        if done.contains(key) {
            return None;
        }
        path.push(key.to_owned());
        for next in refs.get(key).into_iter().flatten() {
            if let Some(c) = visit(next, refs, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(key.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    refs.keys()
        .find_map(|k| visit(k, refs, &mut Vec::new(), &mut done))
}
