//! Window changes prepared ahead of their time (`profile_scheduled`): the
//! message waits for `at`, the value is applied only once it is due, and a
//! step that touches the profile, an edit of the computation or a stale
//! definition withdraws it.

use crate::whole_engine::WholeEngine;
use std::time::Duration;

use super::support::{Shared, at, new_destination, source};
use sluice_store::{
    ComputationPatch, EmittedMessage, NewComputation, ProfileCommit, ProfileRecord, Schedule,
    ScheduledChange, ValueChange,
};

const TTL: Duration = Duration::from_secs(600);
const LEASE: Duration = Duration::from_secs(30);

fn audience() -> NewComputation {
    NewComputation {
        id: "aud_1".into(),
        class: "audience".into(),
        key: "buyers".into(),
        name: "Buyers".into(),
        definition: r#"{"condition":{"performed":{"event":"E"}}}"#.into(),
        destination_ids: vec!["dst_a".into()],
    }
}

fn profile(id: &str, next: Option<i64>) -> ProfileRecord {
    ProfileRecord {
        id: id.into(),
        doc: "{}".into(),
        next_change_at: next.map(at),
        ..ProfileRecord::default()
    }
}

/// A commit by the lease holder at `now` (seconds).
fn step(now: i64) -> ProfileCommit {
    ProfileCommit {
        owner: "a".into(),
        now: at(now),
        ..ProfileCommit::default()
    }
}

/// `profile` leaves the audience at `when` (seconds), prepared in `c`.
async fn schedule_leave(store: &Shared, c: &mut ProfileCommit, profile: &str, when: i64) {
    let updated = store
        .get_computation("aud_1")
        .await
        .expect("get")
        .expect("exists")
        .updated_at;
    let message_id = format!("leave-{profile}-{when}");
    c.messages.push(EmittedMessage {
        computation_id: "aud_1".into(),
        message_id: message_id.clone(),
        body: format!(r#"{{"type":"identify","userId":"{profile}","traits":{{"buyers":false}}}}"#),
        destination_ids: vec!["dst_a".into()],
        deliver_at: Some(at(when)),
    });
    c.scheduled.push(Schedule {
        change: ScheduledChange {
            computation_id: "aud_1".into(),
            profile_id: profile.into(),
            at: at(when),
            value: None,
        },
        message_id: Some(message_id),
        computation_updated_at: updated,
    });
}

async fn member_ids(store: &Shared, profile: &str) -> Vec<String> {
    let values = store.values_of(vec![profile.into()]).await.expect("values");
    values.into_iter().map(|v| v.computation_id).collect()
}

async fn scheduled(store: &Shared, profile: &str) -> Vec<i64> {
    let rows = store
        .scheduled_of(vec![profile.into()])
        .await
        .expect("scheduled");
    rows.iter()
        .map(|s| s.at.timestamp() - at(0).timestamp())
        .collect()
}

async fn sent(store: &Shared) -> u64 {
    let c = store.get_computation("aud_1").await.expect("get");
    c.expect("exists").messages_sent
}

/// Members `profiles` from a first step at 1 s.
async fn members(store: &Shared, profiles: &[&str]) {
    source(store, "src_a").await;
    store
        .create_destination(new_destination("dst_a", &["src_a"]))
        .await
        .expect("destination");
    store.create_computation(audience()).await.expect("create");
    store
        .take_profile_lease("a", at(0), TTL)
        .await
        .expect("lease")
        .expect("held");
    let mut first = step(1);
    for p in profiles {
        first.profiles.push(profile(p, Some(30)));
        first.values.push(ValueChange {
            computation_id: "aud_1".into(),
            profile_id: (*p).into(),
            value: Some("true".into()),
        });
    }
    assert!(store.commit_profiles(first).await.expect("commit"));
}

pub async fn a_scheduled_change_waits_for_its_time_then_applies(store: Shared) {
    members(&store, &["prf_1", "prf_2"]).await;
    assert_eq!(
        store.due_ahead(at(1), at(60), 10).await.expect("ahead"),
        vec![("prf_1".to_string(), at(30)), ("prf_2".to_string(), at(30))]
    );
    assert_eq!(store.due_ahead(at(1), at(29), 10).await.expect("ahead"), []);
    let mut c = step(2);
    schedule_leave(&store, &mut c, "prf_1", 30).await;
    c.next_changes.push(("prf_1".into(), None));
    assert!(store.commit_profiles(c).await.expect("commit"));

    assert_eq!(
        member_ids(&store, "prf_1").await,
        ["aud_1"],
        "still a member"
    );
    assert_eq!(scheduled(&store, "prf_1").await, [30]);
    assert_eq!(
        store.due_ahead(at(1), at(60), 10).await.expect("ahead"),
        vec![("prf_2".to_string(), at(30))],
        "a profile with a scheduled change is not prepared twice"
    );
    assert_eq!(store.next_due().await.expect("next"), Some(at(30)));
    assert!(
        store
            .claim_due(at(29), 10, LEASE)
            .await
            .expect("claim")
            .is_empty(),
        "the message is not delivered before its time"
    );
    assert_eq!(sent(&store).await, 1);

    assert_eq!(
        store
            .settle_scheduled("a", at(29), 10)
            .await
            .expect("settle"),
        Some(0)
    );
    assert_eq!(
        store
            .settle_scheduled("b", at(30), 10)
            .await
            .expect("settle"),
        None,
        "only the lease holder settles"
    );
    assert_eq!(
        store
            .settle_scheduled("a", at(30), 10)
            .await
            .expect("settle"),
        Some(1)
    );
    assert!(member_ids(&store, "prf_1").await.is_empty(), "left at 30 s");
    assert!(scheduled(&store, "prf_1").await.is_empty());
    let due = store.claim_due(at(30), 10, LEASE).await.expect("claim");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].message_id, "leave-prf_1-30");
}

pub async fn touching_a_profile_withdraws_its_scheduled_change(store: Shared) {
    members(&store, &["prf_1", "prf_2"]).await;
    let mut c = step(2);
    schedule_leave(&store, &mut c, "prf_1", 30).await;
    schedule_leave(&store, &mut c, "prf_2", 20).await;
    assert!(store.commit_profiles(c).await.expect("commit"));
    assert_eq!(sent(&store).await, 2);

    // A new event for prf_1 at 10 s: the step settles it first.
    let mut c = step(10);
    c.settle.push("prf_1".into());
    assert!(store.commit_profiles(c).await.expect("commit"));
    assert!(scheduled(&store, "prf_1").await.is_empty());
    assert_eq!(member_ids(&store, "prf_1").await, ["aud_1"], "not applied");
    assert_eq!(
        sent(&store).await,
        1,
        "the withdrawn message is not counted"
    );
    assert_eq!(store.next_due().await.expect("next"), Some(at(20)));

    // prf_2's change is due by 25 s: settling applies it.
    let mut c = step(25);
    c.settle.push("prf_2".into());
    assert!(store.commit_profiles(c).await.expect("commit"));
    assert!(member_ids(&store, "prf_2").await.is_empty(), "applied");
    let due = store.claim_due(at(25), 10, LEASE).await.expect("claim");
    assert_eq!(due.len(), 1, "its message still goes out");
    assert_eq!(due[0].message_id, "leave-prf_2-20");
}

pub async fn a_taken_scheduled_message_refuses_its_withdrawal(store: Shared) {
    members(&store, &["prf_1"]).await;
    let mut c = step(2);
    schedule_leave(&store, &mut c, "prf_1", 20).await;
    assert!(store.commit_profiles(c).await.expect("commit"));
    // A worker whose clock is ahead takes it.
    assert_eq!(
        store
            .claim_due(at(20), 10, LEASE)
            .await
            .expect("claim")
            .len(),
        1
    );
    let mut c = step(19);
    c.settle.push("prf_1".into());
    c.values.push(ValueChange {
        computation_id: "aud_1".into(),
        profile_id: "prf_1".into(),
        value: Some("true".into()),
    });
    assert!(
        store.commit_profiles(c).await.is_err(),
        "withdrawing a message already taken fails the step"
    );
    assert_eq!(scheduled(&store, "prf_1").await, [20], "nothing written");
}

pub async fn editing_a_computation_drops_its_scheduled_changes(store: Shared) {
    members(&store, &["prf_1", "prf_2"]).await;
    let mut c = step(2);
    schedule_leave(&store, &mut c, "prf_1", 30).await;
    c.next_changes.push(("prf_1".into(), None));
    c.next_changes.push(("prf_2".into(), None));
    assert!(store.commit_profiles(c).await.expect("commit"));
    // Evaluated before the edit below, committed after it.
    let mut late = step(3);
    schedule_leave(&store, &mut late, "prf_2", 40).await;
    late.next_changes.push(("prf_2".into(), None));

    let patch = ComputationPatch {
        name: Some("Buyers 2".into()),
        ..ComputationPatch::default()
    };
    // updated_at is kept in whole milliseconds: make sure it moves.
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .update_computation("aud_1", patch)
        .await
        .expect("update")
        .expect("live");
    assert!(scheduled(&store, "prf_1").await.is_empty());
    assert_eq!(
        store.next_due().await.expect("next"),
        None,
        "message withdrawn"
    );
    assert_eq!(sent(&store).await, 0);
    assert_eq!(
        store.due_profiles(at(30), 10).await.expect("due"),
        ["prf_1"],
        "due again at the change's time, to be evaluated afresh"
    );

    assert!(store.commit_profiles(late).await.expect("commit"));
    assert!(
        scheduled(&store, "prf_2").await.is_empty(),
        "stale: not written"
    );
    assert_eq!(
        store.next_due().await.expect("next"),
        None,
        "nor its message"
    );
    assert_eq!(
        store.due_profiles(at(40), 10).await.expect("due"),
        ["prf_1", "prf_2"]
    );
}
