//! No byte of a purged user is left in the SQLite files, also after pages
//! were split, merged and rebuilt by thousands of events of varied sizes
//! around theirs (a rebuilt page keeps stale copies of cells it moved in
//! its unallocated space, which `secure_delete` does not zero).

use reqwest::Method;
use serde_json::{Value, json};

use super::purge::{contains, database_bytes};
use super::{finished, regulate, start};
use crate::support::eventually;

const USERS: usize = 400;
const EVENTS: usize = 8_000;

fn user(i: usize) -> String {
    format!("zq-subject-{i:04}-x")
}

#[tokio::test]
async fn after_purging_many_users_among_many_events_no_file_holds_their_ids() {
    let (s, dir) = start().await;
    let (_src, key) = s.source("app").await;
    // Varied sizes in seq order: appends, then the purge's deletes, move
    // cells between sibling pages.
    for chunk in 0..EVENTS / 100 {
        let batch: Vec<Value> = (0..100)
            .map(|i| {
                let n = chunk * 100 + i;
                let pad = "p".repeat((n * 7919) % 900);
                json!({"type": "track", "userId": user(n % USERS), "event": "Viewed",
                       "messageId": format!("m-{n}"), "properties": {"pad": pad}})
            })
            .collect();
        let (status, body) = s
            .collect(
                "/v1/batch",
                Some(&key),
                json!({ "batch": batch }).to_string(),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // The profile engine's tables (identities, copies of the calls) are
    // B-trees filled in random order: the most page rebuilds.
    for n in [0, USERS - 1] {
        eventually(30, || async {
            let (status, _) = s
                .admin(Method::GET, &format!("/profiles/{}", user(n)), None)
                .await;
            (status == 200).then_some(())
        })
        .await;
    }
    let purged: Vec<String> = (0..USERS).step_by(4).map(user).collect();
    let ids: Vec<&str> = purged.iter().map(String::as_str).collect();
    let id = regulate(&s, "DELETE_INTERNAL", &ids, None).await;
    finished(&s, &id).await;
    eventually(10, || async {
        let (_, r) = s
            .admin(Method::GET, &format!("/regulations/{id}"), None)
            .await;
        (r["status"] == "FINISHED").then_some(())
    })
    .await;

    let bytes = database_bytes(dir.path());
    let left: Vec<&&str> = ids.iter().filter(|u| contains(&bytes, u)).collect();
    assert!(
        left.is_empty(),
        "{} purged ids still in the files: {left:?}",
        left.len()
    );
    assert!(contains(&bytes, &user(1)), "a kept user is still there");
}
