//! A destination switched off is sent and counted nothing by the profile
//! engine, and switching it on again queues a first sync of its own.

use crate::whole_engine::WholeEngine;
use std::time::Duration;

use super::support::{Shared, at, deliveries_to, new_destination, source};
use sluice_store::{
    DestinationPatch, EmittedMessage, JobProgress, NewComputation, ProfileCommit, ProfileRecord,
    Schedule, ScheduledChange,
};

const TTL: Duration = Duration::from_secs(600);

fn message(id: &str, destinations: &[&str], deliver_at: Option<i64>) -> EmittedMessage {
    EmittedMessage {
        computation_id: "aud_1".into(),
        message_id: id.into(),
        body: r#"{"type":"identify","userId":"u1","traits":{"buyers":true}}"#.into(),
        destination_ids: destinations.iter().map(|d| d.to_string()).collect(),
        deliver_at: deliver_at.map(at),
    }
}

/// Jobs left in the queue, as (kind, destination), each marked done.
async fn drain_jobs(store: &Shared) -> Vec<(String, Option<String>)> {
    let mut jobs = Vec::new();
    while let Some(job) = store.next_profile_job().await.expect("job") {
        jobs.push((job.kind.clone(), job.destination_id.clone()));
        let done = ProfileCommit {
            owner: "a".into(),
            now: at(1),
            job: Some((job.id, JobProgress::Done)),
            ..ProfileCommit::default()
        };
        assert!(store.commit_profiles(done).await.expect("commit"));
    }
    jobs
}

async fn set_enabled(store: &Shared, destination: &str, enabled: bool) {
    let patch = DestinationPatch {
        enabled: Some(enabled),
        ..DestinationPatch::default()
    };
    store
        .update_destination(destination, patch)
        .await
        .expect("update")
        .expect("exists");
}

pub async fn a_disabled_destination_is_sent_nothing_and_resynced_when_enabled(store: Shared) {
    source(&store, "src_a").await;
    store
        .create_destination(new_destination("dst_on", &["src_a"]))
        .await
        .expect("destination");
    let mut off = new_destination("dst_off", &["src_a"]);
    off.enabled = false;
    store.create_destination(off).await.expect("destination");
    let audience = NewComputation {
        id: "aud_1".into(),
        class: "audience".into(),
        key: "buyers".into(),
        name: "Buyers".into(),
        definition: r#"{"condition":{"performed":{"event":"E"}}}"#.into(),
        destination_ids: vec!["dst_on".into(), "dst_off".into()],
    };
    store.create_computation(audience).await.expect("create");
    store
        .take_profile_lease("a", at(0), TTL)
        .await
        .expect("lease")
        .expect("held");
    drain_jobs(&store).await;
    let updated_at = store
        .get_computation("aud_1")
        .await
        .expect("get")
        .expect("exists")
        .updated_at;

    // One message for both, and a window change prepared for a profile
    // whose message would go only to the disabled destination.
    let step = ProfileCommit {
        owner: "a".into(),
        now: at(2),
        profiles: vec![ProfileRecord {
            id: "prf_1".into(),
            doc: "{}".into(),
            next_change_at: Some(at(60)),
            ..ProfileRecord::default()
        }],
        messages: vec![
            message("m-both", &["dst_on", "dst_off"], None),
            message("m-later", &["dst_off"], Some(60)),
        ],
        scheduled: vec![Schedule {
            change: ScheduledChange {
                computation_id: "aud_1".into(),
                profile_id: "prf_1".into(),
                at: at(60),
                value: None,
            },
            message_id: Some("m-later".into()),
            computation_updated_at: updated_at,
        }],
        ..ProfileCommit::default()
    };
    assert!(store.commit_profiles(step).await.expect("commit"));
    assert!(deliveries_to(&store, "dst_off").await.is_empty());
    assert_eq!(deliveries_to(&store, "dst_on").await.len(), 1);
    let sends = store.sends_by_destination("aud_1").await.expect("sends");
    assert_eq!(
        sends,
        vec![("dst_on".to_string(), 1)],
        "nothing counted off"
    );
    let c = store.get_computation("aud_1").await.expect("get");
    assert_eq!(c.map(|c| c.messages_sent), Some(1));
    let prepared = store
        .scheduled_of(vec!["prf_1".into()])
        .await
        .expect("scheduled");
    assert_eq!(prepared.len(), 1, "the change is kept without its message");

    // Enabling queues a backfill for it and withdraws prepared changes,
    // whose messages were made without it.
    set_enabled(&store, "dst_off", true).await;
    assert_eq!(
        drain_jobs(&store).await,
        vec![("backfill".to_string(), Some("dst_off".to_string()))]
    );
    let prepared = store
        .scheduled_of(vec!["prf_1".into()])
        .await
        .expect("scheduled");
    assert!(prepared.is_empty(), "{prepared:?}");

    // From then on it is sent and counted like any other.
    let step = ProfileCommit {
        owner: "a".into(),
        now: at(3),
        messages: vec![message("m-after", &["dst_on", "dst_off"], None)],
        ..ProfileCommit::default()
    };
    assert!(store.commit_profiles(step).await.expect("commit"));
    assert_eq!(deliveries_to(&store, "dst_off").await.len(), 1);
    let sends = store.sends_by_destination("aud_1").await.expect("sends");
    assert_eq!(
        sends,
        vec![("dst_off".to_string(), 1), ("dst_on".to_string(), 2)]
    );

    // Only a switch from off to on resyncs: not an enable of an enabled
    // destination, a disable, or another change.
    set_enabled(&store, "dst_off", true).await;
    set_enabled(&store, "dst_on", false).await;
    let rename = DestinationPatch {
        name: Some("Renamed".into()),
        ..DestinationPatch::default()
    };
    store
        .update_destination("dst_off", rename)
        .await
        .expect("update")
        .expect("exists");
    assert!(drain_jobs(&store).await.is_empty());
    // Switched on again after a while: a fresh first sync.
    set_enabled(&store, "dst_on", true).await;
    assert_eq!(
        drain_jobs(&store).await,
        vec![("backfill".to_string(), Some("dst_on".to_string()))]
    );
}
