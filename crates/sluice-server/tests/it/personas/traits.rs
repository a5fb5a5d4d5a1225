//! Computed traits: each kind, filters, only-changes, backfills and windows.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use sluice_testkit::Receiver;

use super::{bodies, create, setup, track, wait_bodies};
use crate::support::eventually;

#[tokio::test]
async fn counter_trait_sends_each_change_once_as_a_signed_identify() {
    let (s, _dir, key, dest, rx) = setup().await;
    let ct = create(
        &s,
        "/computed-traits",
        json!({"name": "Order Count", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Order Completed",
                              "where": [{"property": "total", "op": "gt", "value": 5}]}}),
    )
    .await;
    assert_eq!(ct["key"], json!("order_count"));
    track(&s, &key, "u1", "Order Completed", json!({"total": 10})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["type"], json!("identify"));
    assert_eq!(got[0]["version"], json!(1));
    assert_eq!(got[0]["userId"], json!("u1"));
    assert_eq!(got[0]["traits"], json!({"order_count": 1}));
    assert_eq!(
        got[0]["context"]["personas"],
        json!({"computation_class": "trait", "computation_key": "order_count",
               "computation_id": ct["id"], "namespace": "spa_sluice", "space_id": "spa_sluice"})
    );
    // Filtered out and unrelated events change nothing: nothing is sent.
    track(&s, &key, "u1", "Order Completed", json!({"total": 1})).await;
    track(&s, &key, "u1", "Viewed", json!({})).await;
    track(&s, &key, "u1", "Order Completed", json!({"total": 7})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"order_count": 2}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 2, "only changes are sent");

    let id = ct["id"].as_str().unwrap();
    let (_, status) = s
        .admin(Method::GET, &format!("/computed-traits/{id}"), None)
        .await;
    assert_eq!(status["status"]["people_with_value"], json!(1));
    assert_eq!(status["status"]["messages_sent"], json!(2));
    let (code, profile) = s.admin(Method::GET, "/profiles/u1", None).await;
    assert_eq!(code, 200, "{profile}");
    assert_eq!(profile["computed_traits"]["order_count"], json!(2));
    assert_eq!(profile["events"].as_array().map(Vec::len), Some(4));
    s.stop().await;
}

#[tokio::test]
async fn creating_a_trait_backfills_people_from_stored_events_and_a_new_destination_too() {
    let (s, _dir, key, dest, rx) = setup().await;
    track(&s, &key, "u1", "Bought", json!({"price": 3, "sku": "a"})).await;
    track(&s, &key, "u1", "Bought", json!({"price": 5, "sku": "b"})).await;
    track(&s, &key, "u2", "Bought", json!({"price": 4, "sku": "b"})).await;
    // Preview: counts without saving.
    let (code, p) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Spend", "preview": true,
                        "definition": {"kind": "sum", "event": "Bought", "property": "price"}})),
        )
        .await;
    assert_eq!(code, 200, "{p}");
    eventually(10, || async {
        let (_, p) = s
            .admin(
                Method::POST,
                "/computed-traits",
                Some(json!({"name": "Spend", "preview": true,
                            "definition": {"kind": "sum", "event": "Bought", "property": "price"}})),
            )
            .await;
        (p["preview"]["count"] == json!(2)).then_some(())
    })
    .await;
    let ct = create(
        &s,
        "/computed-traits",
        json!({"name": "Spend", "destination_ids": [dest],
               "definition": {"kind": "sum", "event": "Bought", "property": "price"}}),
    )
    .await;
    let got = wait_bodies(&rx, 2).await;
    let mut seen: Vec<(Value, Value)> = got
        .iter()
        .map(|b| (b["userId"].clone(), b["traits"]["spend"].clone()))
        .collect();
    seen.sort_by_key(|(u, _)| u.to_string());
    assert_eq!(seen, vec![(json!("u1"), json!(8)), (json!("u2"), json!(4))]);

    // A second destination connected later gets its own backfill.
    let rx2 = Receiver::start().await;
    let (quiet2, _) = s.source("quiet2").await;
    let dest2 = s.webhook(&quiet2, json!([{"url": rx2.url()}]), None).await;
    let id = ct["id"].as_str().unwrap();
    let (code, body) = s
        .admin(
            Method::POST,
            &format!("/computed-traits/{id}/destinations/{dest2}"),
            None,
        )
        .await;
    assert_eq!(code, 200, "{body}");
    rx2.wait_for(2, Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        rx.requests().len(),
        2,
        "the first destination is not sent again"
    );
    s.stop().await;
}

#[tokio::test]
async fn every_trait_kind_arrives_with_its_value() {
    let (s, _dir, key, dest, rx) = setup().await;
    let kinds = [
        (
            "c_counter",
            json!({"kind": "counter", "event": "Buy"}),
            json!(3),
        ),
        (
            "c_sum",
            json!({"kind": "sum", "event": "Buy", "property": "price"}),
            json!(9),
        ),
        (
            "c_avg",
            json!({"kind": "avg", "event": "Buy", "property": "price"}),
            json!(3),
        ),
        (
            "c_min",
            json!({"kind": "min", "event": "Buy", "property": "price"}),
            json!(1),
        ),
        (
            "c_max",
            json!({"kind": "max", "event": "Buy", "property": "price"}),
            json!(6),
        ),
        (
            "c_most",
            json!({"kind": "most_frequent", "event": "Buy", "property": "sku"}),
            json!("a"),
        ),
        (
            "c_first",
            json!({"kind": "first", "event": "Buy", "property": "sku"}),
            json!("a"),
        ),
        (
            "c_last",
            json!({"kind": "last", "event": "Buy", "property": "sku"}),
            json!("b"),
        ),
        (
            "c_list",
            json!({"kind": "unique_list", "event": "Buy", "property": "sku"}),
            json!(["a", "b"]),
        ),
        (
            "c_count",
            json!({"kind": "unique_count", "event": "Buy", "property": "sku"}),
            json!(2),
        ),
        (
            "c_eq",
            json!({"kind": "counter", "event": "Buy", "where": [{"property": "sku", "op": "equals", "value": "a"}]}),
            json!(2),
        ),
        (
            "c_ne",
            json!({"kind": "counter", "event": "Buy", "where": [{"property": "sku", "op": "not_equals", "value": "a"}]}),
            json!(1),
        ),
        (
            "c_has",
            json!({"kind": "counter", "event": "Buy", "where": [{"property": "note", "op": "exists"}]}),
            json!(1),
        ),
        (
            "c_in",
            json!({"kind": "counter", "event": "Buy", "where": [{"property": "note", "op": "contains", "value": "gift"}]}),
            json!(1),
        ),
        (
            "c_lt",
            json!({"kind": "counter", "event": "Buy", "where": [{"property": "price", "op": "lt", "value": 3}]}),
            json!(2),
        ),
    ];
    for (k, def, _) in &kinds {
        create(
            &s,
            "/computed-traits",
            json!({"name": k, "destination_ids": [dest], "definition": def}),
        )
        .await;
    }
    // One batch: one engine step, so each trait sends its final value once.
    let batch = json!({"batch": [
        {"type": "track", "userId": "u1", "event": "Buy", "properties": {"price": 1, "sku": "a"}},
        {"type": "track", "userId": "u1", "event": "Buy", "properties": {"price": 2, "sku": "a", "note": "a gift"}},
        {"type": "track", "userId": "u1", "event": "Buy", "properties": {"price": 6, "sku": "b"}},
    ]});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch.to_string())
            .await
            .0,
        200
    );
    let got = wait_bodies(&rx, kinds.len()).await;
    for (k, _, expected) in &kinds {
        let sent: Vec<&Value> = got.iter().filter_map(|b| b["traits"].get(*k)).collect();
        assert_eq!(sent, vec![expected], "{k}");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_windowed_trait_changes_when_its_window_slides_with_no_new_event() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/computed-traits",
        json!({"name": "Recent Spend", "destination_ids": [dest],
               "definition": {"kind": "sum", "event": "Buy", "property": "price",
                              "window": {"seconds": 2}}}),
    )
    .await;
    track(&s, &key, "u1", "Buy", json!({"price": 5})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"recent_spend": 5}));
    // Two seconds later, with no event, the value is gone: sent as null.
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"recent_spend": null}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 2);
    s.stop().await;
}

#[tokio::test]
async fn a_call_sent_twice_counts_once_live_and_in_a_backfill() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/computed-traits",
        json!({"name": "Orders", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Bought"}}),
    )
    .await;
    let call = |id: &str| json!({"userId": "u1", "event": "Bought", "messageId": id});
    // A client's retry after a lost answer, and a batch carrying one call twice.
    for id in ["dup-1", "dup-1"] {
        let (status, _) = s
            .collect("/v1/track", Some(&key), call(id).to_string())
            .await;
        assert_eq!(status, 200);
    }
    let batch = json!({"batch": [
        {"type": "track", "userId": "u1", "event": "Bought", "messageId": "dup-2"},
        {"type": "track", "userId": "u1", "event": "Bought", "messageId": "dup-2"},
    ]});
    let (status, _) = s.collect("/v1/batch", Some(&key), batch.to_string()).await;
    assert_eq!(status, 200);
    let sent = || -> Vec<Value> {
        bodies(&rx)
            .iter()
            .map(|b| b["traits"]["orders"].clone())
            .collect()
    };
    eventually(15, || async {
        (sent().last() == Some(&json!(2))).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let values = sent();
    assert_eq!(values.last(), Some(&json!(2)), "{values:?}");
    assert!(
        values.iter().all(|v| v.as_i64().is_some_and(|n| n <= 2)),
        "duplicates counted: {values:?}"
    );

    // A trait created afterwards computes from the stored rows: once each.
    let later = create(
        &s,
        "/computed-traits",
        json!({"name": "Orders Again", "definition": {"kind": "counter", "event": "Bought"}}),
    )
    .await;
    let id = later["id"].as_str().expect("id").to_owned();
    let profile: Value = eventually(15, || async {
        let (_, p) = s.admin(Method::GET, "/profiles/u1", None).await;
        p["computed_traits"]
            .get("orders_again")
            .is_some()
            .then_some(p)
    })
    .await;
    assert_eq!(profile["computed_traits"]["orders_again"], json!(2), "{id}");
}
