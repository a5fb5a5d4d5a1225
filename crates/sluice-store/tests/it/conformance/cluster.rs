//! Node membership: heartbeats, expiry and leaving.

use std::time::Duration;

use super::support::Shared;

const TTL: Duration = Duration::from_secs(10);

/// A node's own heartbeat counts it, whatever the backend.
pub async fn a_node_counts_itself_once_it_beats(store: Shared) {
    let live = store.heartbeat("node-a", TTL).await.unwrap();
    assert_eq!(live.live, ["node-a"]);
    assert!(live.silent.is_empty());
    let again = store.heartbeat("node-a", TTL).await.unwrap();
    assert_eq!(again.live, ["node-a"], "a second beat is the same node");
}

/// After leaving, a node that beats again is counted again.
pub async fn a_node_that_left_is_counted_when_it_beats_again(store: Shared) {
    store.heartbeat("node-a", TTL).await.unwrap();
    store.leave("node-a").await.unwrap();
    let live = store.heartbeat("node-a", TTL).await.unwrap();
    assert_eq!(live.live, ["node-a"]);
}
