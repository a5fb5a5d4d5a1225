//! A deleted destination leaves computed traits and audiences, as a
//! deleted source leaves destinations.

use crate::whole_engine::WholeEngine;
use std::time::Duration;

use super::support::{Shared, at, new_destination, source};
use sluice_store::{ComputationPatch, EmittedMessage, JobProgress, NewComputation, ProfileCommit};

const TTL: Duration = Duration::from_secs(10);

fn computation(id: &str, destinations: &[&str]) -> NewComputation {
    NewComputation {
        id: id.into(),
        class: "audience".into(),
        key: id.into(),
        name: id.into(),
        definition: r#"{"condition":{"performed":{"event":"E"}}}"#.into(),
        destination_ids: destinations.iter().map(|d| d.to_string()).collect(),
    }
}

async fn destinations_of(store: &Shared, id: &str) -> Vec<String> {
    store
        .get_computation(id)
        .await
        .expect("get")
        .expect("exists")
        .destination_ids
}

pub async fn deleting_a_destination_takes_it_out_of_computed_traits_and_audiences(store: Shared) {
    source(&store, "src_a").await;
    for id in ["dst_a", "dst_b"] {
        store
            .create_destination(new_destination(id, &["src_a"]))
            .await
            .expect("destination");
    }
    for c in [
        computation("aud_both", &["dst_a", "dst_b"]),
        computation("aud_b", &["dst_b"]),
        computation("aud_later", &[]),
    ] {
        store.create_computation(c).await.expect("computation");
    }
    // A backfill to dst_b waits in the queue.
    let connect = ComputationPatch {
        destination_ids: Some(vec!["dst_b".into()]),
        ..ComputationPatch::default()
    };
    store
        .update_computation("aud_later", connect)
        .await
        .expect("update")
        .expect("exists");
    store
        .take_profile_lease("engine", at(0), TTL)
        .await
        .expect("lease")
        .expect("free");
    let sent = ProfileCommit {
        owner: "engine".into(),
        now: at(1),
        messages: vec![EmittedMessage {
            computation_id: "aud_both".into(),
            message_id: "personas-1".into(),
            body: r#"{"type":"identify","userId":"u1","traits":{"aud_both":true}}"#.into(),
            destination_ids: vec!["dst_a".into(), "dst_b".into()],
            deliver_at: None,
        }],
        ..ProfileCommit::default()
    };
    assert!(store.commit_profiles(sent).await.expect("commit"));

    assert!(store.delete_destination("dst_b").await.expect("delete"));
    assert_eq!(destinations_of(&store, "aud_both").await, ["dst_a"]);
    assert!(destinations_of(&store, "aud_b").await.is_empty());
    assert!(destinations_of(&store, "aud_later").await.is_empty());
    let sends = store.sends_by_destination("aud_both").await.expect("sends");
    assert_eq!(
        sends,
        vec![("dst_a".to_string(), 1)],
        "dst_b is no longer counted"
    );
    let both = store.get_computation("aud_both").await.expect("get");
    assert_eq!(
        both.map(|c| c.messages_sent),
        Some(2),
        "the total keeps what was sent"
    );
    let mut backfills = Vec::new();
    while let Some(job) = store.next_profile_job().await.expect("job") {
        if job.kind == "backfill" {
            backfills.push(job.destination_id.clone());
        }
        let done = ProfileCommit {
            owner: "engine".into(),
            now: at(2),
            job: Some((job.id, JobProgress::Done)),
            ..ProfileCommit::default()
        };
        assert!(store.commit_profiles(done).await.expect("commit"));
    }
    assert!(backfills.is_empty(), "{backfills:?}");
    // The other destination is untouched.
    assert!(store.get_destination("dst_a").await.expect("get").is_some());
}
