//! [`RegulationStore`](sluice_store::RegulationStore): suppression changes, the
//! job lease, finding a subject's data and the one-transaction purge.

use std::time::Duration;

use super::support::{Shared, append, at, new_destination, source};
use sluice_store::{
    DeliveryFilter, DeliveryState, NewEvent, NewRegulation, RegulationCommit, SubjectPurge,
    SuppressedCount,
};

pub(super) const TTL: Duration = Duration::from_secs(10);

pub(super) fn regulation(
    id: &str,
    kind: &str,
    ids: &[&str],
    suppress: Option<bool>,
    purge: bool,
) -> NewRegulation {
    NewRegulation {
        id: id.into(),
        regulation_type: kind.into(),
        subject_ids: ids.iter().map(|s| s.to_string()).collect(),
        source_id: None,
        suppress,
        purge,
        notify: purge,
        now: at(0),
    }
}

pub(super) fn call(message_id: &str, user: &str, destinations: &[&str]) -> NewEvent {
    NewEvent {
        message_id: message_id.into(),
        event_type: "track".into(),
        body: format!(r#"{{"messageId":"{message_id}","type":"track","userId":"{user}"}}"#),
        destination_ids: destinations.iter().map(|d| d.to_string()).collect(),
        ..NewEvent::default()
    }
}

pub async fn suppression_changes_come_in_version_order_and_unsuppress_lifts(store: Shared) {
    let r = store
        .create_regulation(regulation(
            "reg_1",
            "SUPPRESS_ONLY",
            &["u1", "u2"],
            Some(true),
            false,
        ))
        .await
        .expect("create");
    assert_eq!(r.status, "FINISHED", "nothing to purge");
    let changes = store.suppression_changes(0, 100).await.expect("changes");
    assert_eq!(changes.len(), 2);
    assert!(changes[0].version < changes[1].version);
    assert!(changes.iter().all(|c| c.suppressed));
    assert_eq!(
        store.list_suppressions("", 10).await.expect("list"),
        ["u1", "u2"]
    );
    let last = changes[1].version;
    store
        .create_regulation(regulation(
            "reg_2",
            "UNSUPPRESS",
            &["u1"],
            Some(false),
            false,
        ))
        .await
        .expect("unsuppress");
    let later = store.suppression_changes(last, 100).await.expect("changes");
    assert_eq!(later.len(), 1);
    assert_eq!(
        (later[0].user_id.as_str(), later[0].suppressed),
        ("u1", false)
    );
    assert_eq!(store.list_suppressions("", 10).await.expect("list"), ["u2"]);
    let listed = store
        .list_regulations(10, None)
        .await
        .expect("list regulations");
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["reg_2", "reg_1"]
    );
    let ids =
        |page: Vec<sluice_store::Regulation>| page.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let after_newest = store.list_regulations(1, Some("reg_2")).await;
    assert_eq!(ids(after_newest.expect("page")), ["reg_1"]);
    let after_last = store.list_regulations(10, Some("reg_1")).await;
    assert!(after_last.expect("page").is_empty());
    let unknown = store.list_regulations(10, Some("reg_none")).await;
    assert!(unknown.expect("page").is_empty());
}

pub async fn suppressed_counts_add_up_per_source_and_day(store: Shared) {
    let n = |events| SuppressedCount {
        source_id: "src_a".into(),
        day: "2026-01-02".into(),
        events,
    };
    store.add_suppressed(vec![n(2)]).await.expect("add");
    store.add_suppressed(vec![n(3)]).await.expect("add");
    let got = store
        .suppressed_usage("src_a", "2026-01-01", "2026-01-31")
        .await
        .expect("read");
    assert_eq!(got, vec![n(5)]);
}

pub async fn the_regulation_lease_is_exclusive_until_it_lapses(store: Shared) {
    assert!(
        store
            .take_regulation_lease("a", at(0), TTL)
            .await
            .expect("take")
    );
    assert!(
        !store
            .take_regulation_lease("b", at(5), TTL)
            .await
            .expect("held")
    );
    assert!(
        store
            .take_regulation_lease("b", at(11), TTL)
            .await
            .expect("lapsed")
    );
    let refused = store
        .commit_regulation(RegulationCommit {
            owner: "a".into(),
            regulation_id: "reg_x".into(),
            now: at(12),
            subjects: Vec::new(),
        })
        .await
        .expect("commit");
    assert!(!refused, "a lost the lease");
    store.release_regulation_lease("b").await.expect("release");
    assert!(
        store
            .take_regulation_lease("c", at(12), TTL)
            .await
            .expect("released")
    );
}

pub async fn a_regulation_step_purges_and_notifies_once_then_finishes(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    store
        .create_destination(new_destination("dst_a", &["src_a"]))
        .await
        .expect("destination");
    append(
        &store,
        "src_a",
        at(1),
        vec![call("m1", "u1", &["dst_a"]), call("m2", "u2", &["dst_a"])],
    )
    .await;
    append(&store, "src_b", at(2), vec![call("m3", "u1", &[])]).await;
    let created = store
        .create_regulation(regulation("reg_1", "DELETE_ONLY", &["u1"], None, true))
        .await
        .expect("create");
    assert_eq!(created.status, "INITIALIZED");
    assert!(
        store
            .take_regulation_lease("job", at(3), TTL)
            .await
            .expect("lease")
    );
    let (next, pending) = store.next_regulation(10).await.expect("next").expect("one");
    assert_eq!(
        (next.id.as_str(), pending.clone()),
        ("reg_1", vec!["u1".to_string()])
    );
    let found = store.find_subject_data(pending, None).await.expect("find");
    let mut sources: Vec<&str> = found[0].events.iter().map(|(_, s)| s.as_str()).collect();
    sources.sort();
    assert_eq!(sources, ["src_a", "src_b"]);
    let purge = SubjectPurge {
        subject_id: "u1".into(),
        event_seqs: found[0].events.iter().map(|(seq, _)| *seq).collect(),
        profile_ids: found[0].profile_ids.clone(),
        affected_sources: vec!["src_a".into(), "src_b".into()],
    };
    let step = |subjects: Vec<SubjectPurge>| RegulationCommit {
        owner: "job".into(),
        regulation_id: "reg_1".into(),
        now: at(4),
        subjects,
    };
    assert!(
        store
            .commit_regulation(step(vec![purge.clone()]))
            .await
            .expect("commit")
    );
    // The same step again (a job resumed after a crash) changes nothing.
    assert!(
        store
            .commit_regulation(step(vec![purge]))
            .await
            .expect("again")
    );
    let detail = store
        .get_regulation("reg_1")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(detail.regulation.status, "RUNNING");
    assert!(detail.subjects[0].done);
    assert!(detail.subjects[0].subject_id.starts_with("sha256:"));
    assert_eq!(detail.subjects[0].events_purged, 2);
    assert_eq!(detail.notifications.len(), 1, "src_b has no destination");
    assert_eq!(detail.notifications[0].destination_id, "dst_a");
    assert_eq!(detail.notifications[0].state, "pending");
    for source in ["src_a", "src_b"] {
        let left = store
            .recent_events(source, None, 100)
            .await
            .expect("events");
        assert!(
            left.iter().all(|e| !e.body.contains("\"u1\"")),
            "{source}: {left:?}"
        );
    }
    let pending = store
        .list_deliveries(&DeliveryFilter {
            state: Some(DeliveryState::Pending),
            limit: 100,
            ..DeliveryFilter::default()
        })
        .await
        .expect("deliveries");
    assert_eq!(
        pending.len(),
        2,
        "u2's event and the notification: {pending:?}"
    );
    assert!(
        store
            .commit_regulation(step(Vec::new()))
            .await
            .expect("finish")
    );
    let detail = store
        .get_regulation("reg_1")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(detail.regulation.status, "FINISHED");
    assert!(store.next_regulation(10).await.expect("next").is_none());
}
