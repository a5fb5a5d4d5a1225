//! [`SchemaStore`](sluice_store::SchemaStore): rules and filters documents, blocked
//! and filtered outcomes of `append`, schema flushes under the cap.

use chrono::Duration;

use super::support::{Shared, append, at, deliveries_to, event, new_destination, source};
use sluice_store::{
    Blocked, DeliveryState, NewEvent, SchemaEntryDelta, SchemaFlush, SchemaQuery, SchemaSort,
};

fn delta(
    kind: &str,
    name: &str,
    property: &str,
    types: i64,
    count: u64,
    at_ms: i64,
) -> SchemaEntryDelta {
    SchemaEntryDelta {
        kind: kind.into(),
        name: name.into(),
        property: property.into(),
        types,
        count,
        first_seen_ms: at_ms,
        last_seen_ms: at_ms,
    }
}

fn flush(entries: Vec<SchemaEntryDelta>, overflow: u64, cap: u64) -> SchemaFlush {
    SchemaFlush {
        source_id: "src_a".into(),
        entries,
        overflow,
        max_entries: cap,
        now: at(0),
    }
}

fn query(sort: SchemaSort, descending: bool) -> SchemaQuery {
    SchemaQuery {
        sort,
        descending,
        limit: 100,
        now: at(0),
        ..SchemaQuery::default()
    }
}

pub async fn rules_and_filters_documents_are_replaced_and_listed(store: Shared) {
    store
        .put_source_rules("src_a", r#"{"a":1}"#)
        .await
        .expect("put");
    store
        .put_source_rules("src_a", r#"{"a":2}"#)
        .await
        .expect("replace");
    store
        .put_destination_filters("dst_1", r#"{"filters":[]}"#)
        .await
        .expect("put");
    let rules = store.list_source_rules().await.expect("list");
    assert_eq!(rules, vec![("src_a".to_owned(), r#"{"a":2}"#.to_owned())]);
    let filters = store.list_destination_filters().await.expect("list");
    assert_eq!(
        filters,
        vec![("dst_1".to_owned(), r#"{"filters":[]}"#.to_owned())]
    );
}

pub async fn blocked_and_filtered_events_are_stored_marked_and_counted(store: Shared) {
    let blocked = NewEvent {
        blocked: Some(Blocked {
            rule: "blocked_events".into(),
            event: "Ping".into(),
        }),
        ..event("m-blocked", &[])
    };
    let filtered = NewEvent {
        filtered: vec![("dst_2".into(), "no pings".into())],
        bodies: vec![("dst_1".into(), r#"{"type":"track","slim":true}"#.into())],
        ..event("m-sent", &["dst_1"])
    };
    append(
        &store,
        "src_a",
        at(0),
        vec![
            blocked.clone(),
            filtered,
            NewEvent {
                message_id: "m-blocked-2".into(),
                ..blocked
            },
        ],
    )
    .await;

    let events = store
        .recent_events("src_a", None, 10)
        .await
        .expect("events");
    assert_eq!(events.len(), 3, "blocked calls are stored");
    assert_eq!(events[0].blocked.as_deref(), Some("blocked_events"));
    assert_eq!(events[1].blocked, None);

    let usage = store
        .usage("src_a", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    assert_eq!(usage[0].events, 3, "blocked calls count as received");
    let blocked = store
        .blocked_usage("src_a", "2024-03-01", "2024-03-01")
        .await
        .expect("blocked usage");
    assert_eq!(blocked.len(), 1);
    assert_eq!((blocked[0].event.as_str(), blocked[0].count), ("Ping", 2));

    let dropped = deliveries_to(&store, "dst_2").await;
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].state, DeliveryState::Filtered);
    assert_eq!(dropped[0].last_error.as_deref(), Some("no pings"));
    assert_eq!(dropped[0].next_attempt_at, None);

    let due = store
        .claim_due(at(1), 10, sluice_store::DEFAULT_LEASE)
        .await
        .expect("claim");
    assert_eq!(due.len(), 1, "only the pending delivery is claimed");
    assert_eq!(due[0].destination_id, "dst_1");
    assert_eq!(
        due[0].event_body, r#"{"type":"track","slim":true}"#,
        "per-destination body"
    );
}

pub async fn schema_flushes_merge_types_times_and_volumes(store: Shared) {
    let t = at(0).timestamp_millis();
    let earlier = (at(0) - Duration::days(3)).timestamp_millis();
    store
        .flush_schema(flush(
            vec![
                delta("track", "Buy", "", 0, 5, earlier),
                delta("property", "Buy", "total", 4, 5, earlier),
            ],
            0,
            100,
        ))
        .await
        .expect("flush 1");
    store
        .flush_schema(flush(
            vec![
                delta("track", "Buy", "", 0, 2, t),
                delta("property", "Buy", "total", 8, 2, t),
                delta("page", "Home", "", 0, 9, t),
            ],
            0,
            100,
        ))
        .await
        .expect("flush 2");
    let page = store
        .schema_entries("src_a", &query(SchemaSort::Name, false))
        .await
        .expect("list");
    assert_eq!(page.total, 3);
    let buy = page
        .entries
        .iter()
        .find(|e| e.kind == "track")
        .expect("Buy");
    assert_eq!((buy.volume_24h, buy.volume_7d, buy.volume_30d), (2, 7, 7));
    assert_eq!(buy.first_seen.timestamp_millis(), earlier);
    assert_eq!(buy.last_seen.timestamp_millis(), t);
    let total = page
        .entries
        .iter()
        .find(|e| e.kind == "property")
        .expect("total");
    assert_eq!(total.types, 12, "number and string");

    let by_volume = store
        .schema_entries("src_a", &query(SchemaSort::Volume24h, true))
        .await
        .expect("sorted");
    assert_eq!(by_volume.entries[0].name, "Home");
    let paged = SchemaQuery {
        limit: 1,
        offset: 1,
        kind: Some("property".into()),
        ..query(SchemaSort::Name, false)
    };
    let second = store.schema_entries("src_a", &paged).await.expect("page");
    assert_eq!((second.total, second.entries.len()), (1, 0));
}

pub async fn schema_cap_keeps_known_entries_and_counts_overflow(store: Shared) {
    let t = at(0).timestamp_millis();
    let first: Vec<_> = (0..3)
        .map(|i| delta("track", &format!("E{i}"), "", 0, 1, t))
        .collect();
    store
        .flush_schema(flush(first, 0, 3))
        .await
        .expect("flush 1");
    let second = vec![
        delta("track", "E0", "", 0, 4, t),
        delta("track", "New", "", 0, 6, t),
    ];
    store
        .flush_schema(flush(second, 2, 3))
        .await
        .expect("flush 2");
    let page = store
        .schema_entries("src_a", &query(SchemaSort::Name, false))
        .await
        .expect("list");
    assert_eq!(page.total, 3, "the cap holds");
    assert!(page.entries.iter().all(|e| e.name != "New"));
    assert_eq!(page.overflow, 8, "2 reported by the aggregate + 6 refused");
    let e0 = page.entries.iter().find(|e| e.name == "E0").expect("E0");
    assert_eq!(e0.volume_24h, 5, "known entries keep counting at the cap");
}

pub async fn deleting_a_source_or_destination_removes_its_rules_filters_and_schema(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    for dst in ["dst_1", "dst_2"] {
        store
            .create_destination(new_destination(dst, &["src_a"]))
            .await
            .expect("destination");
        store
            .put_destination_filters(dst, r#"{"filters":[]}"#)
            .await
            .expect("filters");
    }
    let t = at(0).timestamp_millis();
    for src in ["src_a", "src_b"] {
        store
            .put_source_rules(src, r#"{"blocked_events":["x"]}"#)
            .await
            .expect("rules");
        let f = SchemaFlush {
            source_id: src.into(),
            ..flush(vec![delta("track", "E", "", 0, 1, t)], 2, 10)
        };
        store.flush_schema(f).await.expect("flush");
    }

    assert!(store.delete_source("src_a").await.expect("delete source"));
    assert!(store.delete_destination("dst_1").await.expect("delete dst"));

    let rules = store.list_source_rules().await.expect("rules");
    assert_eq!(
        rules.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["src_b"]
    );
    let filters = store.list_destination_filters().await.expect("filters");
    assert_eq!(
        filters.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
        ["dst_2"]
    );
    let q = query(SchemaSort::Name, false);
    let gone = store.schema_entries("src_a", &q).await.expect("schema a");
    assert_eq!((gone.total, gone.overflow), (0, 0));
    let kept = store.schema_entries("src_b", &q).await.expect("schema b");
    assert_eq!((kept.total, kept.overflow), (1, 2));
}
