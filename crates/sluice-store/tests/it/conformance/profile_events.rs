//! A person's behavioural events (`profile_events`): appended by a step,
//! moved by a merge, trimmed by the cap, dropped with the profile; and a
//! document rewritten only when asked.

use crate::whole_engine::WholeEngine;
use std::time::Duration;

use super::support::{Shared, at};
use sluice_store::{ProfileCommit, ProfileEventRow, ProfileRecord};

const TTL: Duration = Duration::from_secs(10);

fn row(seq: i64, ts: i64, name: &str) -> ProfileEventRow {
    ProfileEventRow {
        seq,
        ts,
        source_id: "src_a".into(),
        kind: "track".into(),
        name: Some(name.into()),
        properties: format!(r#"{{"n":{seq}}}"#),
        message_hash: Some(seq * 7919),
    }
}

fn profile(id: &str, doc: &str) -> ProfileRecord {
    ProfileRecord {
        id: id.into(),
        doc: doc.into(),
        ..ProfileRecord::default()
    }
}

async fn events_of(store: &Shared, id: &str) -> Vec<(i64, i64)> {
    let loaded = store
        .load_profiles(vec![id.into()], true)
        .await
        .expect("load");
    loaded
        .iter()
        .flat_map(|r| r.events.iter().map(|e| (e.ts, e.seq)))
        .collect()
}

async fn commit(store: &Shared, step: ProfileCommit) {
    let step = ProfileCommit {
        owner: "a".into(),
        now: at(1),
        ..step
    };
    assert!(store.commit_profiles(step).await.expect("commit"));
}

pub async fn profile_events_are_appended_moved_trimmed_and_dropped(store: Shared) {
    store
        .take_profile_lease("a", at(0), TTL)
        .await
        .expect("lease")
        .expect("held");
    commit(
        &store,
        ProfileCommit {
            profiles: vec![profile("prf_a", "{\"a\":1}"), profile("prf_b", "{}")],
            events: vec![
                ("prf_a".into(), row(3, 300, "E")),
                ("prf_a".into(), row(1, 100, "E")),
                ("prf_b".into(), row(2, 200, "F")),
            ],
            ..ProfileCommit::default()
        },
    )
    .await;
    assert_eq!(events_of(&store, "prf_a").await, vec![(100, 1), (300, 3)]);
    let without = store
        .load_profiles(vec!["prf_a".into()], false)
        .await
        .expect("load");
    assert!(without[0].events.is_empty(), "events only when asked");
    let with = store
        .load_profiles(vec!["prf_a".into()], true)
        .await
        .expect("load");
    assert_eq!(with[0].events[0], row(1, 100, "E"), "every field kept");

    // A new event of b, then b merges into a: the new row moves too.
    commit(
        &store,
        ProfileCommit {
            events: vec![("prf_b".into(), row(4, 250, "F"))],
            moved_events: vec![("prf_b".into(), "prf_a".into())],
            removed_profiles: vec!["prf_b".into()],
            next_changes: vec![("prf_a".into(), Some(at(30)))],
            ..ProfileCommit::default()
        },
    )
    .await;
    assert_eq!(
        events_of(&store, "prf_a").await,
        vec![(100, 1), (200, 2), (250, 4), (300, 3)]
    );
    assert!(events_of(&store, "prf_b").await.is_empty());
    let a = store
        .load_profiles(vec!["prf_a".into()], false)
        .await
        .expect("load");
    assert_eq!(a[0].doc, "{\"a\":1}", "the document is left alone");
    assert_eq!(a[0].next_change_at, Some(at(30)));
    assert_eq!(
        store.due_profiles(at(30), 10).await.expect("due"),
        vec!["prf_a"]
    );

    // The cap drops what comes before a position.
    commit(
        &store,
        ProfileCommit {
            trimmed_events: vec![("prf_a".into(), 250, 4)],
            ..ProfileCommit::default()
        },
    )
    .await;
    assert_eq!(events_of(&store, "prf_a").await, vec![(250, 4), (300, 3)]);
    commit(
        &store,
        ProfileCommit {
            removed_profiles: vec!["prf_a".into()],
            ..ProfileCommit::default()
        },
    )
    .await;
    assert!(events_of(&store, "prf_a").await.is_empty());
}
