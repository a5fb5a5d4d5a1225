//! Computed traits and audiences end to end: calls in through the
//! collection API, identify messages out at a real receiver, signed.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

const SECRET: &str = "whsec-personas-0123456789";

/// A server with a fast profile engine, a source to send from, and a
/// Webhooks destination (on an otherwise unused source) for personas.
async fn setup() -> (TestServer, tempfile::TempDir, String, String, Receiver) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.personas.poll_interval_ms = 20;
    let s = TestServer::start_with(config).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = s
        .webhook(&quiet, json!([{"url": rx.url()}]), Some(SECRET))
        .await;
    (s, dir, key, dest, rx)
}

async fn track(s: &TestServer, key: &str, user: &str, event: &str, props: Value) {
    let call = json!({"userId": user, "event": event, "properties": props});
    assert_eq!(
        s.collect("/v1/track", Some(key), call.to_string()).await.0,
        200
    );
}

/// Bodies received so far, parsed, after checking each signature.
fn bodies(rx: &Receiver) -> Vec<Value> {
    rx.requests()
        .iter()
        .map(|r| {
            assert_eq!(
                r.header("x-signature"),
                Some(sluice_signing::sign(SECRET.as_bytes(), &r.body).as_str())
            );
            serde_json::from_slice(&r.body).expect("json body")
        })
        .collect()
}

async fn wait_bodies(rx: &Receiver, n: usize) -> Vec<Value> {
    rx.wait_for(n, Duration::from_secs(15)).await;
    bodies(rx)
}

async fn create(s: &TestServer, path: &str, body: Value) -> Value {
    let (status, body) = s.admin(Method::POST, path, Some(body)).await;
    assert_eq!(status, 201, "{body}");
    body
}

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
               "computation_id": ct["id"]})
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
async fn audience_member_leaves_when_the_window_passes_with_no_new_event() {
    let (s, _dir, key, dest, rx) = setup().await;
    let aud = create(
        &s,
        "/audiences",
        json!({"name": "Recent Buyers", "destination_ids": [dest],
               "definition": {"condition": {"performed": {"event": "Bought", "window": {"seconds": 2}}}}}),
    )
    .await;
    assert_eq!(aud["key"], json!("recent_buyers"));
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"recent_buyers": true}));
    assert_eq!(
        got[0]["context"]["personas"]["computation_class"],
        json!("audience")
    );
    let id = aud["id"].as_str().unwrap();
    let (_, members) = s
        .admin(Method::GET, &format!("/audiences/{id}/members"), None)
        .await;
    assert_eq!(members["data"][0]["user_id"], json!("u1"));
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"recent_buyers": false}));
    let (_, members) = s
        .admin(Method::GET, &format!("/audiences/{id}/members"), None)
        .await;
    assert_eq!(members["data"], json!([]));
    s.stop().await;
}

#[tokio::test]
async fn nested_not_and_audience_of_audience_follow_events_and_cycles_are_refused() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/audiences",
        json!({"name": "Buyers", "definition": {"condition": {"performed": {"event": "Bought"}}}}),
    )
    .await;
    let happy = create(
        &s,
        "/audiences",
        json!({"name": "Happy Buyers", "destination_ids": [dest],
               "definition": {"condition": {"and": [{"audience": "buyers"},
                                                    {"not": {"performed": {"event": "Refund"}}}]}}}),
    )
    .await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"happy_buyers": true}));
    track(&s, &key, "u1", "Refund", json!({})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"happy_buyers": false}));

    // buyers -> happy_buyers -> buyers would be a cycle.
    let (code, body) = s
        .admin(
            Method::POST,
            "/audiences",
            Some(json!({"name": "Loop", "key": "loop",
                        "definition": {"condition": {"audience": "loop"}}})),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("loop -> loop"),
        "{body}"
    );
    let id = happy["id"].as_str().unwrap();
    let (code, body) = s
        .admin(Method::GET, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Bad", "definition": {"kind": "sum", "event": "E"}})),
        )
        .await;
    assert_eq!(code, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("definition.property"),
        "{body}"
    );
    s.stop().await;
}

#[tokio::test]
async fn alias_and_shared_ids_merge_identities_into_one_profile() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/computed-traits",
        json!({"name": "Views", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Viewed"}}),
    )
    .await;
    // An anonymous visitor, then the same visitor identified.
    let call = json!({"anonymousId": "anon-1", "event": "Viewed"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["anonymousId"], json!("anon-1"));
    assert_eq!(got[0]["traits"], json!({"views": 1}));
    let call = json!({"anonymousId": "anon-1", "userId": "u9", "traits": {"plan": "pro"}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), call.to_string())
            .await
            .0,
        200
    );
    // An old id aliased into u9 brings its history along.
    let call = json!({"userId": "old-9", "event": "Viewed"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    wait_bodies(&rx, 2).await;
    let call = json!({"previousId": "old-9", "userId": "u9"});
    assert_eq!(
        s.collect("/v1/alias", Some(&key), call.to_string()).await.0,
        200
    );
    let got = wait_bodies(&rx, 3).await;
    assert_eq!(got[2]["userId"], json!("u9"));
    assert_eq!(got[2]["traits"], json!({"views": 2}));
    let (_, profile) = s.admin(Method::GET, "/profiles/anon-1", None).await;
    assert_eq!(profile["traits"]["plan"], json!("pro"));
    assert_eq!(profile["anonymous_ids"], json!(["anon-1"]));
    assert!(
        profile["user_ids"]
            .as_array()
            .unwrap()
            .contains(&json!("old-9"))
    );
    s.stop().await;
}

#[tokio::test]
async fn a_restart_during_a_backfill_neither_misses_nor_repeats_anyone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || {
        let mut c = test_config(dir.path());
        c.personas.poll_interval_ms = 20;
        c
    };
    let s = TestServer::start_with(config()).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = s
        .webhook(&quiet, json!([{"url": rx.url()}]), Some(SECRET))
        .await;
    let batch: Vec<Value> = (0..1500)
        .map(|i| json!({"type": "track", "userId": format!("u{i:04}"), "event": "Seen"}))
        .collect();
    let body = json!({"batch": batch}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    // Wait until every profile exists, then create the trait and stop the
    // server while its backfill is under way (pages of 500).
    eventually(30, || async {
        let (code, _) = s.admin(Method::GET, "/profiles/u1499", None).await;
        (code == 200).then_some(())
    })
    .await;
    create(
        &s,
        "/computed-traits",
        json!({"name": "Seen", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Seen"}}),
    )
    .await;
    eventually(30, || async { (!rx.requests().is_empty()).then_some(()) }).await;
    s.stop().await;
    let s = TestServer::start_with(config()).await;
    // The outbox holds exactly one message per person: the job resumed at
    // its committed page. (Delivery itself is at-least-once: work leased by
    // the stopped node is sent after its lease, which this test skips.)
    let messages = eventually(60, || async {
        let ids = outbox(&s, &dest).await;
        (ids.len() >= 1500).then_some(ids)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let total = outbox(&s, &dest).await.len();
    let mut unique = messages.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((unique.len(), total), (1500, 1500), "everyone once");
    let mut users: Vec<String> = bodies(&rx)
        .iter()
        .map(|b| b["userId"].as_str().unwrap_or_default().to_owned())
        .collect();
    users.sort();
    users.dedup();
    assert!(!users.is_empty());
    s.stop().await;
}

/// Message ids of every delivery to `dest`.
async fn outbox(s: &TestServer, dest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut before = String::new();
    loop {
        let (code, page) = s
            .admin(
                Method::GET,
                &format!("/destinations/{dest}/deliveries?limit=500{before}"),
                None,
            )
            .await;
        assert_eq!(code, 200, "{page}");
        for d in page["data"].as_array().into_iter().flatten() {
            out.push(d["message_id"].as_str().unwrap_or_default().to_owned());
        }
        match page["next_before"].as_i64() {
            Some(n) => before = format!("&before={n}"),
            None => return out,
        }
    }
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
async fn an_audience_first_syncs_its_members_then_sends_only_changes_and_edits() {
    let (s, _dir, key, dest, rx) = setup().await;
    for u in ["u1", "u2", "u3"] {
        let call = json!({"userId": u, "traits": {"plan": if u == "u3" { "free" } else { "pro" }}});
        assert_eq!(
            s.collect("/v1/identify", Some(&key), call.to_string())
                .await
                .0,
            200
        );
    }
    eventually(10, || async {
        let (code, _) = s.admin(Method::GET, "/profiles/u3", None).await;
        (code == 200).then_some(())
    })
    .await;
    let aud = create(
        &s,
        "/audiences",
        json!({"name": "Pro Users", "destination_ids": [dest],
               "definition": {"condition": {"trait": {"key": "plan", "op": "equals", "value": "pro"}}}}),
    )
    .await;
    let got = wait_bodies(&rx, 2).await;
    let mut first: Vec<&str> = got.iter().filter_map(|b| b["userId"].as_str()).collect();
    first.sort_unstable();
    assert_eq!(first, vec!["u1", "u2"], "first sync: every member once");
    assert!(
        got.iter()
            .all(|b| b["traits"] == json!({"pro_users": true}))
    );
    // u3 upgrades: one message; u1 sends an unrelated identify: nothing.
    let call = json!({"userId": "u3", "traits": {"plan": "pro"}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), call.to_string())
            .await
            .0,
        200
    );
    let call = json!({"userId": "u1", "traits": {"age": 40}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), call.to_string())
            .await
            .0,
        200
    );
    let got = wait_bodies(&rx, 3).await;
    assert_eq!(got[2]["userId"], json!("u3"));
    // An edit sends only the differences: u1 (age 40) stays, u2 and u3 leave.
    let id = aud["id"].as_str().unwrap();
    let (code, body) = s
        .admin(
            Method::PATCH,
            &format!("/audiences/{id}"),
            Some(json!({"definition": {"condition": {"and": [
                {"trait": {"key": "plan", "op": "equals", "value": "pro"}},
                {"trait": {"key": "age", "op": "gt", "value": 30}}]}}})),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let got = wait_bodies(&rx, 5).await;
    let mut left: Vec<(&str, &Value)> = got[3..]
        .iter()
        .map(|b| {
            (
                b["userId"].as_str().unwrap_or(""),
                &b["traits"]["pro_users"],
            )
        })
        .collect();
    left.sort_by_key(|(u, _)| *u);
    assert_eq!(left, vec![("u2", &json!(false)), ("u3", &json!(false))]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 5);
    let (_, a) = s
        .admin(Method::GET, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(a["status"]["size"], json!(1));
    assert_eq!(a["status"]["messages_sent_by_destination"][&dest], json!(5));
    // Deleting sends nothing, and the key stays taken.
    let (code, _) = s
        .admin(Method::DELETE, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(code, 204);
    let (code, _) = s
        .admin(
            Method::POST,
            "/audiences",
            Some(json!({"name": "Pro Users", "definition": {"condition": {"performed": {"event": "X"}}}})),
        )
        .await;
    assert_eq!(code, 409);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.requests().len(), 5);
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
