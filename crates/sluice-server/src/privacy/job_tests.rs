//! The job against a real SQLite store: a profile engine step that read a
//! user's event before the job purged them cannot commit afterwards.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_store::{
    AppendRequest, NewEvent, NewRegulation, NewSource, ProfileCommit, ProfileRecord, SqliteConfig,
    SqliteStore, Store,
};

use super::JobConfig;
use super::job;

const CONFIG: JobConfig = JobConfig {
    poll_interval: Duration::from_millis(20),
    lease_ttl: Duration::from_secs(15),
    settle: Duration::from_millis(300),
};

/// A new SQLite store in a temporary directory (kept alive by the guard).
async fn fresh_store() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(SqliteConfig::new(dir.path().join("sluice.db")))
        .await
        .expect("open");
    (dir, Arc::new(store))
}

async fn create_source_a(store: &dyn Store) {
    store
        .create_source(NewSource {
            id: "src_a".into(),
            name: "a".into(),
            enabled: true,
            write_key_hash: "h".into(),
            write_key_hint: "k…".into(),
        })
        .await
        .expect("source");
}

#[tokio::test]
async fn an_engine_step_in_flight_during_a_purge_cannot_recreate_the_user() {
    let (_dir, store) = fresh_store().await;
    create_source_a(store.as_ref()).await;
    store
        .append(AppendRequest {
            source_id: "src_a".into(),
            received_at: Utc::now(),
            events: vec![NewEvent {
                message_id: "m1".into(),
                event_type: "identify".into(),
                body: r#"{"messageId":"m1","type":"identify","userId":"u1"}"#.into(),
                ..NewEvent::default()
            }],
        })
        .await
        .expect("append");
    // The engine reads u1's event and computes its step...
    let held = store
        .take_profile_partitions("engine", Utc::now(), CONFIG.lease_ttl)
        .await
        .expect("lease");
    assert_eq!(held.len(), 1, "SQLite runs the engine as one partition");
    let cursor = held[0].cursor;
    let read = store.profile_events_in(held, 10).await.expect("read");
    assert_eq!(read.len(), 1);
    let in_flight = ProfileCommit {
        owner: "engine".into(),
        now: Utc::now(),
        cursor: read.last().map(|e| e.cursor),
        profiles: vec![ProfileRecord {
            id: "prf_u1".into(),
            doc: r#"{"userIds":["u1"]}"#.into(),
            ..ProfileRecord::default()
        }],
        identities: vec![("user:u1".into(), "prf_u1".into())],
        ..ProfileCommit::default()
    };
    // ...while the job purges u1 to the end.
    store
        .create_regulation(NewRegulation {
            id: "reg_1".into(),
            regulation_type: "DELETE_INTERNAL".into(),
            subject_ids: vec!["u1".into()],
            source_id: None,
            suppress: None,
            purge: true,
            notify: false,
            now: Utc::now(),
        })
        .await
        .expect("regulation");
    let (regulation, pending) = job::pick(store.as_ref(), "job", CONFIG)
        .await
        .expect("pick")
        .expect("one");
    let wake: sluice_api::Hook = Arc::new(|| {});
    assert!(
        job::work(store.as_ref(), "job", CONFIG, &regulation, pending, &wake)
            .await
            .expect("work")
    );
    let detail = store.get_regulation("reg_1").await.expect("get");
    assert_eq!(detail.expect("found").regulation.status, "FINISHED");

    assert!(
        !store.commit_profiles(in_flight).await.expect("commit"),
        "the step read before the purge is refused"
    );
    let identities = store
        .resolve_identities(vec!["user:u1".into()])
        .await
        .expect("resolve");
    assert!(identities.is_empty(), "u1 came back: {identities:?}");
    // The job handed the lease back: the engine resumes at its cursor.
    let again = store
        .take_profile_partitions("engine", Utc::now(), CONFIG.lease_ttl)
        .await
        .expect("lease");
    assert_eq!(again.first().map(|p| p.cursor), Some(cursor));
}

/// Polling with nothing to do is the usual case: it must not write (each
/// lease renewal is a commit, and on SQLite an fsync), so the lease stays
/// free for any node until a regulation arrives.
#[tokio::test]
async fn an_idle_job_neither_takes_nor_renews_the_lease() {
    let (_dir, store) = fresh_store().await;
    for _ in 0..3 {
        assert!(
            job::pick(store.as_ref(), "job", CONFIG)
                .await
                .expect("pick")
                .is_none()
        );
    }
    assert!(
        store
            .take_regulation_lease("other", Utc::now(), CONFIG.lease_ttl)
            .await
            .expect("lease"),
        "an idle poll left the lease taken"
    );
}

/// Another node may accept a call for a subject until it applies the
/// suppression (up to a sync later), and that call may commit up to the
/// storage timeout after its check: a purge that scanned at once missed it,
/// kept it, and the profile engine rebuilt the deleted profile from it.
#[tokio::test]
async fn a_suppressing_regulation_purges_calls_committed_until_it_settles() {
    let (_dir, store) = fresh_store().await;
    create_source_a(store.as_ref()).await;
    let append = |id: &'static str| {
        let store = store.clone();
        async move {
            store
                .append(AppendRequest {
                    source_id: "src_a".into(),
                    received_at: Utc::now(),
                    events: vec![NewEvent {
                        message_id: id.into(),
                        event_type: "track".into(),
                        body: format!(
                            r#"{{"messageId":"{id}","type":"track","event":"e","userId":"u1"}}"#
                        ),
                        ..NewEvent::default()
                    }],
                })
                .await
                .expect("append");
        }
    };
    append("before").await;
    store
        .create_regulation(NewRegulation {
            id: "reg_s".into(),
            regulation_type: "SUPPRESS_WITH_DELETE".into(),
            subject_ids: vec!["u1".into()],
            source_id: None,
            suppress: Some(true),
            purge: true,
            notify: false,
            now: Utc::now(),
        })
        .await
        .expect("regulation");
    let wake: sluice_api::Hook = Arc::new(|| {});
    let mut failures = super::failures::Failures::default();
    let first = super::round(store.as_ref(), "job", CONFIG, &wake, &mut failures).await;
    assert!(
        matches!(first, Err(wait) if wait <= CONFIG.settle),
        "the purge waits for the regulation to settle: {first:?}"
    );
    // A node that had not yet applied the suppression commits a call now.
    append("late").await;
    tokio::time::sleep(CONFIG.settle).await;
    assert_eq!(
        super::round(store.as_ref(), "job", CONFIG, &wake, &mut failures).await,
        Ok(true)
    );
    let detail = store.get_regulation("reg_s").await.expect("get");
    let detail = detail.expect("found");
    assert_eq!(detail.regulation.status, "FINISHED");
    assert_eq!(
        detail.subjects[0].events_purged, 2,
        "the late call is purged too"
    );
}

#[test]
fn only_suppressing_purges_wait_to_settle() {
    let now = Utc::now();
    let regulation = |kind: &str, purge: bool| sluice_store::Regulation {
        id: "r".into(),
        regulation_type: kind.into(),
        source_id: None,
        status: "INITIALIZED".into(),
        purge,
        notify: true,
        subjects: 1,
        subjects_done: 0,
        created_at: now,
        finished_at: None,
        error: None,
    };
    let settle = Duration::from_secs(11);
    let wait = job::unsettled(&regulation("SUPPRESS_WITH_DELETE", true), settle, now);
    assert_eq!(wait, Some(settle));
    let later = now + chrono::Duration::seconds(11);
    assert_eq!(
        job::unsettled(&regulation("SUPPRESS_WITH_DELETE", true), settle, later),
        None
    );
    for (kind, purge) in [("DELETE_ONLY", true), ("SUPPRESS_ONLY", false)] {
        assert_eq!(job::unsettled(&regulation(kind, purge), settle, now), None);
    }
}
