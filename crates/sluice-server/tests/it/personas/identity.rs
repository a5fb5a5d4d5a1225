//! Identity resolution: identify and alias merge people into one profile.

use reqwest::Method;
use serde_json::json;

use super::{create, setup, wait_bodies};

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
    // Identified: the value sent under the anonymousId is sent again under
    // the userId, for receivers that key people by userId.
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["userId"], json!("u9"));
    assert_eq!(got[1]["traits"], json!({"views": 1}));
    // An old id aliased into u9 brings its history along.
    let call = json!({"userId": "old-9", "event": "Viewed"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    wait_bodies(&rx, 3).await;
    let call = json!({"previousId": "old-9", "userId": "u9"});
    assert_eq!(
        s.collect("/v1/alias", Some(&key), call.to_string()).await.0,
        200
    );
    let got = wait_bodies(&rx, 4).await;
    assert_eq!(got[3]["userId"], json!("u9"));
    assert_eq!(got[3]["traits"], json!({"views": 2}));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        rx.requests().len(),
        4,
        "an alias that changes no userId resends nothing"
    );
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
