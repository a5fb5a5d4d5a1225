//! Retention: old finished work goes, pending work stays.

use super::support::{Shared, append, at, event, report};
use sluice_store::Outcome;

pub async fn prune_deletes_finished_old_events_and_keeps_pending_work(store: Shared) {
    append(&store, "src_a", at(0), vec![event("old_done", &["dst_1"])]).await;
    append(
        &store,
        "src_a",
        at(1),
        vec![event("old_pending", &["dst_1"])],
    )
    .await;
    append(
        &store,
        "src_a",
        at(2),
        vec![event("old_no_destination", &[])],
    )
    .await;
    append(
        &store,
        "src_a",
        at(100),
        vec![event("new_done", &["dst_1"])],
    )
    .await;
    let due = store
        .claim_due(at(100), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    let reports = due
        .iter()
        .filter(|d| d.message_id != "old_pending")
        .map(|d| report(d.delivery_id, 1, at(100), 200, Outcome::Succeeded))
        .collect();
    store.report(reports).await.expect("report");
    let old_done = due
        .iter()
        .find(|d| d.message_id == "old_done")
        .expect("claimed");

    let pruned = store.prune(at(50)).await.expect("prune");
    assert_eq!(
        pruned, 2,
        "old finished events and old events without deliveries"
    );
    let left = store
        .recent_events("src_a", None, 10)
        .await
        .expect("events");
    let ids: Vec<_> = left.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, vec!["new_done", "old_pending"]);
    assert_eq!(
        store.get_delivery(old_done.delivery_id).await.expect("get"),
        None
    );
    assert!(
        store
            .list_attempts(old_done.delivery_id)
            .await
            .expect("attempts")
            .is_empty()
    );

    let still_due = store
        .claim_due(at(1000), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    let ids: Vec<_> = still_due.iter().map(|d| d.message_id.as_str()).collect();
    assert_eq!(ids, vec!["old_pending"], "pending work survives retention");
    assert_eq!(store.prune(at(50)).await.expect("prune again"), 0);
}

pub async fn seqs_and_delivery_ids_are_never_reused_after_prune(store: Shared) {
    append(
        &store,
        "src_a",
        at(0),
        vec![event("m1", &["dst_1"]), event("m2", &["dst_1"])],
    )
    .await;
    let due = store
        .claim_due(at(1), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    let reports = due
        .iter()
        .map(|d| report(d.delivery_id, 1, at(1), 200, Outcome::Succeeded))
        .collect();
    store.report(reports).await.expect("report");
    let max_seq = due.iter().map(|d| d.event_seq).max().expect("claimed");
    let max_id = due.iter().map(|d| d.delivery_id).max().expect("claimed");

    store.prune(at(1000)).await.expect("prune");
    append(&store, "src_a", at(2000), vec![event("m3", &["dst_1"])]).await;
    let newest = store
        .claim_due(at(2000), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    let m3 = newest
        .iter()
        .find(|d| d.message_id == "m3")
        .expect("m3 is due");
    assert!(
        m3.event_seq > max_seq,
        "seq {} reused (max was {max_seq})",
        m3.event_seq
    );
    assert!(
        m3.delivery_id > max_id,
        "delivery id {} reused (max was {max_id})",
        m3.delivery_id
    );
}
