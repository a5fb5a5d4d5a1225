//! What a deletion purges: pending deliveries, the attempt log, profiles,
//! and every byte of the user in the SQLite file.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sluice_testkit::{Receiver, Reply};

use super::{finished, hook, regulate, send, start, stored_mentions};
use crate::support::eventually;

fn mentions(rx: &Receiver, needle: &str) -> usize {
    rx.requests()
        .iter()
        .filter(|r| r.text().contains(needle))
        .count()
}

#[tokio::test]
async fn an_undelivered_event_of_a_deleted_user_is_never_delivered() {
    let (s, _dir) = start().await;
    let (src, key) = s.source("app").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(500));
    hook(&s, &[&src], &rx).await;
    send(
        &s,
        &key,
        "track",
        json!({"userId": "doomed", "event": "Secret"}),
    )
    .await;
    eventually(10, || async { (mentions(&rx, "doomed") > 0).then_some(()) }).await;

    finished(
        &s,
        &regulate(&s, "DELETE_INTERNAL", &["doomed"], None).await,
    )
    .await;
    // An attempt already in flight may still land (timeout 1 s); after
    // that, nothing of the user is ever sent again.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let before = mentions(&rx, "doomed");
    rx.set_default(Reply::status(200));
    send(
        &s,
        &key,
        "track",
        json!({"userId": "kept", "event": "After"}),
    )
    .await;
    eventually(10, || async { (mentions(&rx, "kept") > 0).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(mentions(&rx, "doomed"), before);
    let (_, dead) = s.admin(Method::GET, "/deliveries?limit=500", None).await;
    assert!(!dead.to_string().contains("doomed"), "{dead}");
}

/// Every file of the SQLite database, concatenated.
pub(super) fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).expect("data dir").flatten() {
        if entry.file_name().to_string_lossy().starts_with("sluice.db") {
            all.extend(std::fs::read(entry.path()).expect("read db file"));
        }
    }
    all
}

pub(super) fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn after_delete_internal_no_api_and_no_byte_of_the_sqlite_file_holds_the_user() {
    let (s, dir) = start().await;
    let (src, key) = s.source("app").await;
    let rx = Receiver::start().await;
    hook(&s, &[&src], &rx).await;
    let user = "zq-forget-me-7781";
    let anon = "zq-anon-device-5512";
    send(
        &s,
        &key,
        "identify",
        json!({"userId": user, "anonymousId": anon,
        "traits": {"email": "zq-forget-me-7781@example.com"}}),
    )
    .await;
    send(
        &s,
        &key,
        "track",
        json!({"anonymousId": anon, "event": "Viewed"}),
    )
    .await;
    send(
        &s,
        &key,
        "track",
        json!({"userId": "someone-else", "event": "Viewed"}),
    )
    .await;
    rx.wait_for(3, Duration::from_secs(10)).await;
    eventually(15, || async {
        let (status, _) = s
            .admin(Method::GET, &format!("/profiles/{user}"), None)
            .await;
        (status == 200).then_some(())
    })
    .await;
    // Retention-proof: the bytes are in the file before the regulation.
    assert!(contains(&database_bytes(dir.path()), user));

    let id = regulate(&s, "DELETE_INTERNAL", &[user], None).await;
    let detail = finished(&s, &id).await;
    assert_eq!(detail["notifications"], json!([]));
    assert_eq!(detail["subjectDetails"][0]["eventsPurged"], json!(2));
    assert!(!detail.to_string().contains(user), "{detail}");
    assert!(!stored_mentions(&s, &src, user).await);
    assert!(!stored_mentions(&s, &src, anon).await);
    assert!(stored_mentions(&s, &src, "someone-else").await);
    assert_eq!(
        s.admin(Method::GET, &format!("/profiles/{user}"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        s.admin(Method::GET, &format!("/profiles/{anon}"), None)
            .await
            .0,
        404
    );
    let (_, deliveries) = s.admin(Method::GET, "/deliveries?limit=500", None).await;
    assert!(!deliveries.to_string().contains(user));
    let (_, listed) = s.admin(Method::GET, "/regulations", None).await;
    assert!(!listed.to_string().contains(user));

    // The purge zeroes freed pages and checkpoints the WAL (truncating
    // it): neither id is left in any file, while running or after a stop.
    let bytes = database_bytes(dir.path());
    assert!(!contains(&bytes, user), "the user id is still in the file");
    assert!(
        !contains(&bytes, anon),
        "the anonymous id is still in the file"
    );
    let dir = s.stop().await.unwrap_or(dir);
    let bytes = database_bytes(dir.path());
    assert!(!bytes.is_empty());
    assert!(!contains(&bytes, user), "the user id is still in the file");
    assert!(
        !contains(&bytes, anon),
        "the anonymous id is still in the file"
    );
}
