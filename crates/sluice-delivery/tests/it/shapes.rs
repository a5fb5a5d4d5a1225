//! Every message type arrives in its documented shape, one per POST.

use serde_json::{Value, json};
use sluice_delivery::payload;
use sluice_store::DeliveryState;
use sluice_testkit::Receiver;

use crate::support::*;

fn stored(kind: &str, id: &str, extra: Value) -> Value {
    let mut v = json!({
        "type": kind, "messageId": id, "userId": "u-1", "anonymousId": "a-1",
        "context": {"ip": "203.0.113.9"}, "timestamp": "2024-05-01T12:00:00.250Z",
        "receivedAt": "2024-05-01T12:00:00.270Z",
    });
    if let (Some(map), Value::Object(more)) = (v.as_object_mut(), extra) {
        map.extend(more);
    }
    v
}

#[tokio::test]
async fn track_body_is_the_exact_documented_bytes() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-track")], &[&dest]).await;
    engine.handle.notify();
    let got = rx.wait_for(1, WAIT).await;
    let expected = concat!(
        r#"{"version":1,"type":"track","messageId":"m-track","userId":"u-1","#,
        r#""event":"Order Completed","properties":{"total":12.5,"n":1},"#,
        r#""context":{"ip":"203.0.113.9","library":{"name":"test"}},"integrations":{},"#,
        r#""timestamp":"2024-05-01T12:00:00.250Z","receivedAt":"2024-05-01T12:00:00.270Z"}"#
    );
    assert_eq!(got[0].text(), expected);
    assert_eq!(got[0].method, "POST");
    wait_state(&store, "m-track", DeliveryState::Succeeded).await;
    engine.stop().await;
}

#[tokio::test]
async fn every_type_arrives_in_its_shape() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    let mut screen = stored("screen", "m-screen", json!({"name": "Home"}));
    screen["context"]["device"] = json!({"model": "Pixel 8", "type": "android"});
    screen["context"]["os"] = json!({"name": "Android", "version": "14"});
    let events = [
        stored(
            "page",
            "m-page",
            json!({"name": "Pricing", "properties": {"url": "https://e.x/p", "path": "/p", "title": "P", "referrer": ""}}),
        ),
        screen,
        stored(
            "identify",
            "m-identify",
            json!({"traits": {"email": "a@e.x"}}),
        ),
        stored("alias", "m-alias", json!({"previousId": "old-1"})),
        stored(
            "group",
            "m-group",
            json!({"groupId": "g-1", "traits": {"plan": "pro"}}),
        ),
        stored("delete", "m-delete", json!({})),
    ];
    append(&store, &events, &[&dest]).await;
    engine.handle.notify();
    let got = rx.wait_for(events.len(), WAIT).await;
    let bodies: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("JSON body"))
        .collect();
    let by_type = |t: &str| {
        bodies
            .iter()
            .find(|b| b["type"] == t)
            .unwrap_or_else(|| panic!("no {t} message in {bodies:?}"))
    };
    let page = by_type("page");
    assert_eq!(page["version"], 1);
    assert_eq!(page["userId"], "u-1");
    let keys: Vec<&String> = page["properties"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["path", "referrer", "title", "url"]);
    let screen = by_type("screen");
    assert_eq!(screen["name"], "Home");
    assert_eq!(screen["context"]["os"]["version"], "14");
    assert_eq!(by_type("identify")["traits"]["email"], "a@e.x");
    let alias = by_type("alias");
    assert_eq!(
        (&alias["Previous ID"], &alias["User ID"]),
        (&json!("old-1"), &json!("u-1"))
    );
    assert!(alias.get("userId").is_none());
    let group = by_type("group");
    assert_eq!(
        (&group["groupId"], &group["traits"]["plan"]),
        (&json!("g-1"), &json!("pro"))
    );
    assert_eq!(
        by_type("delete"),
        &payload::delete_message("u-1", "2024-05-01T12:00:00.250Z")
    );
    for b in &bodies {
        assert_eq!(b["timestamp"], "2024-05-01T12:00:00.250Z");
        if b["type"] != "delete" {
            assert_eq!(
                b["messageId"].as_str().map(|m| m.starts_with("m-")),
                Some(true)
            );
            assert!(b["context"].is_object());
        }
    }
    engine.stop().await;
}
