//! Operating Sluice as a team: users, roles, API tokens and the audit log,
//! over HTTP against the real server.

mod audit;
mod dashboard_roles;
mod failed_signins;
#[cfg(feature = "postgres-tests")]
mod nodes;
mod own_password;
mod people;
mod roles;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestServer, read};

/// A password that passes the length rule.
pub const PASSWORD: &str = "correct horse battery staple";

/// Creates an automation token with `role` through the admin token;
/// returns the token.
pub async fn token(s: &TestServer, role: &str) -> String {
    let (status, body) = s
        .admin(
            Method::POST,
            "/tokens",
            Some(json!({"name": format!("{role} robot"), "role": role})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["token"].as_str().expect("token").to_owned()
}

/// Creates a user; returns its id.
pub async fn user(s: &TestServer, username: &str, role: &str) -> String {
    let (status, body) = s
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": username, "role": role, "password": PASSWORD})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

/// An admin API call with `token`.
pub async fn call(
    s: &TestServer,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = s
        .http
        .request(method, s.url(&format!("/api/v1{path}")))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    read(req.send().await.expect("admin request")).await
}

/// The audit log's entries, newest first, through the admin token.
pub async fn audit_log(s: &TestServer, query: &str) -> Vec<Value> {
    let (status, body) = s.admin(Method::GET, &format!("/audit{query}"), None).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().cloned().unwrap_or_default()
}
