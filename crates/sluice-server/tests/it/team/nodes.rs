//! Two nodes on one PostgreSQL database: what one node does to a user, a
//! session or a token holds on the other at once.

use reqwest::Method;
use serde_json::json;

use super::people::sign_in_as;
use super::{PASSWORD, call, token, user};
use crate::dashboard_sessions::accepted;
use crate::postgres::{pg_config, unique_schema};
use crate::support::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_tokens_and_roles_changed_on_one_node_hold_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let id = user(&a, "gina", "editor").await;
    let cookie = sign_in_as(&a, "gina", PASSWORD)
        .await
        .expect("signs in on a");
    assert!(accepted(&b, &cookie).await, "one key signs for both nodes");
    let (status, body) = b
        .admin(Method::DELETE, &format!("/users/{id}/sessions"), None)
        .await;
    assert_eq!((status, body["revoked"].clone()), (200, json!(1)));
    assert!(!accepted(&a, &cookie).await, "revoked on b, refused on a");

    let robot = token(&a, "editor").await;
    let (status, _) = call(&b, &robot, Method::GET, "/me", None).await;
    assert_eq!(status, 200);
    let (_, listed) = b.admin(Method::GET, "/tokens", None).await;
    let tid = listed["data"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = b
        .admin(Method::DELETE, &format!("/tokens/{tid}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, _) = call(&a, &robot, Method::GET, "/me", None).await;
    assert_eq!(status, 401, "deleted on b, refused on a");

    let again = sign_in_as(&b, "gina", PASSWORD)
        .await
        .expect("signs in on b");
    let (status, _) = a
        .admin(
            Method::PATCH,
            &format!("/users/{id}"),
            Some(json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(status, 200);
    let res = crate::dashboard::client()
        .get(b.url("/users"))
        .header(reqwest::header::COOKIE, &again)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403, "demoted on a, refused on b");
    // Both nodes wrote to one audit log.
    let (_, log) = b.admin(Method::GET, "/audit?resource=session", None).await;
    let vias: Vec<_> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].clone())
        .collect();
    assert!(
        vias.contains(&json!("revoke-all")) && vias.contains(&json!("sign-in")),
        "{log}"
    );
    a.stop().await;
    b.stop().await;
}
