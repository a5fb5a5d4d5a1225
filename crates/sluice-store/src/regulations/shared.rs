//! Logic both backends share: matching events to subjects, pseudonyms and
//! the notification body.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, SecondsFormat, Utc};

use crate::{PERSONAS_SOURCE, SubjectPurge, keys};

/// Identity value → subject position, by kind.
#[derive(Debug, Default)]
pub(crate) struct SubjectIndex {
    users: HashMap<String, usize>,
    anons: HashMap<String, usize>,
}

/// Builds the index from `user:…`/`anon:…` identities and their subject.
pub(crate) fn subject_index(identities: &[(String, usize)]) -> SubjectIndex {
    let mut index = SubjectIndex::default();
    for (identity, subject) in identities {
        if let Some(id) = identity.strip_prefix("user:") {
            index.users.entry(id.to_owned()).or_insert(*subject);
        } else if let Some(id) = identity.strip_prefix("anon:") {
            index.anons.entry(id.to_owned()).or_insert(*subject);
        }
    }
    index
}

/// The subject an event belongs to, from its `userId`, `anonymousId` and
/// `previousId` (an alias names either kind).
///
/// An event that names a `userId` belongs to that user alone: it is never
/// matched through its `anonymousId`, which a shared device gives to
/// several people (the profile engine's identity rules keep such a call
/// with the `userId`'s profile too). Its `previousId` still matches: an
/// alias from the subject's id is the subject's own data.
pub(crate) fn identity_parts(
    index: &SubjectIndex,
    user: Option<String>,
    anon: Option<String>,
    previous: Option<String>,
) -> Option<usize> {
    // An empty `userId` is absent, as ingest and the profile engine take it.
    let own = match user.filter(|u| !u.is_empty()) {
        Some(u) => index.users.get(&u).copied(),
        None => anon.and_then(|a| index.anons.get(&a).copied()),
    };
    own.or_else(|| {
        previous.and_then(|p| index.users.get(&p).or_else(|| index.anons.get(&p)).copied())
    })
}

/// What a finished subject is stored as: the SHA-256 of the user id, so the
/// record proves which id was handled without keeping it.
pub(crate) fn pseudonym(user_id: &str) -> String {
    format!("sha256:{}", keys::hash_secret(user_id))
}

/// A delete notification's message id and stored body: exactly `type`,
/// `userId` and `timestamp` (the delivery payload builder keeps only those).
pub(crate) fn delete_notification(subject: &SubjectPurge, now: DateTime<Utc>) -> (String, String) {
    let body = serde_json::json!({
        "type": "delete",
        "userId": subject.subject_id,
        "timestamp": now.to_rfc3339_opts(SecondsFormat::Millis, true),
    });
    (keys::new_id("del"), body.to_string())
}

/// One delete notification of a subject: a destination, told once, and the
/// affected sources it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub destination_id: String,
    /// Every affected source the destination is connected to, sorted.
    pub source_ids: Vec<String>,
    /// The source it is filed under: the first stored source, or the
    /// profile engine's when it reached the destination only through a
    /// computed trait or an audience.
    pub source_id: String,
}

/// The notifications of one subject from the enabled destinations of each
/// affected source: one per destination, however many of the subject's
/// sources reach it (a receiver must act once: the bodies would be
/// identical), in destination order.
pub(crate) fn notices(by_source: &[(&str, Vec<String>)]) -> Vec<Notice> {
    let mut per: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (source, destinations) in by_source {
        for d in destinations {
            per.entry(d.as_str()).or_default().insert(source);
        }
    }
    per.into_iter()
        .map(|(destination, sources)| {
            let source_ids: Vec<String> = sources.iter().map(|s| (*s).to_owned()).collect();
            let source_id = sources
                .iter()
                .find(|s| **s != PERSONAS_SOURCE)
                .or_else(|| sources.first())
                .map_or_else(String::new, |s| (*s).to_owned());
            Notice {
                destination_id: destination.to_owned(),
                source_ids,
                source_id,
            }
        })
        .collect()
}

/// A stored notification's `source_ids`: the JSON list, or its
/// `source_id` alone in a row written before the list was kept.
pub(crate) fn source_ids(stored: Option<&str>, source_id: &str) -> Vec<String> {
    stored
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_else(|| vec![source_id.to_owned()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_reached_through_several_sources_is_told_once() {
        let dests = |ids: &[&str]| ids.iter().map(|d| d.to_string()).collect::<Vec<_>>();
        let by_source = [
            ("personas", dests(&["dst_1", "dst_2"])),
            ("src_a", dests(&["dst_1", "dst_3"])),
            ("src_b", dests(&["dst_1"])),
        ];
        let got: Vec<(String, Vec<String>, String)> = notices(&by_source)
            .into_iter()
            .map(|n| (n.destination_id, n.source_ids, n.source_id))
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (
                    "dst_1".into(),
                    strings(&["personas", "src_a", "src_b"]),
                    "src_a".into()
                ),
                ("dst_2".into(), strings(&["personas"]), "personas".into()),
                ("dst_3".into(), strings(&["src_a"]), "src_a".into()),
            ]
        );
    }

    #[test]
    fn events_match_their_subject_by_any_linked_identity() {
        let index = subject_index(&[
            ("user:u1".into(), 0),
            ("anon:a1".into(), 0),
            ("user:u2".into(), 1),
        ]);
        assert_eq!(
            identity_parts(&index, Some("u1".into()), None, None),
            Some(0)
        );
        assert_eq!(
            identity_parts(&index, None, Some("a1".into()), None),
            Some(0)
        );
        assert_eq!(
            identity_parts(&index, None, None, Some("u2".into())),
            Some(1)
        );
        assert_eq!(
            identity_parts(&index, Some("zz".into()), Some("u1".into()), None),
            None
        );
    }

    #[test]
    fn another_users_call_on_a_shared_device_is_not_the_subjects() {
        let index = subject_index(&[("user:alice".into(), 0), ("anon:dev1".into(), 0)]);
        assert_eq!(
            identity_parts(&index, Some("bob".into()), Some("dev1".into()), None),
            None
        );
        assert_eq!(
            identity_parts(&index, None, Some("dev1".into()), None),
            Some(0)
        );
        assert_eq!(
            identity_parts(&index, Some(String::new()), Some("dev1".into()), None),
            Some(0),
            "an empty userId is absent"
        );
        assert_eq!(
            identity_parts(&index, Some("bob".into()), None, Some("alice".into())),
            Some(0)
        );
    }

    #[test]
    fn pseudonym_does_not_contain_the_id() {
        let p = pseudonym("user-secret-42");
        assert!(p.starts_with("sha256:") && !p.contains("user-secret-42"));
    }
}
