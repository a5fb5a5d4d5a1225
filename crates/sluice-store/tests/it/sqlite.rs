//! SQLite-specific behaviour: files, reopening, migrations.

use chrono::Utc;
use sluice_store::{AppendRequest, NewEvent, SqliteConfig, SqliteStore, Store};
use tempfile::TempDir;

pub async fn open_in(dir: &TempDir) -> SqliteStore {
    match SqliteStore::open(SqliteConfig::new(dir.path().join("data/sluice.db"))).await {
        Ok(store) => store,
        Err(e) => panic!("open sqlite store: {e}"),
    }
}

#[tokio::test]
async fn appended_events_survive_reopen() {
    let dir = TempDir::new().unwrap();
    let store = open_in(&dir).await;
    store
        .append(AppendRequest {
            source_id: "src_1".into(),
            received_at: Utc::now(),
            events: vec![NewEvent {
                message_id: "m1".into(),
                event_type: "track".into(),
                body: "{}".into(),
                destination_ids: vec!["dst_1".into()],
            }],
        })
        .await
        .unwrap();
    store.close().await;
    drop(store);
    let store = open_in(&dir).await;
    let events = store.recent_events("src_1", None, 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].message_id, "m1");
}
