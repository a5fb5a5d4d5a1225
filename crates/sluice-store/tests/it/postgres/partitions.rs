//! The profile engine's partitions on PostgreSQL: events read by the
//! partition of their person, and steps of two partitions that touch the
//! same profile or identity (one is refused and redone).

use std::time::Duration;

use sluice_store::{EventStore, ProfileCommit, ProfileRecord, ProfileStore};

use super::{TestSchema, at, request};

const TTL: Duration = Duration::from_secs(10);

/// A commit naming half of the partitions: as a node sharing the engine
/// with another would (a node holding them all has no one to race).
fn commit(owner: &str) -> ProfileCommit {
    ProfileCommit {
        owner: owner.into(),
        now: at(0),
        partitions: (0..8).collect(),
        ..ProfileCommit::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_on_a_profile_another_partition_committed_since_is_refused() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    assert_eq!(
        store
            .take_profile_partitions("a", at(0), TTL)
            .await
            .expect("take")
            .len(),
        16
    );
    let mut first = commit("a");
    first.profiles = vec![ProfileRecord {
        id: "p1".into(),
        doc: "{}".into(),
        ..ProfileRecord::default()
    }];
    first.identities = vec![("user:u1".into(), "p1".into())];
    first.identities_before = vec![("user:u1".into(), None)];
    assert!(store.commit_profiles(first.clone()).await.expect("first"));
    assert!(
        !store.commit_profiles(first).await.expect("again"),
        "user:u1 exists now: a step that read it absent is refused"
    );
    let read = store
        .load_profiles(vec!["p1".into()], false)
        .await
        .expect("load");
    let version = read[0].version;
    let mut touch = commit("a");
    touch.expected = vec![("p1".into(), version)];
    assert!(store.commit_profiles(touch.clone()).await.expect("touch"));
    assert!(
        !store.commit_profiles(touch).await.expect("stale"),
        "the version moved: a step that read the older one is refused"
    );
    let mut moved = commit("a");
    moved.identities = vec![("user:u1".into(), "p2".into())];
    moved.identities_before = vec![("user:u1".into(), Some("p0".into()))];
    assert!(
        !store.commit_profiles(moved).await.expect("moved"),
        "user:u1 points elsewhere than the step read"
    );
    let found = store
        .resolve_identities(vec!["user:u1".into()])
        .await
        .expect("resolve");
    assert_eq!(found, vec![("user:u1".to_string(), "p1".to_string())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_partition_reads_only_the_events_of_its_people() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let a = node_a
        .take_profile_partitions("a", at(0), TTL)
        .await
        .expect("a");
    assert_eq!(a.len(), 16);
    node_b
        .take_profile_partitions("b", at(1), TTL)
        .await
        .expect("b registers");
    let a = node_a
        .take_profile_partitions("a", at(1), TTL)
        .await
        .expect("a keeps its share");
    let b = node_b
        .take_profile_partitions("b", at(2), TTL)
        .await
        .expect("b takes the rest");
    assert_eq!((a.len(), b.len()), (8, 8));
    let mut events = request("src_p", &[], at(0));
    events.events = (0..64)
        .map(|i| sluice_store::NewEvent {
            message_id: format!("m{i}"),
            event_type: "track".into(),
            body: "{}".into(),
            person: sluice_store::person_slot(Some(&format!("user-{i}")), None),
            ..sluice_store::NewEvent::default()
        })
        .collect();
    node_a.append(events).await.expect("append");
    let mut seen = Vec::new();
    for (node, held) in [(&node_a, a.clone()), (&node_b, b)] {
        let mut got = Vec::new();
        for _ in 0..250 {
            got = node
                .profile_events_in(held.clone(), 100)
                .await
                .expect("read");
            if !got.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!got.is_empty(), "each half of 64 people has some");
        seen.extend(got.into_iter().map(|e| e.event.message_id));
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 64, "every event read once, by one partition");
    // Partitions at different cursors (one taken over): each reads only
    // what lies after its own.
    let mut all = node_a
        .profile_events_in(a.clone(), 100)
        .await
        .expect("read a");
    all.retain(|e| !e.elsewhere);
    let last = all.last().expect("a has events").cursor;
    let mut mixed = a.clone();
    mixed[0].cursor = last;
    let mut got = node_a.profile_events_in(mixed, 100).await.expect("mixed");
    got.retain(|e| !e.elsewhere);
    let first_slot = |e: &sluice_store::CursorEvent| {
        let user = format!("user-{}", e.event.message_id.trim_start_matches('m'));
        sluice_store::person_slot(Some(&user), None) % 16
    };
    assert!(got.iter().all(|e| first_slot(e) != a[0].id));
    assert_eq!(
        got.len(),
        all.iter().filter(|e| first_slot(e) != a[0].id).count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_takes_its_batch_of_calls_past_the_messages_sluice_wrote() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    let held = store
        .take_profile_partitions("a", at(0), TTL)
        .await
        .expect("take");
    // Each call is followed in the log by two identify messages of its own.
    for i in 0..10 {
        for (source, id) in [
            ("src_p", format!("call{i}")),
            (sluice_store::PERSONAS_SOURCE, format!("trait{i}")),
            (sluice_store::PERSONAS_SOURCE, format!("audience{i}")),
        ] {
            let mut one = request(source, &[], at(0));
            one.events = vec![sluice_store::NewEvent {
                message_id: id,
                event_type: "track".into(),
                body: "{\"type\":\"track\"}".into(),
                person: sluice_store::person_slot(Some(&format!("user-{i}")), None),
                ..sluice_store::NewEvent::default()
            }];
            store.append(one).await.expect("append");
        }
    }
    let mut got = Vec::new();
    for _ in 0..250 {
        got = store
            .profile_events_in(held.clone(), 4)
            .await
            .expect("read");
        if got.iter().filter(|e| !e.elsewhere).count() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let calls: Vec<&str> = got
        .iter()
        .filter(|e| !e.elsewhere)
        .map(|e| e.event.message_id.as_str())
        .collect();
    assert_eq!(calls, ["call0", "call1", "call2", "call3"]);
    let passed: Vec<_> = got.iter().filter(|e| e.elsewhere).collect();
    assert!(passed.len() >= 6, "the messages between the calls come too");
    assert!(
        passed
            .iter()
            .all(|e| e.event.source_id == sluice_store::PERSONAS_SOURCE && e.event.body.is_empty()),
        "passed over, without their bodies"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_positions_move_forward_with_a_step_and_only_under_the_lease() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    assert!(
        store
            .profile_log_positions("events")
            .await
            .expect("none yet")
            .is_empty()
    );
    store
        .take_profile_partitions("a", at(0), TTL)
        .await
        .expect("take");
    let step = |owner: &str, next: Vec<(i32, i64)>| ProfileCommit {
        log: Some(sluice_store::LogAdvance {
            topic: "events".into(),
            next,
        }),
        ..commit(owner)
    };
    assert!(
        store
            .commit_profiles(step("a", vec![(0, 10), (3, 4)]))
            .await
            .expect("first")
    );
    assert!(
        store
            .commit_profiles(step("a", vec![(0, 7), (1, 2)]))
            .await
            .expect("older")
    );
    assert!(
        !store
            .commit_profiles(step("b", vec![(0, 99)]))
            .await
            .expect("not the holder"),
        "a node without the lease moves nothing"
    );
    assert_eq!(
        store.profile_log_positions("events").await.expect("read"),
        vec![(0, 10), (1, 2), (3, 4)],
        "positions only move forward"
    );
    assert!(
        store
            .profile_log_positions("other")
            .await
            .expect("other topic")
            .is_empty()
    );
}
