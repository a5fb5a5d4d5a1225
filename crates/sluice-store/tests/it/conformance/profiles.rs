//! [`ProfileStore`](sluice_store::ProfileStore): definitions, the engine lease, the
//! event cursor and the one-transaction step commit.

use crate::whole_engine::WholeEngine;
use std::time::Duration;

use super::support::{Shared, append, at, event, new_destination, source};
use sluice_store::{
    ComputationPatch, ComputedValue, CursorEvent, EmittedMessage, EventCursor, JobProgress,
    NewComputation, PERSONAS_SOURCE, ProfileCommit, ProfileRecord, StoreError, ValueChange,
};

const TTL: Duration = Duration::from_secs(10);

/// Events after `cursor`, waiting briefly until at least `n` are readable:
/// PostgreSQL only returns events below the oldest running transaction of
/// the whole server, which concurrent tests may hold back for a moment.
pub(super) async fn read_at_least(
    store: &Shared,
    cursor: EventCursor,
    limit: u32,
    n: usize,
) -> Vec<CursorEvent> {
    for _ in 0..250 {
        let got = store
            .profile_events_after(cursor, limit)
            .await
            .expect("read");
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} events readable after {cursor:?}");
}

fn computation(id: &str, key: &str) -> NewComputation {
    NewComputation {
        id: id.into(),
        class: "trait".into(),
        key: key.into(),
        name: key.into(),
        definition: r#"{"kind":"counter","event":"E"}"#.into(),
        destination_ids: vec!["dst_b".into(), "dst_a".into()],
    }
}

pub async fn computation_keys_are_never_reused_even_after_delete(store: Shared) {
    let created = store
        .create_computation(computation("ct_1", "orders"))
        .await
        .expect("create");
    assert_eq!(created.destination_ids, vec!["dst_a", "dst_b"], "sorted");
    assert_eq!(created.revision, 1);
    assert!(store.delete_computation("ct_1").await.expect("delete"));
    assert!(
        !store
            .delete_computation("ct_1")
            .await
            .expect("delete again")
    );
    assert!(store.list_computations().await.expect("list").is_empty());
    let kept = store.get_computation("ct_1").await.expect("get");
    assert!(kept.is_some_and(|c| c.deleted_at.is_some()));
    let again = store
        .create_computation(computation("ct_2", "orders"))
        .await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
}

pub async fn definition_changes_and_new_connections_queue_jobs(store: Shared) {
    store
        .create_computation(computation("ct_1", "orders"))
        .await
        .expect("create");
    let first = store
        .next_profile_job()
        .await
        .expect("job")
        .expect("queued");
    assert_eq!(
        (first.kind.as_str(), first.after_profile.as_str()),
        ("recompute", "")
    );
    let patch = ComputationPatch {
        definition: Some(r#"{"kind":"counter","event":"F"}"#.into()),
        destination_ids: Some(vec!["dst_a".into(), "dst_c".into()]),
        ..ComputationPatch::default()
    };
    let updated = store
        .update_computation("ct_1", patch)
        .await
        .expect("update")
        .expect("exists");
    assert_eq!(updated.revision, 2);
    assert_eq!(updated.destination_ids, vec!["dst_a", "dst_c"]);
    let owner = "node-a";
    store
        .take_profile_lease(owner, at(0), TTL)
        .await
        .expect("lease");
    let mut kinds = Vec::new();
    while let Some(job) = store.next_profile_job().await.expect("job") {
        kinds.push((job.kind.clone(), job.destination_id.clone()));
        let done = ProfileCommit {
            owner: owner.into(),
            now: at(0),
            job: Some((job.id, JobProgress::Done)),
            ..ProfileCommit::default()
        };
        assert!(store.commit_profiles(done).await.expect("commit"));
    }
    assert_eq!(
        kinds,
        vec![
            ("recompute".to_string(), None),
            ("recompute".to_string(), None),
            ("backfill".to_string(), Some("dst_c".to_string())),
        ]
    );
}

pub async fn the_engine_partitions_are_shared_and_move_when_a_lease_lapses(store: Shared) {
    let all = usize::from(store.profile_partitions());
    let held = |p: Vec<sluice_store::Partition>| p.len();
    let a = store
        .take_profile_partitions("a", at(0), TTL)
        .await
        .expect("a");
    assert_eq!(held(a.clone()), all, "a lone node takes every partition");
    assert!(a.iter().all(|p| p.cursor == EventCursor::default()));
    let b = store
        .take_profile_partitions("b", at(5), TTL)
        .await
        .expect("b");
    assert!(b.is_empty(), "nothing is free while a holds it");
    // A second engine node seen: a keeps its share and gives the rest up
    // (with one partition, its share is that one).
    let a = store
        .take_profile_partitions("a", at(5), TTL)
        .await
        .expect("a");
    assert_eq!(held(a), all.div_ceil(2));
    let b = store
        .take_profile_partitions("b", at(6), TTL)
        .await
        .expect("b");
    assert_eq!(held(b), all - all.div_ceil(2));
    assert_eq!(
        store.take_profile_lease("b", at(14), TTL).await.expect("b"),
        None,
        "a's lease, renewed at 5, runs until 15"
    );
    assert!(
        store
            .take_profile_lease("b", at(16), TTL)
            .await
            .expect("b")
            .is_some(),
        "a's partitions lapsed and a no longer counts: b takes them all"
    );
    let stale = ProfileCommit {
        owner: "a".into(),
        now: at(16),
        cursor: Some(EventCursor { xact: 0, seq: 99 }),
        ..ProfileCommit::default()
    };
    assert!(
        !store.commit_profiles(stale).await.expect("refused"),
        "a lost the lease"
    );
    store.release_profile_lease("b").await.expect("release");
    let c = store.take_profile_lease("c", at(17), TTL).await.expect("c");
    assert_eq!(
        c,
        Some(EventCursor::default()),
        "a's refused commit wrote nothing"
    );
}

pub async fn events_after_the_cursor_come_in_commit_order(store: Shared) {
    append(
        &store,
        "src_a",
        at(0),
        vec![event("m1", &[]), event("m2", &[])],
    )
    .await;
    append(&store, "src_b", at(1), vec![event("m3", &[])]).await;
    let cursor = store
        .take_profile_lease("a", at(0), TTL)
        .await
        .expect("lease")
        .expect("held");
    let first = read_at_least(&store, cursor, 2, 2).await;
    let ids: Vec<_> = first.iter().map(|e| e.event.message_id.as_str()).collect();
    assert_eq!(ids, vec!["m1", "m2"]);
    let rest = read_at_least(&store, first[1].cursor, 10, 1).await;
    let ids: Vec<_> = rest.iter().map(|e| e.event.message_id.as_str()).collect();
    assert_eq!(ids, vec!["m3"]);
    assert!(first[1].cursor < rest[0].cursor);
}

pub async fn a_step_commits_profiles_values_messages_and_cursor_together(store: Shared) {
    source(&store, "src_a").await;
    store
        .create_destination(new_destination("dst_a", &["src_a"]))
        .await
        .expect("destination");
    append(&store, "src_a", at(0), vec![event("m1", &[])]).await;
    store
        .create_computation(computation("ct_1", "orders"))
        .await
        .expect("create");
    let cursor = store
        .take_profile_lease("a", at(0), TTL)
        .await
        .expect("lease")
        .expect("held");
    let input = read_at_least(&store, cursor, 10, 1).await;
    let step = ProfileCommit {
        owner: "a".into(),
        now: at(1),
        cursor: Some(input[0].cursor),
        profiles: vec![ProfileRecord {
            id: "prf_1".into(),
            doc: "{}".into(),
            next_change_at: Some(at(60)),
            ..ProfileRecord::default()
        }],
        identities: vec![("user:u1".into(), "prf_1".into())],
        values: vec![ValueChange {
            computation_id: "ct_1".into(),
            profile_id: "prf_1".into(),
            value: Some("1".into()),
        }],
        messages: vec![EmittedMessage {
            computation_id: "ct_1".into(),
            message_id: "personas-1".into(),
            body: r#"{"type":"identify","userId":"u1","traits":{"orders":1}}"#.into(),
            destination_ids: vec!["dst_a".into()],
            deliver_at: None,
        }],
        computed: vec!["ct_1".into()],
        ..ProfileCommit::default()
    };
    assert!(store.commit_profiles(step).await.expect("commit"));

    let resolved = store
        .resolve_identities(vec!["user:u1".into(), "anon:x".into()])
        .await
        .expect("resolve");
    assert_eq!(resolved, vec![("user:u1".to_string(), "prf_1".to_string())]);
    assert_eq!(
        store.due_profiles(at(59), 10).await.expect("due"),
        Vec::<String>::new()
    );
    assert_eq!(
        store.due_profiles(at(60), 10).await.expect("due"),
        vec!["prf_1"]
    );
    assert_eq!(
        store.profile_ids_after("", 10).await.expect("ids"),
        vec!["prf_1"]
    );
    let values = store.values_of(vec!["prf_1".into()]).await.expect("values");
    let expected = ComputedValue {
        computation_id: "ct_1".into(),
        profile_id: "prf_1".into(),
        value: "1".into(),
    };
    assert_eq!(values, vec![expected.clone()]);
    assert_eq!(
        store.list_values("ct_1", "", 10).await.expect("list"),
        vec![expected]
    );
    assert_eq!(store.count_values("ct_1").await.expect("count"), 1);
    let c = store
        .get_computation("ct_1")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!((c.messages_sent, c.last_computed_at), (1, Some(at(1))));
    let sends = store.sends_by_destination("ct_1").await.expect("sends");
    assert_eq!(sends, vec![("dst_a".to_string(), 1)]);

    // The message sits in the outbox like an ingested call.
    let due = store.claim_due(at(2), 10, TTL).await.expect("claim");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].destination_id, "dst_a");
    assert_eq!(due[0].message_id, "personas-1");
    let again = store
        .take_profile_lease("a", at(2), TTL)
        .await
        .expect("lease")
        .expect("held");
    assert_eq!(again, input[0].cursor, "the cursor moved with the step");
    let after = store.profile_events_after(again, 10).await.expect("read");
    assert!(after.iter().all(|e| e.event.source_id == PERSONAS_SOURCE));

    // Deleting the computation drops its values; a merged profile goes.
    store.delete_computation("ct_1").await.expect("delete");
    assert_eq!(store.count_values("ct_1").await.expect("count"), 0);
    let merge = ProfileCommit {
        owner: "a".into(),
        now: at(3),
        removed_profiles: vec!["prf_1".into()],
        ..ProfileCommit::default()
    };
    assert!(store.commit_profiles(merge).await.expect("commit"));
    assert!(
        store
            .load_profiles(vec!["prf_1".into()], false)
            .await
            .expect("load")
            .is_empty()
    );
}
