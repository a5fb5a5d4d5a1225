//! Settings, sources and destinations.

use super::support::{
    Shared, append, at, deliveries_to, event, key_hash, new_destination, new_source, settings,
    source,
};
use sluice_store::{DeliveryState, DestinationPatch, SourcePatch, StoreError};

pub async fn meta_put_if_absent_keeps_the_first_value(store: Shared) {
    assert_eq!(store.get_meta("admin_token").await.expect("get"), None);
    let kept = store
        .put_meta_if_absent("admin_token", "first")
        .await
        .expect("put");
    assert_eq!(kept, "first");
    let kept = store
        .put_meta_if_absent("admin_token", "second")
        .await
        .expect("put again");
    assert_eq!(kept, "first", "an existing value must win");
    assert_eq!(
        store.get_meta("admin_token").await.expect("get").as_deref(),
        Some("first")
    );
}

pub async fn a_revoked_session_stays_revoked_until_it_expires_then_is_pruned(store: Shared) {
    assert!(!store.session_revoked("s1").await.expect("read"));
    store
        .revoke_session("s1", 1_000, 500)
        .await
        .expect("revoke");
    store
        .revoke_session("s2", 2_000, 500)
        .await
        .expect("revoke");
    // Signing out twice keeps the later expiry.
    store.revoke_session("s2", 1_500, 600).await.expect("again");
    assert!(store.session_revoked("s1").await.expect("read"));
    assert!(store.session_revoked("s2").await.expect("read"));
    assert!(!store.session_revoked("s3").await.expect("read"));
    // A later revocation prunes those whose cookies have expired, and only those.
    store
        .revoke_session("s3", 3_000, 1_500)
        .await
        .expect("revoke");
    assert!(
        !store.session_revoked("s1").await.expect("read"),
        "expired at 1000: pruned at 1500"
    );
    assert!(store.session_revoked("s2").await.expect("read"));
    assert!(store.session_revoked("s3").await.expect("read"));
    store
        .revoke_session("s4", 4_000, 2_000)
        .await
        .expect("revoke");
    assert!(
        !store.session_revoked("s2").await.expect("read"),
        "kept its later expiry of 2000, then pruned"
    );
}

pub async fn sources_round_trip_through_create_get_and_list(store: Shared) {
    let a = source(&store, "src_a").await;
    let b = source(&store, "src_b").await;
    assert_eq!(a.name, "Source src_a");
    assert!(a.enabled);
    assert_eq!(a.write_key_hash, key_hash("src_a"));
    assert_eq!(
        store.get_source("src_a").await.expect("get"),
        Some(a.clone())
    );
    assert_eq!(store.get_source("src_missing").await.expect("get"), None);
    let listed = store.list_sources().await.expect("list");
    assert_eq!(listed, vec![a, b], "sources are listed in creation order");
}

pub async fn source_lookup_by_key_hash_follows_key_rotation(store: Shared) {
    let created = source(&store, "src_a").await;
    let found = store
        .get_source_by_key_hash(&key_hash("src_a"))
        .await
        .expect("lookup");
    assert_eq!(found, Some(created.clone()));

    let patch = SourcePatch {
        name: Some("Renamed".into()),
        enabled: Some(false),
        write_key: Some((key_hash("rotated"), "rota…".into())),
    };
    let updated = store
        .update_source("src_a", patch)
        .await
        .expect("update")
        .expect("exists");
    assert_eq!(updated.name, "Renamed");
    assert!(!updated.enabled);
    assert_eq!(updated.write_key_hint, "rota…");
    assert_eq!(updated.created_at, created.created_at);
    assert!(updated.updated_at >= created.updated_at);
    assert_eq!(
        store.get_source("src_a").await.expect("get"),
        Some(updated.clone())
    );

    let old = store
        .get_source_by_key_hash(&key_hash("src_a"))
        .await
        .expect("lookup old");
    assert_eq!(old, None, "the rotated-out key must stop matching");
    let new = store
        .get_source_by_key_hash(&key_hash("rotated"))
        .await
        .expect("lookup new");
    assert_eq!(new, Some(updated));
    let missing = store
        .update_source("src_missing", SourcePatch::default())
        .await
        .expect("update");
    assert_eq!(missing, None);
}

pub async fn duplicate_source_id_or_write_key_is_a_conflict(store: Shared) {
    source(&store, "src_a").await;
    let same_id = sluice_store::NewSource {
        write_key_hash: key_hash("other"),
        ..new_source("src_a")
    };
    let err = store
        .create_source(same_id)
        .await
        .expect_err("duplicate id");
    assert!(matches!(err, StoreError::Conflict(_)), "got {err:?}");

    let same_key = sluice_store::NewSource {
        write_key_hash: key_hash("src_a"),
        ..new_source("src_b")
    };
    let err = store
        .create_source(same_key)
        .await
        .expect_err("duplicate key");
    assert!(matches!(err, StoreError::Conflict(_)), "got {err:?}");

    source(&store, "src_c").await;
    let steal = SourcePatch {
        write_key: Some((key_hash("src_a"), "writ…".into())),
        ..SourcePatch::default()
    };
    let err = store
        .update_source("src_c", steal)
        .await
        .expect_err("rotate onto a used key");
    assert!(matches!(err, StoreError::Conflict(_)), "got {err:?}");
    let c = store
        .get_source("src_c")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        c.write_key_hash,
        key_hash("src_c"),
        "a failed update changes nothing"
    );
    assert_eq!(store.list_sources().await.expect("list").len(), 2);
}

pub async fn delete_source_removes_its_connections_and_usage_but_keeps_events(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    store
        .create_destination(new_destination("dst_1", &["src_a", "src_b"]))
        .await
        .expect("create destination");
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;

    assert!(store.delete_source("src_a").await.expect("delete"));
    assert_eq!(store.get_source("src_a").await.expect("get"), None);
    let dest = store
        .get_destination("dst_1")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(dest.source_ids, vec!["src_b".to_string()]);
    let usage = store
        .usage("src_a", "2000-01-01", "2100-01-01")
        .await
        .expect("usage");
    assert!(usage.is_empty(), "usage of a deleted source: {usage:?}");
    let events = store
        .recent_events("src_a", None, 10)
        .await
        .expect("events");
    assert_eq!(events.len(), 1, "events stay until retention removes them");
    assert!(!store.delete_source("src_a").await.expect("delete again"));
}

pub async fn destinations_round_trip_with_sorted_sources_and_settings(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    let created = store
        .create_destination(new_destination("dst_1", &["src_b", "src_a"]))
        .await
        .expect("create");
    assert_eq!(
        created.source_ids,
        vec!["src_a".to_string(), "src_b".to_string()]
    );
    assert_eq!(created.settings, settings("https://example.test/hook"));
    assert_eq!(created.kind, "Webhooks");
    assert_eq!(
        store.get_destination("dst_1").await.expect("get"),
        Some(created.clone())
    );
    assert_eq!(
        store.list_destinations().await.expect("list"),
        vec![created.clone()]
    );

    let patch = DestinationPatch {
        name: Some("Renamed".into()),
        enabled: Some(false),
        settings: Some(settings("https://other.test/in")),
        source_ids: Some(vec!["src_b".into()]),
    };
    let updated = store
        .update_destination("dst_1", patch)
        .await
        .expect("update")
        .expect("exists");
    assert_eq!(updated.name, "Renamed");
    assert!(!updated.enabled);
    assert_eq!(updated.settings.urls[0].url, "https://other.test/in");
    assert_eq!(updated.source_ids, vec!["src_b".to_string()]);
    assert_eq!(updated.created_at, created.created_at);
    assert_eq!(
        store.get_destination("dst_1").await.expect("get"),
        Some(updated)
    );
    let missing = store
        .update_destination("dst_missing", DestinationPatch::default())
        .await;
    assert_eq!(missing.expect("update"), None);
    assert_eq!(
        store.get_destination("dst_missing").await.expect("get"),
        None
    );
}

pub async fn destination_with_a_missing_source_is_not_found(store: Shared) {
    source(&store, "src_a").await;
    let err = store
        .create_destination(new_destination("dst_1", &["src_a", "src_missing"]))
        .await
        .expect_err("missing source");
    assert!(matches!(err, StoreError::NotFound(_)), "got {err:?}");
    assert_eq!(
        store.get_destination("dst_1").await.expect("get"),
        None,
        "nothing is created"
    );

    store
        .create_destination(new_destination("dst_2", &["src_a"]))
        .await
        .expect("create");
    let patch = DestinationPatch {
        name: Some("Renamed".into()),
        source_ids: Some(vec!["src_missing".into()]),
        ..DestinationPatch::default()
    };
    let err = store
        .update_destination("dst_2", patch)
        .await
        .expect_err("missing source");
    assert!(matches!(err, StoreError::NotFound(_)), "got {err:?}");
    let kept = store
        .get_destination("dst_2")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        kept.source_ids,
        vec!["src_a".to_string()],
        "a failed update changes nothing"
    );
    assert_eq!(kept.name, "Destination dst_2");
}

pub async fn duplicate_destination_id_is_a_conflict(store: Shared) {
    store
        .create_destination(new_destination("dst_1", &[]))
        .await
        .expect("create");
    let err = store
        .create_destination(new_destination("dst_1", &[]))
        .await
        .expect_err("duplicate id");
    assert!(matches!(err, StoreError::Conflict(_)), "got {err:?}");
    assert_eq!(store.list_destinations().await.expect("list").len(), 1);
}

pub async fn delete_destination_discards_its_pending_deliveries(store: Shared) {
    source(&store, "src_a").await;
    store
        .create_destination(new_destination("dst_1", &["src_a"]))
        .await
        .expect("create");
    store
        .create_destination(new_destination("dst_2", &["src_a"]))
        .await
        .expect("create");
    append(
        &store,
        "src_a",
        at(0),
        vec![event("m1", &["dst_1", "dst_2"])],
    )
    .await;

    assert!(store.delete_destination("dst_1").await.expect("delete"));
    assert_eq!(store.get_destination("dst_1").await.expect("get"), None);
    let gone = deliveries_to(&store, "dst_1").await;
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].state, DeliveryState::Discarded);
    let kept = deliveries_to(&store, "dst_2").await;
    assert_eq!(kept[0].state, DeliveryState::Pending);

    let due = store
        .claim_due(at(1), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    let claimed: Vec<_> = due.iter().map(|d| d.destination_id.as_str()).collect();
    assert_eq!(claimed, vec!["dst_2"], "discarded work is never handed out");
    assert!(
        !store
            .delete_destination("dst_1")
            .await
            .expect("delete again")
    );
}
