//! A source-scoped deletion: the person's computed traits and audience
//! memberships are re-evaluated at once from the calls left, and the
//! receivers are told, with no further event from the person.

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use super::{finished, hook, regulate, send, start};
use crate::support::{TestServer, eventually};

/// Whether `rx` received an identify setting trait `key` to `value`.
fn told(rx: &Receiver, key: &str, value: &Value) -> bool {
    rx.requests().iter().any(|r| {
        serde_json::from_slice::<Value>(&r.body)
            .is_ok_and(|b| b["type"] == json!("identify") && &b["traits"][key] == value)
    })
}

async fn told_within(rx: &Receiver, key: &str, value: Value) {
    eventually(15, || async { told(rx, key, &value).then_some(()) }).await;
}

async fn create(s: &TestServer, path: &str, body: Value) {
    let (status, body) = s.admin(Method::POST, path, Some(body)).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn a_source_scoped_deletion_recomputes_traits_and_audiences_at_once() {
    let (s, _dir) = start().await;
    recomputes_at_once(&s).await;
}

/// Sums 3 (web) and 4 (mobile) into a trait and an audience over it
/// (> 5), deletes the user's mobile data, and expects 3 and an exit to
/// reach the receiver, and the profile to show them.
pub async fn recomputes_at_once(s: &TestServer) {
    let (_web, key_web) = s.source("web").await;
    let (mobile, key_mobile) = s.source("mobile").await;
    let rx = Receiver::start().await;
    let personas = hook(s, &[], &rx).await;
    create(
        s,
        "/computed-traits",
        json!({"name": "Total Spend", "destination_ids": [personas],
               "definition": {"kind": "sum", "event": "Purchase", "property": "total"}}),
    )
    .await;
    create(
        s,
        "/audiences",
        json!({"name": "Big Spender", "destination_ids": [personas],
               "definition": {"condition": {"computed_trait":
                   {"key": "total_spend", "op": "gt", "value": 5}}}}),
    )
    .await;
    let purchase =
        |total: i64| json!({"userId": "u1", "event": "Purchase", "properties": {"total": total}});
    send(s, &key_web, "track", purchase(3)).await;
    send(s, &key_mobile, "track", purchase(4)).await;
    told_within(&rx, "total_spend", json!(7)).await;
    told_within(&rx, "big_spender", json!(true)).await;

    let id = regulate(s, "DELETE_ONLY", &["u1"], Some(&mobile)).await;
    finished(s, &id).await;
    // No window, no new event: only the purge can bring these.
    told_within(&rx, "total_spend", json!(3)).await;
    told_within(&rx, "big_spender", json!(false)).await;
    let profile = eventually(15, || async {
        let (status, p) = s.admin(Method::GET, "/profiles/u1", None).await;
        assert_eq!(status, 200, "{p}");
        (p["computed_traits"]["total_spend"] == json!(3)).then_some(p)
    })
    .await;
    assert_eq!(profile["audiences"], json!([]), "{profile}");
    let sources: Vec<&Value> = profile["events"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| &e["source_id"])
        .collect();
    assert!(sources.iter().all(|s| **s != json!(mobile)), "{profile}");
}
