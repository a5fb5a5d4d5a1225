//! The regulation job against the profile engine (no profile commit across
//! a purge) and a regulation's failure.

use super::profiles::read_at_least;
use super::regulations::{TTL, call, regulation};
use super::support::{Shared, append, at, new_destination, source};
use crate::whole_engine::WholeEngine;
use sluice_store::{
    NewComputation, ProfileCommit, ProfileEventRow, ProfileRecord, RegulationCommit, SubjectPurge,
};

/// The race: the engine reads a user's event, the job purges the user, the
/// engine commits what it read. The commit must be refused, or it would
/// re-create the purged profile and identity.
pub async fn a_profile_step_read_before_a_purge_is_refused_at_its_commit(store: Shared) {
    source(&store, "src_a").await;
    append(&store, "src_a", at(1), vec![call("m1", "u1", &[])]).await;
    let cursor = store
        .take_profile_lease("engine", at(1), TTL)
        .await
        .expect("lease")
        .expect("free");
    let read = read_at_least(&store, cursor, 100, 1).await;
    assert_eq!(read.len(), 1, "the engine read u1's event");
    let stale = ProfileCommit {
        owner: "engine".into(),
        now: at(2),
        cursor: read.last().map(|e| e.cursor),
        profiles: vec![ProfileRecord {
            id: "prf_u1".into(),
            doc: r#"{"userIds":["u1"]}"#.into(),
            ..ProfileRecord::default()
        }],
        identities: vec![("user:u1".into(), "prf_u1".into())],
        ..ProfileCommit::default()
    };

    store
        .create_regulation(regulation("reg_1", "DELETE_INTERNAL", &["u1"], None, true))
        .await
        .expect("create");
    assert!(
        store
            .take_regulation_lease("job", at(3), TTL)
            .await
            .expect("job lease")
    );
    let held = store
        .seize_profile_lease("job", at(3), TTL)
        .await
        .expect("seize");
    assert!(!held, "the engine held it");
    let renewed = store
        .seize_profile_lease("job", at(4), TTL)
        .await
        .expect("renew");
    assert!(renewed, "held since the last seize");
    assert!(
        store
            .take_profile_lease("engine", at(4), TTL)
            .await
            .expect("engine retries")
            .is_none(),
        "the engine waits while the job holds its lease"
    );
    let (_, pending) = store.next_regulation(10).await.expect("next").expect("one");
    let found = store.find_subject_data(pending, None).await.expect("find");
    let step = |subjects| RegulationCommit {
        owner: "job".into(),
        regulation_id: "reg_1".into(),
        now: at(5),
        subjects,
    };
    let purge = SubjectPurge {
        subject_id: "u1".into(),
        event_seqs: found[0].events.iter().map(|(seq, _)| *seq).collect(),
        profile_ids: found[0].profile_ids.clone(),
        affected_sources: vec!["src_a".into()],
    };
    assert!(
        store
            .commit_regulation(step(vec![purge]))
            .await
            .expect("purge")
    );
    assert!(
        store
            .commit_regulation(step(Vec::new()))
            .await
            .expect("finish")
    );
    store.release_profile_lease("job").await.expect("release");

    let committed = store.commit_profiles(stale).await.expect("stale commit");
    assert!(!committed, "a step read before the purge is refused");
    let identities = store
        .resolve_identities(vec!["user:u1".into()])
        .await
        .expect("resolve");
    assert!(identities.is_empty(), "u1 was re-created: {identities:?}");
    assert!(
        store
            .load_profiles(vec!["prf_u1".into()], true)
            .await
            .expect("load")
            .is_empty()
    );
    // The engine takes its lease back at the same cursor and finds nothing
    // of u1 to redo the step with.
    let again = store
        .take_profile_lease("engine", at(6), TTL)
        .await
        .expect("lease")
        .expect("released");
    assert_eq!(again, cursor);
    let redo = store
        .profile_events_after(again, 100)
        .await
        .expect("events");
    assert!(
        redo.iter().all(|e| !e.event.body.contains("\"u1\"")),
        "{redo:?}"
    );
}

pub async fn a_failed_regulation_keeps_its_error_and_is_over(store: Shared) {
    store
        .create_regulation(regulation("reg_1", "DELETE_ONLY", &["u1"], None, true))
        .await
        .expect("create");
    let error = "source_id: source 'src_gone' was deleted";
    assert!(
        !store
            .fail_regulation("job", "reg_1", error, at(1))
            .await
            .expect("fail"),
        "only the lease holder fails a regulation"
    );
    assert!(
        store
            .take_regulation_lease("job", at(1), TTL)
            .await
            .expect("lease")
    );
    assert!(
        store
            .fail_regulation("job", "reg_1", error, at(2))
            .await
            .expect("fail")
    );
    let detail = store
        .get_regulation("reg_1")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(detail.regulation.status, "FAILED");
    assert_eq!(detail.regulation.error.as_deref(), Some(error));
    assert_eq!(detail.regulation.finished_at, Some(at(2)));
    assert!(!detail.subjects[0].done, "nothing is marked done");
    assert!(store.next_regulation(10).await.expect("next").is_none());
    assert!(
        !store
            .fail_regulation("job", "reg_1", "again", at(3))
            .await
            .expect("fail again"),
        "FAILED is final"
    );
    let listed = store.list_regulations(10, None).await.expect("list");
    assert_eq!(listed[0].error.as_deref(), Some(error));
}

/// Retention removed the subject's stored events, but the profile engine
/// saw them on two sources (its document and its behavioural rows), and a
/// computed trait sends to a destination no source names: all are found,
/// and the profile engine's source notifies that destination.
pub async fn a_subject_without_stored_events_is_found_through_its_profile(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    for (id, sources) in [("dst_a", &["src_a"][..]), ("dst_p", &[][..])] {
        store
            .create_destination(new_destination(id, sources))
            .await
            .expect("destination");
    }
    store
        .create_computation(NewComputation {
            id: "ct_1".into(),
            class: "trait".into(),
            key: "orders".into(),
            name: "Orders".into(),
            definition: r#"{"kind":"counter","event":"Bought"}"#.into(),
            destination_ids: vec!["dst_p".into()],
        })
        .await
        .expect("computation");
    profile_of_u1(
        &store,
        r#"{"userIds":["u1"],"sources":["src_b"]}"#,
        &["src_a"],
    )
    .await;

    let found = store
        .find_subject_data(vec!["u1".into(), "nobody".into()], None)
        .await
        .expect("find");
    assert!(found[0].events.is_empty(), "retention took them");
    assert_eq!(found[0].profile_ids, ["prf_u1"]);
    assert_eq!(found[0].profile_sources, ["src_a", "src_b"]);
    assert!(found[1].profile_sources.is_empty());

    store
        .create_regulation(regulation("reg_1", "DELETE_ONLY", &["u1"], None, true))
        .await
        .expect("create");
    assert!(
        store
            .take_regulation_lease("job", at(2), TTL)
            .await
            .expect("job lease")
    );
    let purge = SubjectPurge {
        subject_id: "u1".into(),
        event_seqs: Vec::new(),
        profile_ids: found[0].profile_ids.clone(),
        affected_sources: vec!["personas".into(), "src_a".into(), "src_b".into()],
    };
    let committed = store
        .commit_regulation(RegulationCommit {
            owner: "job".into(),
            regulation_id: "reg_1".into(),
            now: at(3),
            subjects: vec![purge],
        })
        .await
        .expect("purge");
    assert!(committed);
    let detail = store
        .get_regulation("reg_1")
        .await
        .expect("get")
        .expect("found");
    let mut sent: Vec<(&str, &str)> = detail
        .notifications
        .iter()
        .map(|n| (n.source_id.as_str(), n.destination_id.as_str()))
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [("personas", "dst_p"), ("src_a", "dst_a")],
        "src_b has no destination"
    );
}

/// Commits u1's profile `prf_u1` with `doc` and behavioural rows from
/// `sources` (one each), as the profile engine would.
pub(super) async fn profile_of_u1(store: &Shared, doc: &str, sources: &[&str]) {
    store
        .take_profile_lease("engine", at(1), TTL)
        .await
        .expect("lease")
        .expect("free");
    let events = sources
        .iter()
        .zip(1..)
        .map(|(source, seq)| {
            let row = ProfileEventRow {
                seq,
                ts: seq,
                source_id: (*source).into(),
                kind: "track".into(),
                name: Some("Bought".into()),
                properties: "{}".into(),
                message_hash: None,
            };
            ("prf_u1".to_string(), row)
        })
        .collect();
    let committed = store
        .commit_profiles(ProfileCommit {
            owner: "engine".into(),
            now: at(1),
            profiles: vec![ProfileRecord {
                id: "prf_u1".into(),
                doc: doc.into(),
                ..ProfileRecord::default()
            }],
            identities: vec![("user:u1".into(), "prf_u1".into())],
            events,
            ..ProfileCommit::default()
        })
        .await
        .expect("commit");
    assert!(committed);
    store
        .release_profile_lease("engine")
        .await
        .expect("release");
}
