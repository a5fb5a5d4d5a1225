//! Logic both backends share: matching events to subjects, pseudonyms and
//! the notification body.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::{SubjectPurge, keys};

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
pub(crate) fn delete_notification(
    regulation_id: &str,
    source_id: &str,
    subject: &SubjectPurge,
    now: DateTime<Utc>,
) -> (String, String) {
    let _ = (regulation_id, source_id);
    let body = serde_json::json!({
        "type": "delete",
        "userId": subject.subject_id,
        "timestamp": now.to_rfc3339_opts(SecondsFormat::Millis, true),
    });
    (keys::new_id("del"), body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
