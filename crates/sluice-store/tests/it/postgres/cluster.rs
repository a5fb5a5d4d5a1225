//! Node membership across nodes sharing the database.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::ClusterStore;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_709_294_400 + secs, 0).expect("valid time")
}

const TTL: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_see_each_other_until_one_falls_silent_or_leaves() {
    let (schema, a) = super::fresh().await;
    let b = schema.open().await;
    assert_eq!(a.heartbeat("a", at(0), TTL).await.unwrap(), ["a"]);
    assert_eq!(b.heartbeat("b", at(1), TTL).await.unwrap(), ["a", "b"]);
    assert_eq!(a.heartbeat("a", at(10), TTL).await.unwrap(), ["a", "b"]);
    // b's last beat is now more than a TTL old: a killed node drops out.
    assert_eq!(a.heartbeat("a", at(12), TTL).await.unwrap(), ["a"]);
    // And comes back with its next beat; leaving takes it out at once.
    assert_eq!(b.heartbeat("b", at(13), TTL).await.unwrap(), ["a", "b"]);
    b.leave("b").await.unwrap();
    assert_eq!(a.heartbeat("a", at(14), TTL).await.unwrap(), ["a"]);
    b.close().await;
    a.close().await;
}
