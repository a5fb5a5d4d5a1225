//! A person: identities and traits (the stored document) and recent
//! behavioural events (stored apart, one row each, see
//! `sluice_store::ProfileEventRow`), with the identity and trait merge
//! rules (pure).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sluice_store::{ProfileEventRow, ProfileRecord};

/// Events kept per profile; older ones are dropped (oldest timestamp first).
pub const MAX_EVENTS: usize = 1000;
/// Anonymous ids kept per profile (the newest).
pub const MAX_ANONYMOUS_IDS: usize = 100;

/// One behavioural event (track, page, screen) as a profile keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEvent {
    pub seq: i64,
    #[serde(rename = "src")]
    pub source_id: String,
    #[serde(rename = "t")]
    pub kind: String,
    /// Track event name, or page/screen name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Event timestamp, unix ms.
    pub ts: i64,
    #[serde(default, rename = "p", skip_serializing_if = "Map::is_empty")]
    pub properties: Map<String, Value>,
    /// [`message_hash`] of the call's `messageId` (rows stored before it
    /// was kept have none).
    #[serde(skip)]
    pub message_hash: Option<i64>,
}

/// A person. Identities and traits are stored as JSON in `profiles.doc`;
/// the events are rows of their own, loaded only when a definition needs
/// them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    #[serde(default)]
    pub user_ids: Vec<String>,
    #[serde(default)]
    pub anonymous_ids: Vec<String>,
    #[serde(default)]
    pub traits: Map<String, Value>,
    /// When each trait was last set (event timestamp, ms): last write wins.
    #[serde(default)]
    pub trait_times: BTreeMap<String, i64>,
    /// Sources that sent identify, group or alias calls about this person,
    /// sorted (behavioural calls name theirs in their rows). A deletion
    /// tells their destinations even after retention removed the calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Sorted by (ts, seq); empty unless loaded.
    #[serde(skip)]
    pub events: Vec<ProfileEvent>,
    /// The document (identities, traits) changed since it was loaded.
    #[serde(skip)]
    pub dirty: bool,
    /// Type and name of the events the cap dropped since it was loaded:
    /// definitions reading them may change (see [`crate::index`]).
    #[serde(skip)]
    pub dropped: Vec<(String, Option<String>)>,
}

/// What the engine reads from one stored call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub seq: i64,
    pub source_id: String,
    pub kind: String,
    pub user_id: Option<String>,
    pub anonymous_id: Option<String>,
    pub previous_id: Option<String>,
    pub name: Option<String>,
    pub ts: i64,
    /// `properties` as JSON object text (`{}` when absent or not an
    /// object): kept as it came, parsed only when a definition reads it.
    pub properties: String,
    pub traits: Map<String, Value>,
    pub message_id: Option<String>,
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn object(v: Option<Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// An identify call's traits: its `traits` object, or, when that is absent
/// or empty, `context.traits`. RudderStack's SDKs (Python, browser) send an
/// identify's traits only in `context.traits`, and RudderStack reads them
/// from either place; Segment's libraries send `traits`, which wins.
fn identify_traits(
    kind: &str,
    traits: Option<Value>,
    context_traits: Option<Value>,
) -> Map<String, Value> {
    let own = object(traits);
    if kind != "identify" || !own.is_empty() {
        return own;
    }
    object(context_traits)
}

/// `context`, of which the engine reads only `traits`.
#[derive(Deserialize)]
struct Context {
    #[serde(default)]
    traits: Option<Value>,
}

/// The fields the engine reads from a stored body; the rest (`integrations`,
/// `context` but its `traits`, …) is skipped without being built.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    event: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default, rename = "userId")]
    user_id: Option<Value>,
    #[serde(default, rename = "anonymousId")]
    anonymous_id: Option<Value>,
    #[serde(default, rename = "previousId")]
    previous_id: Option<Value>,
    #[serde(default, rename = "messageId")]
    message_id: Option<Value>,
    #[serde(default, borrow)]
    properties: Option<Props<'a>>,
    #[serde(default)]
    traits: Option<Value>,
    #[serde(default)]
    context: Option<Context>,
}

/// `properties` as read: borrowed text in the usual case, or a value taken
/// out of a document parsed whole.
enum Props<'a> {
    Raw(&'a RawValue),
    Value(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Props<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(Props::Raw)
    }
}

impl Props<'_> {
    /// Object text, `{}` for anything that is not an object.
    fn object_text(self) -> String {
        match self {
            Props::Raw(raw) => {
                let t = raw.get();
                if t.starts_with('{') {
                    t.to_owned()
                } else {
                    "{}".to_owned()
                }
            }
            Props::Value(v @ Value::Object(_)) => v.to_string(),
            Props::Value(_) => "{}".to_owned(),
        }
    }
}

impl Call {
    /// Reads a stored (validated, enriched) body; `None` when it is not JSON.
    pub fn parse(seq: i64, source_id: &str, body: &str, received_ms: i64) -> Option<Call> {
        let f = match serde_json::from_str::<Fields<'_>>(body) {
            Ok(f) => f,
            // Odd shapes (a timestamp that is not a string, a repeated
            // key): read them as a whole document instead.
            Err(_) => Fields::loose(serde_json::from_str(body).ok()?)?,
        };
        let ts = f
            .timestamp
            .as_deref()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map_or(received_ms, |t| t.timestamp_millis());
        let name = match &*f.kind {
            "track" => text(f.event.as_ref()),
            _ => text(f.name.as_ref()),
        };
        Some(Call {
            seq,
            source_id: source_id.to_owned(),
            user_id: text(f.user_id.as_ref()),
            anonymous_id: text(f.anonymous_id.as_ref()),
            previous_id: text(f.previous_id.as_ref()),
            message_id: text(f.message_id.as_ref()),
            name,
            ts,
            properties: f
                .properties
                .map_or_else(|| "{}".to_owned(), Props::object_text),
            traits: identify_traits(&f.kind, f.traits, f.context.and_then(|c| c.traits)),
            kind: f.kind.into_owned(),
        })
    }
}

impl Fields<'static> {
    /// The fields of a body already parsed as a whole.
    fn loose(mut v: Value) -> Option<Fields<'static>> {
        let mut take = |k: &str| v.as_object_mut().and_then(|m| m.remove(k));
        let kind = match take("type")? {
            Value::String(s) => s,
            _ => return None,
        };
        let timestamp = match take("timestamp") {
            Some(Value::String(s)) => Some(Cow::Owned(s)),
            _ => None,
        };
        Some(Fields {
            kind: Cow::Owned(kind),
            timestamp,
            event: take("event"),
            name: take("name"),
            user_id: take("userId"),
            anonymous_id: take("anonymousId"),
            previous_id: take("previousId"),
            message_id: take("messageId"),
            properties: take("properties").map(Props::Value),
            traits: take("traits"),
            context: take("context").and_then(|c| match c {
                Value::Object(mut c) => Some(Context {
                    traits: c.remove("traits"),
                }),
                _ => None,
            }),
        })
    }
}

impl ProfileEvent {
    /// The event of a stored row, with all its properties; properties that
    /// do not parse as an object are read as none.
    pub fn from_row(row: &ProfileEventRow) -> ProfileEvent {
        ProfileEvent::from_row_keeping(row, None)
    }

    /// The event of a stored row, keeping only the top-level properties in
    /// `roots` (all when `None`; see [`crate::reads`]).
    pub fn from_row_keeping(
        row: &ProfileEventRow,
        roots: Option<&BTreeSet<String>>,
    ) -> ProfileEvent {
        ProfileEvent {
            seq: row.seq,
            source_id: row.source_id.clone(),
            kind: row.kind.clone(),
            name: row.name.clone(),
            ts: row.ts,
            properties: crate::reads::properties(&row.properties, roots),
            message_hash: row.message_hash,
        }
    }
}

/// A `messageId` as the profile engine keeps it: 64-bit FNV-1a. Stable
/// across versions and processes (it is stored); not keyed, as it only
/// tells one person's calls apart.
pub fn message_hash(message_id: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in message_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

/// Whether a call is behaviour a profile keeps as an event.
pub fn is_behaviour(kind: &str) -> bool {
    matches!(kind, "track" | "page" | "screen")
}

impl Call {
    /// The row this call adds to its person's events, if it is behaviour.
    pub fn event_row(&self) -> Option<ProfileEventRow> {
        is_behaviour(&self.kind).then(|| ProfileEventRow {
            seq: self.seq,
            ts: self.ts,
            source_id: self.source_id.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            properties: self.properties.clone(),
            message_hash: self.message_id.as_deref().map(message_hash),
        })
    }
}

impl Profile {
    /// A stored profile: its document, and its events when they were
    /// loaded (the newest [`MAX_EVENTS`] of them), keeping the properties
    /// in `roots` (all when `None`).
    pub fn from_record(
        r: &ProfileRecord,
        roots: Option<&BTreeSet<String>>,
    ) -> Result<Profile, serde_json::Error> {
        let mut p: Profile = serde_json::from_str(&r.doc)?;
        let skip = r.events.len().saturating_sub(MAX_EVENTS);
        // A call stored twice (sent twice before a definition loaded the
        // events, so nothing could check) counts once: its first row.
        let mut seen = HashSet::new();
        p.events = r.events[skip..]
            .iter()
            .filter(|e| e.message_hash.is_none_or(|m| seen.insert(m)))
            .map(|e| ProfileEvent::from_row_keeping(e, roots))
            .collect();
        Ok(p)
    }

    /// The stored document: identities and traits.
    pub fn doc(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// The userId messages carry: the newest one.
    pub fn user_id(&self) -> Option<&str> {
        self.user_ids.last().map(String::as_str)
    }

    pub fn anonymous_id(&self) -> Option<&str> {
        self.anonymous_ids.last().map(String::as_str)
    }

    pub fn add_user_id(&mut self, id: &str) {
        if !self.user_ids.iter().any(|u| u == id) {
            self.user_ids.push(id.to_owned());
            self.dirty = true;
        }
    }

    /// Records that `source` sent a call about this person.
    pub fn add_source(&mut self, source: &str) {
        if let Err(at) = self.sources.binary_search_by(|s| s.as_str().cmp(source)) {
            self.sources.insert(at, source.to_owned());
            self.dirty = true;
        }
    }

    pub fn add_anonymous_id(&mut self, id: &str) {
        if !self.anonymous_ids.iter().any(|a| a == id) {
            self.anonymous_ids.push(id.to_owned());
            self.dirty = true;
            if self.anonymous_ids.len() > MAX_ANONYMOUS_IDS {
                self.anonymous_ids.remove(0);
            }
        }
    }

    /// Applies a call's traits (identify). `context.traits` is ignored.
    /// Behaviour is kept apart: see [`Call::event_row`] and
    /// [`Profile::push_event`].
    pub fn apply_traits(&mut self, call: &Call) {
        if call.kind == "identify" {
            self.merge_traits(&call.traits, call.ts);
        }
    }

    /// Last write wins per key, by event timestamp (ties: the later call).
    pub fn merge_traits(&mut self, traits: &Map<String, Value>, ts: i64) {
        for (k, v) in traits {
            if self.trait_times.get(k).is_none_or(|&t| ts >= t) {
                if self.traits.get(k) != Some(v) || self.trait_times.get(k) != Some(&ts) {
                    self.dirty = true;
                }
                self.traits.insert(k.clone(), v.clone());
                self.trait_times.insert(k.clone(), ts);
            }
        }
    }

    /// Whether a loaded event came from a call whose `messageId` hashes to
    /// `hash`: the same call sent again (a client's retry after a lost
    /// answer).
    pub fn has_message(&self, hash: i64) -> bool {
        self.events.iter().any(|e| e.message_hash == Some(hash))
    }

    /// Inserts an event in (ts, seq) order, dropping the oldest beyond
    /// [`MAX_EVENTS`]. Returns the position before which stored events
    /// must go when some were dropped.
    pub fn push_event(&mut self, e: ProfileEvent) -> Option<(i64, i64)> {
        let pos = self
            .events
            .partition_point(|x| (x.ts, x.seq) <= (e.ts, e.seq));
        self.events.insert(pos, e);
        self.cap_events()
    }

    /// Drops the oldest events beyond [`MAX_EVENTS`]; returns the new first
    /// position when any went.
    pub fn cap_events(&mut self) -> Option<(i64, i64)> {
        if self.events.len() <= MAX_EVENTS {
            return None;
        }
        let extra = self.events.len() - MAX_EVENTS;
        for e in self.events.drain(..extra) {
            self.dropped.push((e.kind, e.name));
        }
        self.events.first().map(|e| (e.ts, e.seq))
    }

    /// Whether `other` may merge into `self` without an explicit alias: a
    /// profile holds one userId unless an alias joined two.
    pub fn can_merge(&self, other: &Profile) -> bool {
        self.user_ids.is_empty()
            || other.user_ids.is_empty()
            || other.user_ids.iter().all(|u| self.user_ids.contains(u))
    }

    /// Takes `other`'s identities, traits (by time) and loaded events.
    /// Returns the cap's position when events were dropped.
    pub fn absorb(&mut self, other: Profile) -> Option<(i64, i64)> {
        self.dirty = true;
        let mut user_ids = other.user_ids;
        for u in std::mem::take(&mut self.user_ids) {
            if !user_ids.contains(&u) {
                user_ids.push(u);
            }
        }
        self.user_ids = user_ids;
        for a in other.anonymous_ids {
            self.add_anonymous_id(&a);
        }
        for source in &other.sources {
            self.add_source(source);
        }
        for (k, v) in other.traits {
            let ts = other.trait_times.get(&k).copied().unwrap_or(i64::MIN);
            let mut one = Map::new();
            one.insert(k, v);
            self.merge_traits(&one, ts);
        }
        self.events.extend(other.events);
        self.events.sort_by_key(|e| (e.ts, e.seq));
        self.cap_events()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn traits(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn identify_traits_come_from_context_traits_when_the_call_has_none() {
        let read = |body: Value| {
            Call::parse(1, "s", &body.to_string(), 0)
                .map(|c| c.traits)
                .unwrap_or_default()
        };
        // RudderStack's Python SDK: traits only in `context.traits`.
        let rudder = json!({"type": "identify", "userId": "u", "traits": {},
                            "context": {"traits": {"plan": "pro"}, "library": {"name": "x"}}});
        assert_eq!(read(rudder), traits(json!({"plan": "pro"})));
        // The same, as a document the fast reader refuses (a repeated key).
        let loose = r#"{"type":"identify","userId":"u","userId":"u",
                        "context":{"traits":{"plan":"pro"}}}"#;
        let call = Call::parse(1, "s", loose, 0).map(|c| c.traits);
        assert_eq!(call, Some(traits(json!({"plan": "pro"}))));
        // Segment's libraries: `traits` wins over `context.traits`.
        let segment = json!({"type": "identify", "userId": "u", "traits": {"plan": "team"},
                             "context": {"traits": {"plan": "pro"}}});
        assert_eq!(read(segment), traits(json!({"plan": "team"})));
        // Only identify calls take them.
        let track = json!({"type": "track", "userId": "u", "event": "E",
                           "context": {"traits": {"plan": "pro"}}});
        assert!(read(track).is_empty());
    }

    #[test]
    fn traits_are_last_write_wins_by_timestamp() {
        let mut p = Profile::default();
        p.merge_traits(&traits(json!({"plan": "pro", "age": 3})), 200);
        p.merge_traits(&traits(json!({"plan": "free"})), 100);
        assert_eq!(p.traits["plan"], json!("pro"), "an older identify loses");
        p.merge_traits(&traits(json!({"plan": "team"})), 300);
        assert_eq!(p.traits["plan"], json!("team"));
    }

    #[test]
    fn a_call_stored_twice_loads_once_and_rows_without_a_message_id_all_load() {
        let row = |seq: i64, m: Option<&str>| ProfileEventRow {
            seq,
            ts: seq,
            source_id: "s".into(),
            kind: "track".into(),
            name: Some("Buy".into()),
            properties: "{}".into(),
            message_hash: m.map(message_hash),
        };
        let record = ProfileRecord {
            id: "prf".into(),
            doc: "{}".into(),
            next_change_at: None,
            events: vec![
                row(1, Some("m1")),
                row(2, Some("m1")),
                row(3, None),
                row(4, None),
                row(5, Some("m2")),
            ],
            version: 0,
        };
        let p = Profile::from_record(&record, None).expect("profile");
        let seqs: Vec<i64> = p.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3, 4, 5]);
        assert!(p.has_message(message_hash("m2")));
        assert!(!p.has_message(message_hash("m3")));
        // Stored hashes must never change: a fixed vector.
        assert_eq!(message_hash(""), 0xcbf2_9ce4_8422_2325_u64 as i64);
        assert_eq!(message_hash("a"), 0xaf63_dc4c_8601_ec8c_u64 as i64);
    }

    #[test]
    fn events_stay_sorted_and_capped() {
        let mut p = Profile::default();
        let mut cut = None;
        for i in 0..(MAX_EVENTS as i64 + 5) {
            let call = Call {
                seq: i,
                source_id: "s".into(),
                kind: "track".into(),
                user_id: None,
                anonymous_id: None,
                previous_id: None,
                name: Some("E".into()),
                ts: 10_000 - i,
                properties: "{}".into(),
                traits: Map::new(),
                message_id: None,
            };
            let row = call.event_row().expect("track is behaviour");
            cut = p.push_event(ProfileEvent::from_row(&row)).or(cut);
        }
        assert_eq!(p.events.len(), MAX_EVENTS);
        assert_eq!(
            cut,
            p.events.first().map(|e| (e.ts, e.seq)),
            "the cap's position"
        );
        assert!(!p.dirty, "events are not part of the document");
        assert!(p.events.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert_eq!(
            p.events[0].ts,
            10_000 - MAX_EVENTS as i64 + 1,
            "oldest dropped"
        );
    }

    #[test]
    fn a_call_is_read_from_its_fields_and_odd_shapes_still_parse() {
        let body = r#"{"type":"track","event":"E","userId":7,"anonymousId":"a",
            "properties":{"x":1},"context":{"ip":"1.2.3.4"},"timestamp":"2026-01-01T00:00:00.000Z"}"#;
        let c = Call::parse(1, "s", body, 5).expect("parses");
        assert_eq!(c.user_id.as_deref(), Some("7"));
        assert_eq!(c.name.as_deref(), Some("E"));
        assert_eq!(c.properties, r#"{"x":1}"#);
        assert_eq!(c.ts, 1_767_225_600_000);
        // A timestamp that is not a string falls back to the receipt time;
        // a repeated key keeps the last value, as a whole-document read does.
        let odd = r#"{"type":"track","event":"E","event":"F","timestamp":12}"#;
        let c = Call::parse(1, "s", odd, 5).expect("parses");
        assert_eq!((c.name.as_deref(), c.ts), (Some("F"), 5));
        assert!(Call::parse(1, "s", "not json", 5).is_none());
        assert!(Call::parse(1, "s", r#"{"type":3}"#, 5).is_none());
    }

    #[test]
    fn two_user_ids_do_not_merge_without_alias() {
        let a = Profile {
            user_ids: vec!["u1".into()],
            ..Profile::default()
        };
        let b = Profile {
            user_ids: vec!["u2".into()],
            ..Profile::default()
        };
        let anon = Profile {
            anonymous_ids: vec!["a".into()],
            ..Profile::default()
        };
        assert!(!a.can_merge(&b));
        assert!(a.can_merge(&anon));
        let mut merged = a.clone();
        merged.absorb(anon);
        assert_eq!(merged.user_id(), Some("u1"));
        assert_eq!(merged.anonymous_ids, vec!["a".to_string()]);
    }
}
