//! Source rules: blocked track events, blocked traits, the tracking plan,
//! and the 400s for rules that cannot be used.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually};

async fn deliveries_of(s: &TestServer, message_id: &str) -> Vec<Value> {
    let (_, body) = s
        .admin(
            Method::GET,
            &format!("/deliveries?message_id={message_id}"),
            None,
        )
        .await;
    body["data"].as_array().cloned().unwrap_or_default()
}

fn track(event: &str, message_id: &str) -> String {
    json!({"userId": "u", "event": event, "messageId": message_id}).to_string()
}

/// Waits until `message_id` has arrived at `rx`, then says whether any of
/// `absent` arrived too (they were sent before it).
async fn arrived_before(rx: &Receiver, message_id: &str, absent: &[&str]) -> bool {
    eventually(10, || async {
        let ids: Vec<String> = rx
            .requests()
            .iter()
            .filter_map(|r| r.header("x-sluice-message-id").map(str::to_owned))
            .collect();
        ids.iter().any(|m| m == message_id).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    rx.requests().iter().any(|r| {
        r.header("x-sluice-message-id")
            .is_some_and(|m| absent.contains(&m))
    })
}

#[tokio::test]
async fn blocked_track_event_is_accepted_counted_shown_and_never_delivered() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let (status, body) = s
        .put_rules(&src, json!({"blocked_events": ["Debug Ping"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["blocked_events"], json!(["Debug Ping"]));

    let (status, body) = s
        .collect("/v1/track", Some(&key), track("Debug Ping", "m-blocked"))
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"success": true})),
        "clients must not retry"
    );
    assert_eq!(
        s.collect("/v1/track", Some(&key), track("Order Completed", "m-ok"))
            .await
            .0,
        200
    );
    assert!(
        !arrived_before(&rx, "m-ok", &["m-blocked"]).await,
        "blocked call was delivered"
    );
    assert!(deliveries_of(&s, "m-blocked").await.is_empty());

    let events = s.events(&src).await;
    let blocked = events
        .iter()
        .find(|e| e["message_id"] == json!("m-blocked"))
        .expect("the debugger shows the blocked call");
    assert_eq!(blocked["blocked"], json!(true));
    assert_eq!(blocked["blocked_by"], json!("blocked_events"));
    let ok = events
        .iter()
        .find(|e| e["message_id"] == json!("m-ok"))
        .unwrap();
    assert_eq!(ok["blocked"], json!(false));

    let (_, usage) = s
        .admin(Method::GET, &format!("/sources/{src}/usage"), None)
        .await;
    let today = &usage["data"][0];
    assert_eq!(today["events"], json!(2), "blocked calls count as received");
    assert_eq!(today["api_calls"], json!(2));
    assert_eq!(today["blocked"], json!(1));
    assert_eq!(today["blocked_events"], json!({"Debug Ping": 1}));
    s.stop().await;
}

#[tokio::test]
async fn blocked_traits_are_removed_from_stored_and_delivered_calls() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let rules =
        json!({"blocked_identify_traits": ["ssn"], "blocked_group_traits": ["internal_id"]});
    assert_eq!(s.put_rules(&src, rules).await.0, 200);

    let identify = json!({"userId": "u", "messageId": "m-id",
                          "traits": {"name": "Ada", "ssn": "123-45", "age": 36}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), identify.to_string())
            .await
            .0,
        200
    );
    let group = json!({"userId": "u", "groupId": "g", "messageId": "m-group",
                       "traits": {"internal_id": 7, "plan": "pro"}});
    assert_eq!(
        s.collect("/v1/group", Some(&key), group.to_string())
            .await
            .0,
        200
    );

    let got = rx.wait_for(2, Duration::from_secs(10)).await;
    let by_id = |id: &str| -> Value {
        let r = got
            .iter()
            .find(|r| r.header("x-sluice-message-id") == Some(id))
            .expect("delivered");
        serde_json::from_slice(&r.body).unwrap()
    };
    assert_eq!(by_id("m-id")["traits"], json!({"name": "Ada", "age": 36}));
    assert_eq!(by_id("m-group")["traits"], json!({"plan": "pro"}));
    let stored = s.events(&src).await;
    let id_event = stored
        .iter()
        .find(|e| e["message_id"] == json!("m-id"))
        .unwrap();
    assert_eq!(
        id_event["event"]["traits"],
        json!({"name": "Ada", "age": 36})
    );
    assert_eq!(
        id_event["blocked"],
        json!(false),
        "trait blocking does not block the call"
    );
    s.stop().await;
}

#[tokio::test]
async fn tracking_plan_lets_only_planned_events_through() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let plan = json!({"tracking_plan": {"enabled": true, "events": ["Signed Up"]}});
    assert_eq!(s.put_rules(&src, plan).await.0, 200);

    assert_eq!(
        s.collect("/v1/track", Some(&key), track("Clicked", "m-unplanned"))
            .await
            .0,
        200
    );
    let page = json!({"userId": "u", "name": "Home", "messageId": "m-page"});
    assert_eq!(
        s.collect("/v1/page", Some(&key), page.to_string()).await.0,
        200
    );
    assert_eq!(
        s.collect("/v1/track", Some(&key), track("Signed Up", "m-planned"))
            .await
            .0,
        200
    );
    assert!(!arrived_before(&rx, "m-planned", &["m-unplanned"]).await);
    assert!(
        rx.requests()
            .iter()
            .any(|r| r.header("x-sluice-message-id") == Some("m-page")),
        "the plan covers track events only"
    );
    let events = s.events(&src).await;
    let unplanned = events
        .iter()
        .find(|e| e["message_id"] == json!("m-unplanned"))
        .unwrap();
    assert_eq!(unplanned["blocked_by"], json!("tracking_plan"));

    // Turning the plan off lets the event through again, at once.
    let off = json!({"tracking_plan": {"enabled": false, "events": ["Signed Up"]}});
    assert_eq!(s.put_rules(&src, off).await.0, 200);
    assert_eq!(
        s.collect("/v1/track", Some(&key), track("Clicked", "m-after"))
            .await
            .0,
        200
    );
    rx.wait_for(3, Duration::from_secs(10)).await;
    let (_, rules) = s
        .admin(Method::GET, &format!("/sources/{src}/rules"), None)
        .await;
    assert_eq!(rules["tracking_plan"]["enabled"], json!(false));
    s.stop().await;
}

#[tokio::test]
async fn unusable_rules_are_a_400_naming_the_field() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let cases = [
        (json!({"blocked_events": "Debug"}), "blocked_events"),
        (json!({"blocked_events": ["ok", 1]}), "blocked_events[1]"),
        (
            json!({"tracking_plan": {"enabled": "yes"}}),
            "tracking_plan.enabled",
        ),
        (json!({"block": []}), "block"),
    ];
    for (rules, field) in cases {
        let (status, body) = s.put_rules(&src, rules.clone()).await;
        assert_eq!(status, 400, "{rules}");
        assert_eq!(body["code"], json!("invalid_field"));
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{field}:")),
            "{body}"
        );
    }
    let (status, _) = s.put_rules("src_missing", json!({})).await;
    assert_eq!(status, 404);
    s.stop().await;
}

#[tokio::test]
async fn blocked_calls_feed_no_computed_trait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = crate::support::test_config(dir.path());
    config.personas.poll_interval_ms = 20;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = s.webhook(&quiet, json!([rx.url()]), None).await;
    let (status, body) = s
        .put_rules(&src, json!({"blocked_events": ["Order"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    for (name, event) in [("Orders", "Order"), ("Markers", "Marker")] {
        let (status, body) = s
            .admin(
                Method::POST,
                "/computed-traits",
                Some(json!({"name": name, "destination_ids": [dest],
                            "definition": {"kind": "counter", "event": event}})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    // The blocked call is accepted and stored first; the marker after it
    // shows the engine has read past it.
    let (status, _) = s
        .collect("/v1/track", Some(&key), track("Order", "blocked-order"))
        .await;
    assert_eq!(status, 200);
    let (status, _) = s
        .collect("/v1/track", Some(&key), track("Marker", "marker"))
        .await;
    assert_eq!(status, 200);
    rx.wait_for(1, Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let traits: Vec<Value> = rx
        .requests()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).expect("json")["traits"].clone())
        .collect();
    assert_eq!(traits, vec![json!({"markers": 1})]);
    let (_, profile) = s.admin(Method::GET, "/profiles/u", None).await;
    assert_eq!(profile["computed_traits"].get("orders"), None, "{profile}");
    s.stop().await;
}

#[tokio::test]
async fn a_blocked_identify_trait_sent_in_context_traits_reaches_neither_profile_nor_destination() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let (status, body) = s
        .put_rules(&src, json!({"blocked_identify_traits": ["ssn"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    // RudderStack's libraries send an identify's traits in `context.traits`
    // only; analytics.js copies them there as well.
    let rudder = json!({"userId": "u1", "messageId": "m-rudder",
                        "context": {"traits": {"ssn": "123-45", "plan": "pro"}}});
    let both = json!({"userId": "u2", "messageId": "m-both", "traits": {"ssn": "999"},
                      "context": {"traits": {"ssn": "999"}}});
    for call in [rudder, both] {
        let (status, _) = s
            .collect("/v1/identify", Some(&key), call.to_string())
            .await;
        assert_eq!(status, 200);
    }
    let got = rx.wait_for(2, Duration::from_secs(10)).await;
    for r in &got {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("ssn"), "{body}");
    }
    let plan = eventually(15, || async {
        let (_, profile) = s.admin(Method::GET, "/profiles/u1", None).await;
        (profile["traits"]["plan"] == json!("pro")).then_some(profile)
    })
    .await;
    assert_eq!(plan["traits"], json!({"plan": "pro"}), "{plan}");
    let u2 = eventually(15, || async {
        let (status, profile) = s.admin(Method::GET, "/profiles/u2", None).await;
        (status == 200).then_some(profile)
    })
    .await;
    assert_eq!(u2["traits"], json!({}), "{u2}");
    s.stop().await;
}
