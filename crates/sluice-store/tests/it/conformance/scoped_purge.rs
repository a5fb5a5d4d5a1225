//! A source-scoped purge: the profile stays without the source, and is due
//! for re-evaluation in the purge's own transaction.

use super::regulation_job::profile_of_u1;
use super::regulations::{TTL, regulation};
use super::support::{Shared, at, source};
use crate::whole_engine::WholeEngine;
use sluice_store::{RegulationCommit, SubjectPurge};

/// Creates `reg_1`, scoped to `src_a`, for u1 and takes the job lease.
async fn scoped_regulation(store: &Shared) {
    let mut scoped = regulation("reg_1", "DELETE_ONLY", &["u1"], None, true);
    scoped.source_id = Some("src_a".into());
    store.create_regulation(scoped).await.expect("create");
    assert!(
        store
            .take_regulation_lease("job", at(2), TTL)
            .await
            .expect("job lease")
    );
}

/// The purge step of `reg_1` for u1's profile, as `owner`, at `at(3)`.
async fn purge_u1(store: &Shared, owner: &str) -> bool {
    store
        .commit_regulation(RegulationCommit {
            owner: owner.into(),
            regulation_id: "reg_1".into(),
            now: at(3),
            subjects: vec![SubjectPurge {
                subject_id: "u1".into(),
                event_seqs: Vec::new(),
                profile_ids: vec!["prf_u1".into()],
                affected_sources: vec!["src_a".into()],
            }],
        })
        .await
        .expect("purge")
}

/// A source-scoped purge keeps the profile but takes the source out of it:
/// its behavioural rows and its name in the document.
pub async fn a_scoped_purge_takes_its_source_out_of_the_profile(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    profile_of_u1(
        &store,
        r#"{"userIds":["u1"],"sources":["src_a","src_b"]}"#,
        &["src_a", "src_b"],
    )
    .await;
    scoped_regulation(&store).await;
    assert!(purge_u1(&store, "job").await);
    let kept = store
        .load_profiles(vec!["prf_u1".into()], true)
        .await
        .expect("load");
    assert_eq!(kept.len(), 1, "the profile stays");
    let sources: Vec<&str> = kept[0]
        .events
        .iter()
        .map(|e| e.source_id.as_str())
        .collect();
    assert_eq!(sources, ["src_b"]);
    let doc: serde_json::Value = serde_json::from_str(&kept[0].doc).expect("doc");
    assert_eq!(doc["sources"], serde_json::json!(["src_b"]), "{doc}");
    assert_eq!(doc["userIds"], serde_json::json!(["u1"]), "{doc}");
    let found = store
        .find_subject_data(vec!["u1".into()], None)
        .await
        .expect("find");
    assert_eq!(found[0].profile_sources, ["src_b"]);
}

/// The profile's computed values and memberships were built from the
/// purged calls: the purge marks it due at its own time, in its own
/// transaction, for the profile engine's sweep to re-evaluate. A refused
/// step marks nothing.
pub async fn a_scoped_purge_makes_the_profile_due_for_evaluation_at_once(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    profile_of_u1(
        &store,
        r#"{"userIds":["u1"],"sources":["src_a"]}"#,
        &["src_a", "src_b"],
    )
    .await;
    let due = |t| {
        let store = store.clone();
        async move { store.due_profiles(at(t), 10).await.expect("due") }
    };
    assert!(due(1000).await.is_empty(), "no window: never due");
    scoped_regulation(&store).await;
    assert!(!purge_u1(&store, "not-the-job").await, "refused");
    assert!(due(1000).await.is_empty(), "a refused step marks nothing");

    assert!(purge_u1(&store, "job").await);
    assert_eq!(due(3).await, ["prf_u1"], "due at the purge's time");
    assert!(due(2).await.is_empty());
    let kept = store
        .load_profiles(vec!["prf_u1".into()], false)
        .await
        .expect("load");
    assert_eq!(kept[0].next_change_at, Some(at(3)));
}
