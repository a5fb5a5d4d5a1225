//! Users, API tokens and sessions through the admin API.

use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use super::{PASSWORD, call, token, user};
use crate::dashboard::{client, cookie_named, hidden_csrf, pair, set_cookies};
use crate::dashboard_sessions::accepted;
use crate::support::{TestServer, test_config};

/// Signs in to the dashboard with a username and password; returns the
/// session cookie (`name=value`), or the status when refused.
pub(crate) async fn sign_in_as(
    s: &TestServer,
    username: &str,
    password: &str,
) -> Result<String, u16> {
    let http = client();
    let form = http
        .get(s.url("/signin"))
        .send()
        .await
        .expect("signin page");
    let signin_cookie = pair(&cookie_named(&set_cookies(&form), "sluice_signin"));
    let csrf = hidden_csrf(&form.text().await.expect("body"));
    let res = http
        .post(s.url("/signin"))
        .header(COOKIE, signin_cookie)
        .header("user-agent", "Mozilla/5.0 (test)")
        .form(&[
            ("csrf", csrf.as_str()),
            ("username", username),
            ("password", password),
            ("next", "/"),
        ])
        .send()
        .await
        .expect("signin");
    match res.status().as_u16() {
        303 => Ok(pair(&cookie_named(&set_cookies(&res), "sluice_session"))),
        other => Err(other),
    }
}

#[tokio::test]
async fn users_are_created_lower_cased_listed_and_never_show_a_password() {
    let s = TestServer::start().await;
    let (status, body) = s
        .admin(
            Method::POST,
            "/users",
            Some(
                json!({"username": " Alice@Example.com ", "role": "editor", "password": PASSWORD}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["username"], json!("alice@example.com"));
    assert_eq!(body["role"], json!("editor"));
    let text = body.to_string();
    assert!(
        !text.contains("password") && !text.contains("argon2"),
        "{text}"
    );
    let (status, body) = s
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "ALICE@example.com", "role": "viewer", "password": PASSWORD})),
        )
        .await;
    assert_eq!((status, body["code"].clone()), (409, json!("conflict")));
    let (status, body) = s
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "bob", "role": "viewer", "password": "short"})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["message"].as_str().unwrap().starts_with("password:"),
        "{body}"
    );
    let (status, body) = s
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "bob", "role": "owner", "password": PASSWORD})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["message"].as_str().unwrap().starts_with("role:"),
        "{body}"
    );
    let (status, list) = s.admin(Method::GET, "/users", None).await;
    assert_eq!(status, 200);
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (list["total"].clone(), list["next_after"].clone()),
        (json!(1), Value::Null)
    );
    assert!(!list.to_string().contains("argon2"));
    // Paged like every list: a full page names the next one's cursor.
    for name in ["carol", "dave"] {
        let body = json!({"username": name, "role": "viewer", "password": PASSWORD});
        assert_eq!(s.admin(Method::POST, "/users", Some(body)).await.0, 201);
    }
    let (_, first) = s.admin(Method::GET, "/users?limit=2", None).await;
    let after = first["next_after"].as_str().expect("a cursor").to_owned();
    let (_, rest) = s
        .admin(Method::GET, &format!("/users?limit=2&after={after}"), None)
        .await;
    let names: Vec<&str> = [&first, &rest]
        .iter()
        .flat_map(|p| p["data"].as_array().into_iter().flatten())
        .filter_map(|u| u["username"].as_str())
        .collect();
    assert_eq!(names.len(), 3, "each user once: {names:?}");
    assert_eq!(first["total"], json!(3));
    let (status, _) = s.admin(Method::GET, "/users?limit=0", None).await;
    assert_eq!(status, 400);
    s.stop().await;
}

#[tokio::test]
async fn a_token_is_shown_once_listed_by_its_hint_and_refused_once_deleted() {
    let s = TestServer::start().await;
    let (status, made) = s
        .admin(
            Method::POST,
            "/tokens",
            Some(json!({"name": "deploy bot", "role": "editor"})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let secret = made["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("slu_") && secret.len() == 44, "{secret}");
    let hint = made["token_hint"].as_str().unwrap();
    assert!(secret.starts_with(hint.trim_end_matches('…')), "{hint}");
    let id = made["id"].as_str().unwrap().to_owned();
    let (status, me) = call(&s, &secret, Method::GET, "/me", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        me,
        json!({"kind": "token", "id": id, "name": "deploy bot", "role": "editor"})
    );
    let (_, list) = s.admin(Method::GET, "/tokens", None).await;
    assert!(
        !list.to_string().contains(&secret),
        "listed in full: {list}"
    );
    let (_, one) = s.admin(Method::GET, &format!("/tokens/{id}"), None).await;
    assert!(one.get("token").is_none(), "{one}");
    assert!(
        !one["last_used_at"].is_null(),
        "its use was recorded: {one}"
    );
    // A near miss is refused like any wrong token.
    let mut wrong = secret.clone();
    wrong.pop();
    wrong.push(if secret.ends_with('A') { 'B' } else { 'A' });
    let (status, body) = call(&s, &wrong, Method::GET, "/me", None).await;
    assert_eq!((status, body["code"].clone()), (401, json!("unauthorized")));
    let (status, _) = s
        .admin(Method::DELETE, &format!("/tokens/{id}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, _) = call(&s, &secret, Method::GET, "/me", None).await;
    assert_eq!(status, 401);
    s.stop().await;
}

#[tokio::test]
async fn a_users_sessions_are_listed_and_revoked_one_or_all_durably() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start_with(test_config(dir.path())).await;
    let id = user(&s, "carol", "viewer").await;
    assert_eq!(sign_in_as(&s, "carol", "wrong password!").await, Err(401));
    assert_eq!(sign_in_as(&s, "nobody", PASSWORD).await, Err(401));
    let first = sign_in_as(&s, "carol", PASSWORD).await.expect("signs in");
    let second = sign_in_as(&s, "Carol", PASSWORD).await.expect("signs in");
    assert!(accepted(&s, &first).await && accepted(&s, &second).await);
    let (status, list) = s
        .admin(Method::GET, &format!("/users/{id}/sessions"), None)
        .await;
    assert_eq!(status, 200);
    let sessions = list["data"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 2, "{list}");
    assert_eq!(sessions[0]["ip"], json!("127.0.0.1"));
    assert_eq!(sessions[0]["user_agent"], json!("Mozilla/5.0 (test)"));
    let of_second = sessions
        .iter()
        .filter_map(|s| s["id"].as_str())
        .find(|sid| second.contains(&format!("={sid}.")))
        .expect("the second sign-in is listed");
    let path = format!("/users/{id}/sessions/{of_second}");
    let (status, _) = s.admin(Method::DELETE, &path, None).await;
    assert_eq!(status, 204);
    assert!(
        !accepted(&s, &second).await,
        "the revoked session is signed out"
    );
    assert!(accepted(&s, &first).await, "the other one is not");
    let (status, _) = s.admin(Method::DELETE, &path, None).await;
    assert_eq!(status, 404, "a session is revoked once");
    let (status, body) = s
        .admin(Method::DELETE, &format!("/users/{id}/sessions"), None)
        .await;
    assert_eq!((status, body["revoked"].clone()), (200, json!(1)));
    assert!(!accepted(&s, &first).await);
    s.stop().await;
    let s = TestServer::start_with(test_config(dir.path())).await;
    assert!(
        !accepted(&s, &first).await,
        "still signed out after a restart"
    );
    assert!(!accepted(&s, &second).await);
    s.stop().await;
}

#[tokio::test]
async fn a_new_password_signs_the_user_out_and_the_old_one_stops_working() {
    let s = TestServer::start().await;
    let id = user(&s, "dave", "editor").await;
    let cookie = sign_in_as(&s, "dave", PASSWORD).await.expect("signs in");
    let new_password = "a much longer new passphrase";
    let (status, _) = s
        .admin(
            Method::PATCH,
            &format!("/users/{id}"),
            Some(json!({"password": new_password})),
        )
        .await;
    assert_eq!(status, 200);
    assert!(!accepted(&s, &cookie).await);
    assert_eq!(sign_in_as(&s, "dave", PASSWORD).await, Err(401));
    assert!(sign_in_as(&s, "dave", new_password).await.is_ok());
    let viewer = token(&s, "viewer").await;
    let (status, _) = call(&s, &viewer, Method::GET, &format!("/users/{id}"), None).await;
    assert_eq!(status, 403, "a viewer does not read users");
    s.stop().await;
}
