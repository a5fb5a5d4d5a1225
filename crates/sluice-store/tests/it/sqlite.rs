//! SQLite-specific behaviour: files, reopening, migrations, group commit.

use crate::whole_engine::WholeEngine;
use sluice_store::CatalogStore;
use sluice_store::EventStore;
use std::path::PathBuf;

use chrono::Utc;
use sluice_store::{AppendRequest, NewEvent, NewSource, SqliteConfig, SqliteStore, StoreError};
use tempfile::TempDir;

pub fn db_path(dir: &TempDir) -> PathBuf {
    dir.path().join("data/nested/sluice.db")
}

async fn open_in(dir: &TempDir) -> SqliteStore {
    match SqliteStore::open(SqliteConfig::new(db_path(dir))).await {
        Ok(store) => store,
        Err(e) => panic!("open sqlite store: {e}"),
    }
}

/// A new, empty store in its own temp dir (kept alive by the guard).
pub async fn fresh() -> (TempDir, SqliteStore) {
    let dir = TempDir::new().expect("temp dir");
    let store = open_in(&dir).await;
    (dir, store)
}

pub fn request(source_id: &str, message_ids: &[&str]) -> AppendRequest {
    AppendRequest {
        source_id: source_id.into(),
        received_at: Utc::now(),
        events: message_ids
            .iter()
            .map(|m| NewEvent {
                message_id: (*m).into(),
                event_type: "track".into(),
                body: "{}".into(),
                destination_ids: vec!["dst_1".into()],
                ..NewEvent::default()
            })
            .collect(),
    }
}

fn new_source(id: &str, key_hash: &str) -> NewSource {
    NewSource {
        id: id.into(),
        name: id.into(),
        enabled: true,
        write_key_hash: key_hash.into(),
        write_key_hint: "abcd…".into(),
    }
}

/// The window is rebuilt from the stored events at open: dropping the
/// store without closing is what a `kill -9` leaves (committed groups only).
#[tokio::test]
async fn a_resend_after_reopening_is_dropped_as_a_duplicate() {
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1", "m2"]))
        .await
        .expect("append");
    assert_eq!(store.dedup_window_size().0, 2);
    drop(store);

    let store = open_in(&dir).await;
    assert_eq!(store.dedup_window_size().0, 2, "rebuilt at open");
    let again = store
        .append(request("src_1", &["m2", "m3"]))
        .await
        .expect("append");
    assert_eq!((again.stored, again.duplicates), (1, 1));
    let events = store
        .recent_events("src_1", None, 10)
        .await
        .expect("events");
    let ids: Vec<_> = events.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, vec!["m3", "m2", "m1"]);
}

/// A clean close saves the window beside the database; the next open loads
/// it (and removes the file) instead of reading every event again.
#[tokio::test]
async fn a_resend_after_a_clean_restart_is_dropped_through_the_saved_window() {
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1", "m2"]))
        .await
        .expect("append");
    store.close().await;
    drop(store);
    let saved = dir.path().join("data/nested/sluice.db-dedup");
    assert!(saved.exists(), "the window is saved at a clean close");

    let store = open_in(&dir).await;
    assert!(!saved.exists(), "a saved window is used once");
    assert_eq!(store.dedup_window_size().0, 2);
    let again = store
        .append(request("src_1", &["m1", "m3"]))
        .await
        .expect("append");
    assert_eq!((again.stored, again.duplicates), (1, 1));
}

#[tokio::test]
async fn with_the_window_off_every_call_is_stored() {
    let dir = TempDir::new().expect("temp dir");
    let mut config = SqliteConfig::new(db_path(&dir));
    config.dedup_window = None;
    let store = SqliteStore::open(config).await.expect("open");
    for _ in 0..2 {
        store
            .append(request("src_1", &["m1"]))
            .await
            .expect("append");
    }
    let events = store
        .recent_events("src_1", None, 10)
        .await
        .expect("events");
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn data_survives_close_and_reopen() {
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1", "m2"]))
        .await
        .expect("append");
    store.put_meta_if_absent("k", "v").await.expect("meta");
    store.close().await;
    drop(store);

    let store = open_in(&dir).await;
    let events = store
        .recent_events("src_1", None, 10)
        .await
        .expect("events");
    let ids: Vec<_> = events.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, vec!["m2", "m1"]);
    assert_eq!(
        store.get_meta("k").await.expect("meta").as_deref(),
        Some("v")
    );
}

#[tokio::test]
async fn acknowledged_appends_survive_drop_without_close() {
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1"]))
        .await
        .expect("append");
    drop(store);
    let store = open_in(&dir).await;
    assert_eq!(
        store
            .recent_events("src_1", None, 10)
            .await
            .expect("events")
            .len(),
        1
    );
}

#[tokio::test]
async fn reopening_applies_no_migration_twice() {
    let (dir, store) = fresh().await;
    store
        .create_source(new_source("src_1", "h1"))
        .await
        .expect("create");
    store.close().await;
    drop(store);
    for _ in 0..2 {
        let store = open_in(&dir).await;
        assert_eq!(store.list_sources().await.expect("list").len(), 1);
        store.close().await;
    }
}

#[tokio::test]
async fn calls_after_close_fail_as_closed() {
    let (_dir, store) = fresh().await;
    store.close().await;
    let write = store.append(request("src_1", &["m1"])).await;
    assert!(matches!(write, Err(StoreError::Closed)), "got {write:?}");
    let read = store.list_sources().await;
    assert!(matches!(read, Err(StoreError::Closed)), "got {read:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_does_not_fail_writes_grouped_with_it() {
    let (_dir, store) = fresh().await;
    let store = std::sync::Arc::new(store);
    store
        .create_source(new_source("src_1", "h1"))
        .await
        .expect("create");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let store = store.clone();
        tasks.spawn(async move {
            if i % 4 == 0 {
                // Duplicate id: fails inside whatever group it lands in.
                let dup = store
                    .create_source(new_source("src_1", &format!("x{i}")))
                    .await;
                assert!(matches!(dup, Err(StoreError::Conflict(_))), "got {dup:?}");
            } else {
                let id = format!("m{i}");
                store
                    .append(request("src_1", &[&id]))
                    .await
                    .expect("append");
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("task");
    }
    let events = store
        .recent_events("src_1", None, 100)
        .await
        .expect("events");
    assert_eq!(
        events.len(),
        30,
        "every append commits despite failing neighbours"
    );
    assert_eq!(store.list_sources().await.expect("list").len(), 1);
}

#[cfg(unix)]
#[tokio::test]
async fn database_file_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1"]))
        .await
        .expect("append");
    let mode = std::fs::metadata(db_path(&dir))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "database mode {mode:o}");
    let wal = PathBuf::from(format!("{}-wal", db_path(&dir).display()));
    let wal_mode = std::fs::metadata(wal)
        .expect("stat wal")
        .permissions()
        .mode();
    assert_eq!(wal_mode & 0o077, 0, "WAL mode {wal_mode:o}");
}

#[cfg(unix)]
#[tokio::test]
async fn opening_tightens_a_loose_database_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().expect("temp dir");
    let path = db_path(&dir);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, b"").expect("create");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let _store = open_in(&dir).await;
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Two processes on one data directory would run two of everything; the
/// second open names the lock file instead, once its wait for the first to
/// exit (`lock_wait`) has passed.
#[tokio::test]
async fn a_database_in_use_cannot_be_opened_again_until_it_is_closed() {
    let (dir, store) = fresh().await;
    let mut config = SqliteConfig::new(db_path(&dir));
    config.lock_wait = std::time::Duration::from_millis(300);
    let second = SqliteStore::open(config).await;
    let Err(e) = second else {
        panic!("a second store opened the database in use")
    };
    assert!(
        e.to_string().contains("another Sluice process") && e.to_string().contains(".lock"),
        "{e}"
    );
    store.close().await;
    drop(store);
    let _again = open_in(&dir).await;
}

/// Holding the lock, a newly opened store knows the leases in the database
/// are a dead process's: the profile engine, the regulation job and the
/// claimed deliveries resume at once, not when the leases lapse.
#[tokio::test]
async fn reopening_frees_the_leases_of_the_process_before() {
    use sluice_store::{DeliveryStore, RegulationStore};
    use std::time::Duration;

    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1"]))
        .await
        .expect("append");
    let hour = Duration::from_secs(3600);
    let now = Utc::now();
    assert!(
        store
            .take_profile_lease("dead", now, hour)
            .await
            .expect("lease")
            .is_some()
    );
    assert!(
        store
            .take_regulation_lease("dead", now, hour)
            .await
            .expect("lease")
    );
    assert_eq!(
        store.claim_due(now, 10, hour).await.expect("claim").len(),
        1
    );
    // The process dies holding them all (no release, no close).
    drop(store);

    let store = open_in(&dir).await;
    let now = Utc::now();
    assert!(
        store
            .take_profile_lease("next", now, hour)
            .await
            .expect("lease")
            .is_some(),
        "the profile engine waits for a dead process's lease"
    );
    assert!(
        store
            .take_regulation_lease("next", now, hour)
            .await
            .expect("lease"),
        "the regulation job waits for a dead process's lease"
    );
    assert_eq!(
        store.claim_due(now, 10, hour).await.expect("claim").len(),
        1,
        "a delivery claimed by a dead process waits for its lease"
    );
}

/// A restart that does not wait for the old process to exit (`kill; start`,
/// a rolling update) waits for it: a stopping Sluice finishes its requests
/// and webhook sends first, which takes seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_waits_for_the_process_before_to_finish_stopping() {
    let (dir, store) = fresh().await;
    let stopping = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        store.close().await;
        drop(store);
    });
    let reopened = SqliteStore::open(SqliteConfig::new(db_path(&dir))).await;
    assert!(reopened.is_ok(), "{:?}", reopened.err());
    stopping.await.expect("stopped");
}
