//! A user changes their own password: through the admin API with an API
//! token of theirs, and on the dashboard's account page with the session
//! they are signed in with, which stays signed in while the others are
//! signed out, durably.

use reqwest::Method;
use reqwest::header::{COOKIE, LOCATION};
use serde_json::{Value, json};

use super::people::sign_in_as;
use super::{PASSWORD, audit_log, call, token, user};
use crate::dashboard::{client, hidden_csrf};
use crate::dashboard_sessions::accepted;
use crate::support::{ADMIN_TOKEN, TestServer, test_config};

const NEW: &str = "a much longer new passphrase";

/// An API token of the user `id`, with `role`.
async fn users_token(s: &TestServer, id: &str, role: &str) -> String {
    let (status, body) = s
        .admin(
            Method::POST,
            "/tokens",
            Some(json!({"name": "laptop", "role": role, "user_id": id})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

fn change(current: &str, new: &str) -> Option<Value> {
    Some(json!({"current_password": current, "new_password": new}))
}

#[tokio::test]
async fn a_users_token_changes_the_users_password_given_the_current_one() {
    let s = TestServer::start().await;
    let id = user(&s, "vera", "viewer").await;
    let tok = users_token(&s, &id, "viewer").await;
    let cookie = sign_in_as(&s, "vera", PASSWORD).await.expect("signs in");
    let entries_before = audit_log(&s, "?resource=user").await;

    // A wrong current password: a 400 of its own, and nothing changes.
    let (status, body) = call(
        &s,
        &tok,
        Method::POST,
        "/me/password",
        change("not it at all!", NEW),
    )
    .await;
    assert_eq!(
        (status, body["success"].clone()),
        (400, json!(false)),
        "{body}"
    );
    assert_eq!(body["code"], json!("wrong_password"));
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("current_password:"),
        "{body}"
    );
    // The rules of user creation, by field name.
    let (status, body) = call(
        &s,
        &tok,
        Method::POST,
        "/me/password",
        change(PASSWORD, "short"),
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("invalid_field"))
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("new_password: must be at least 12"),
        "{body}"
    );
    let (status, body) = call(
        &s,
        &tok,
        Method::POST,
        "/me/password",
        change(PASSWORD, PASSWORD),
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("invalid_field")),
        "{body}"
    );
    let (status, body) = call(
        &s,
        &tok,
        Method::POST,
        "/me/password",
        Some(json!({"current_password": PASSWORD, "new_pasword": NEW})),
    )
    .await;
    assert_eq!(status, 400, "a misspelt field is refused: {body}");
    assert!(accepted(&s, &cookie).await, "still signed in");
    assert_eq!(audit_log(&s, "?resource=user").await, entries_before);
    assert!(sign_in_as(&s, "vera", PASSWORD).await.is_ok());

    let (status, body) = call(
        &s,
        &tok,
        Method::POST,
        "/me/password",
        change(PASSWORD, NEW),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["user"]["id"], json!(id));
    assert_eq!(
        body["sessions_signed_out"],
        json!(2),
        "both dashboard sessions"
    );
    assert!(!body.to_string().contains(NEW));
    assert!(!accepted(&s, &cookie).await, "signed out");
    assert_eq!(sign_in_as(&s, "vera", PASSWORD).await, Err(401));
    assert!(sign_in_as(&s, "vera", NEW).await.is_ok());
    let (status, _) = call(&s, &tok, Method::GET, "/me", None).await;
    assert_eq!(status, 200, "the token keeps working");

    let entry = audit_log(&s, "?resource=user").await[0].clone();
    assert_eq!(entry["action"], json!("change-password"), "{entry}");
    assert_eq!(entry["resource_id"], json!(id));
    assert_eq!(entry["actor"]["kind"], json!("token"));
    assert_eq!(entry["after"]["password_changed"], json!(true));
    let text = entry.to_string();
    assert!(
        !text.contains(NEW) && !text.contains(PASSWORD) && !text.contains("argon2"),
        "{text}"
    );
    s.stop().await;
}

#[tokio::test]
async fn the_admin_token_and_tokens_of_no_user_have_no_password_to_change() {
    let s = TestServer::start().await;
    let robot = token(&s, "admin").await;
    for (who, tok) in [
        ("admin token", ADMIN_TOKEN.to_owned()),
        ("automation token", robot),
    ] {
        let (status, body) = call(
            &s,
            &tok,
            Method::POST,
            "/me/password",
            change(PASSWORD, NEW),
        )
        .await;
        assert_eq!(status, 400, "{who}: {body}");
        assert_eq!(body["code"], json!("not_a_user"), "{who}");
        assert_eq!(body["success"], json!(false));
    }
    s.stop().await;
}

#[tokio::test]
async fn repeated_wrong_current_passwords_make_the_user_wait() {
    let s = TestServer::start().await;
    let id = user(&s, "gus", "editor").await;
    let tok = users_token(&s, &id, "editor").await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let (status, _) = call(
            &s,
            &tok,
            Method::POST,
            "/me/password",
            change("wrong guess 123", NEW),
        )
        .await;
        statuses.push(status);
    }
    assert_eq!(statuses, [400; 6]);
    let res = client()
        .post(s.url("/api/v1/me/password"))
        .bearer_auth(&tok)
        .json(&json!({"current_password": PASSWORD, "new_password": NEW}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 429);
    assert!(res.headers().contains_key("retry-after"));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["code"], json!("too_many_attempts"));
    assert!(
        sign_in_as(&s, "gus", PASSWORD).await.is_ok(),
        "nothing changed"
    );
    s.stop().await;
}

/// Posts the account page's password form with `cookie`.
async fn post_form(s: &TestServer, cookie: &str, fields: [(&str, &str); 3]) -> reqwest::Response {
    let http = client();
    let page = http
        .get(s.url("/account"))
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csrf = hidden_csrf(&page.text().await.unwrap());
    let mut form: Vec<(&str, &str)> = vec![("csrf", csrf.as_str())];
    form.extend(fields);
    http.post(s.url("/account/password"))
        .header(COOKIE, cookie)
        .form(&form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_account_page_changes_the_password_and_keeps_only_this_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start_with(test_config(dir.path())).await;
    let id = user(&s, "wanda", "viewer").await;
    let here = sign_in_as(&s, "wanda", PASSWORD).await.unwrap();
    let elsewhere = sign_in_as(&s, "wanda", PASSWORD).await.unwrap();

    let page = client()
        .get(s.url("/account"))
        .header(COOKIE, &here)
        .send()
        .await
        .unwrap();
    let html = page.text().await.unwrap();
    for label in ["Current password", "New password", "New password again"] {
        assert!(html.contains(&format!(">{label}</label>")), "{label}");
    }
    assert!(html.contains(r#"action="/account/password""#));

    let mismatch = post_form(
        &s,
        &here,
        [
            ("current_password", PASSWORD),
            ("new_password", NEW),
            ("confirmation", "something else"),
        ],
    )
    .await;
    assert_eq!(mismatch.status().as_u16(), 400);
    let html = mismatch.text().await.unwrap();
    assert!(
        html.contains("confirmation: does not match the new password"),
        "{html}"
    );
    assert!(html.contains(r#"id="confirmation" type="password" name="confirmation" required autocomplete="new-password" minlength="12" aria-invalid="true""#), "{html}");

    let wrong = post_form(
        &s,
        &here,
        [
            ("current_password", "not my password"),
            ("new_password", NEW),
            ("confirmation", NEW),
        ],
    )
    .await;
    assert_eq!(wrong.status().as_u16(), 400);
    assert!(
        wrong
            .text()
            .await
            .unwrap()
            .contains("current_password: is not your current password")
    );
    assert!(accepted(&s, &elsewhere).await, "nothing changed");

    let done = post_form(
        &s,
        &here,
        [
            ("current_password", PASSWORD),
            ("new_password", NEW),
            ("confirmation", NEW),
        ],
    )
    .await;
    assert_eq!(done.status().as_u16(), 303);
    assert_eq!(done.headers()[LOCATION], "/account?password=1");
    let shown = client()
        .get(s.url("/account?password=1"))
        .header(COOKIE, &here)
        .send()
        .await
        .unwrap();
    assert!(
        shown
            .text()
            .await
            .unwrap()
            .contains("Password changed. Your 1 other session was signed out.")
    );
    assert!(
        accepted(&s, &here).await,
        "the session it was changed from stays"
    );
    assert!(
        !accepted(&s, &elsewhere).await,
        "the other one is signed out"
    );
    let entry = audit_log(&s, "?resource=user").await[0].clone();
    assert_eq!(
        (entry["action"].clone(), entry["via"].clone()),
        (json!("change-password"), json!("dashboard"))
    );
    assert_eq!(entry["actor"]["id"], json!(id));
    s.stop().await;

    let s = TestServer::start_with(test_config(dir.path())).await;
    assert!(accepted(&s, &here).await, "after a restart too");
    assert!(!accepted(&s, &elsewhere).await);
    assert_eq!(sign_in_as(&s, "wanda", PASSWORD).await, Err(401));
    assert!(sign_in_as(&s, "wanda", NEW).await.is_ok());
    s.stop().await;
}

#[tokio::test]
async fn the_admin_tokens_account_page_has_no_password_form() {
    let s = TestServer::start().await;
    let res = crate::dashboard::sign_in(&s, ADMIN_TOKEN, None).await;
    let cookie = crate::dashboard::pair(&crate::dashboard::cookie_named(
        &crate::dashboard::set_cookies(&res),
        "sluice_session",
    ));
    let html = client()
        .get(s.url("/account"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!html.contains("/account/password"), "{html}");
    assert!(html.contains("has no password to change"));
    s.stop().await;
}
