//! The audit log: changes through the admin API, the command line's user
//! agent and the dashboard, who made them and from where, secrets masked,
//! filters and the cursor.

use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use super::people::sign_in_as;
use super::{PASSWORD, audit_log, call, token, user};
use crate::dashboard::{client, hidden_csrf};
use crate::support::TestServer;

fn find<'a>(log: &'a [Value], resource: &str, action: &str) -> &'a Value {
    log.iter()
        .find(|e| e["resource"] == json!(resource) && e["action"] == json!(action))
        .unwrap_or_else(|| panic!("no {resource} {action} in {log:#?}"))
}

#[tokio::test]
async fn api_changes_are_recorded_with_who_what_and_where_and_secrets_masked() {
    let s = TestServer::start().await;
    let editor = token(&s, "editor").await;
    let (status, source) = call(
        &s,
        &editor,
        Method::POST,
        "/sources",
        Some(json!({"name": "web"})),
    )
    .await;
    assert_eq!(status, 201);
    let source_id = source["id"].as_str().unwrap();
    let write_key = source["write_key"].as_str().unwrap();
    let path = format!("/sources/{source_id}");
    let (status, _) = call(
        &s,
        &editor,
        Method::PATCH,
        &path,
        Some(json!({"name": "shop"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, rotated) = call(
        &s,
        &editor,
        Method::POST,
        &format!("{path}/rotate-key"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let new_key = rotated["write_key"].as_str().unwrap();
    let secret = "s3cret-0123456789abcdef";
    let body = json!({"name": "hook", "type": "Webhooks", "source_ids": [source_id], "settings": {
        "urls": [{"url": "https://bob:hunter2@example.com/hook", "headers": {"Authorization": "Bearer abcdefghijklmnop"}}],
        "sharedSecret": secret}});
    let (status, dest) = call(&s, &editor, Method::POST, "/destinations", Some(body)).await;
    assert_eq!(status, 201, "{dest}");
    let (status, _) = call(&s, &editor, Method::DELETE, &path, None).await;
    assert_eq!(status, 204);

    let log = audit_log(&s, "").await;
    let text = serde_json::to_string(&log).unwrap();
    for leaked in [
        write_key,
        new_key,
        secret,
        "hunter2",
        "abcdefghijklmnop",
        editor.as_str(),
    ] {
        assert!(
            !text.contains(leaked),
            "{leaked} is in the audit log: {text}"
        );
    }
    let created = find(&log, "source", "create");
    assert_eq!(created["actor"]["kind"], json!("token"));
    assert_eq!(created["actor"]["name"], json!("editor robot"));
    assert_eq!(created["via"], json!("api"));
    assert_eq!(created["ip"], json!("127.0.0.1"));
    assert_eq!(created["resource_id"], json!(source_id));
    assert_eq!(created["confirmed"], json!(true));
    assert_eq!(created["after"]["name"], json!("web"));
    let updated = find(&log, "source", "update");
    assert_eq!(
        (
            updated["before"]["name"].clone(),
            updated["after"]["name"].clone()
        ),
        (json!("web"), json!("shop"))
    );
    let rotation = find(&log, "source", "rotate-key");
    assert_ne!(
        rotation["before"]["write_key_hint"],
        rotation["after"]["write_key_hint"]
    );
    let destination = find(&log, "destination", "create");
    let settings = &destination["after"]["settings"];
    assert_eq!(settings["sharedSecret"], json!("s3cr…"));
    assert_eq!(
        settings["urls"][0]["url"],
        json!("https://****:****@example.com/hook")
    );
    let deleted = find(&log, "source", "delete");
    assert_eq!(
        (deleted["before"]["name"].clone(), deleted["after"].clone()),
        (json!("shop"), Value::Null)
    );
    // Newest first: the deletion came last.
    assert_eq!(log[0]["action"], json!("delete"));
    s.stop().await;
}

#[tokio::test]
async fn a_refused_change_leaves_no_entry_and_the_cli_is_named_by_its_user_agent() {
    let s = TestServer::start().await;
    let before = audit_log(&s, "").await.len();
    let (status, _) = s
        .admin(Method::POST, "/sources", Some(json!({"name": ""})))
        .await;
    assert_eq!(status, 400);
    let (status, _) = s
        .admin(Method::DELETE, "/destinations/dst_missing", None)
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        audit_log(&s, "").await.len(),
        before,
        "nothing changed, nothing logged"
    );
    let res = s
        .http
        .post(s.url("/api/v1/sources"))
        .bearer_auth(crate::support::ADMIN_TOKEN)
        .header("user-agent", "sluice-cli/0.1.0")
        .json(&json!({"name": "from the shell"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let log = audit_log(&s, "").await;
    let e = find(&log, "source", "create");
    assert_eq!(e["via"], json!("cli"));
    assert_eq!(
        e["actor"],
        json!({"kind": "admin_token", "id": null, "name": "admin token"})
    );
    assert_eq!(e["user_agent"], json!("sluice-cli/0.1.0"));
    s.stop().await;
}

#[tokio::test]
async fn the_log_filters_by_actor_resource_and_time_and_pages_with_a_cursor() {
    let s = TestServer::start().await;
    let editor = token(&s, "editor").await;
    for n in 0..5 {
        let (status, _) = call(
            &s,
            &editor,
            Method::POST,
            "/sources",
            Some(json!({"name": format!("s{n}")})),
        )
        .await;
        assert_eq!(status, 201);
    }
    let (status, _) = s
        .admin(Method::POST, "/sources", Some(json!({"name": "mine"})))
        .await;
    assert_eq!(status, 201);
    let by_robot = audit_log(&s, "?actor=editor%20robot").await;
    assert_eq!(by_robot.len(), 5);
    let by_admin = audit_log(&s, "?actor=admin%20token&resource=source").await;
    assert_eq!(by_admin.len(), 1);
    let tokens = audit_log(&s, "?resource=token").await;
    assert_eq!(tokens.len(), 1, "the robot's token");
    let future = audit_log(&s, "?since=2999-01-01T00:00:00Z").await;
    assert!(future.is_empty());
    let past = audit_log(&s, "?until=2000-01-01T00:00:00Z").await;
    assert!(past.is_empty());
    let (status, body) = s.admin(Method::GET, "/audit?since=yesterday", None).await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("invalid_query"))
    );
    // Pages of two, following next_before, see every entry once.
    let all = audit_log(&s, "").await;
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = s
            .admin(Method::GET, &format!("/audit?limit=2{cursor}"), None)
            .await;
        assert_eq!(status, 200);
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].clone()),
        );
        match page["next_before"].as_i64() {
            Some(n) => cursor = format!("&before={n}"),
            None => break,
        }
    }
    let ids: Vec<Value> = all.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(seen, ids);
    s.stop().await;
}

#[tokio::test]
async fn dashboard_changes_and_sign_ins_are_recorded_as_the_signed_in_user() {
    let s = TestServer::start().await;
    user(&s, "erin", "editor").await;
    let cookie = sign_in_as(&s, "erin", PASSWORD).await.expect("signs in");
    let http = client();
    let page = http
        .get(s.url("/sources"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csrf = hidden_csrf(&page.text().await.unwrap());
    let made = http
        .post(s.url("/sources"))
        .header(COOKIE, &cookie)
        .header("user-agent", "Mozilla/5.0 (dashboard test)")
        .form(&[("csrf", csrf.as_str()), ("name", "from the dashboard")])
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    let log = audit_log(&s, "?actor=erin").await;
    let created = find(&log, "source", "create");
    assert_eq!(created["via"], json!("dashboard"));
    assert_eq!(created["actor"]["kind"], json!("user"));
    assert_eq!(created["user_agent"], json!("Mozilla/5.0 (dashboard test)"));
    assert_eq!(created["after"]["name"], json!("from the dashboard"));
    assert!(created["after"].get("write_key").is_none());
    let signed_in = find(&log, "session", "sign-in");
    assert_eq!(signed_in["ip"], json!("127.0.0.1"));
    s.stop().await;
}

#[tokio::test]
async fn regulations_and_team_changes_are_always_recorded() {
    let s = TestServer::start().await;
    let id = user(&s, "frank", "viewer").await;
    let (status, _) = s
        .admin(
            Method::PATCH,
            &format!("/users/{id}"),
            Some(json!({"role": "editor", "password": "another long passphrase"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, reg) = s
        .admin(
            Method::POST,
            "/regulations",
            Some(json!({"regulationType": "SUPPRESS_ONLY", "subjectIds": ["user-42"]})),
        )
        .await;
    assert_eq!(status, 201, "{reg}");
    let log = audit_log(&s, "").await;
    let change = find(&log, "user", "update-password");
    assert_eq!(change["before"]["role"], json!("viewer"));
    assert_eq!(change["after"]["role"], json!("editor"));
    assert_eq!(change["after"]["password_changed"], json!(true));
    assert!(
        !serde_json::to_string(&log)
            .unwrap()
            .contains("another long passphrase")
    );
    let regulation = find(&log, "regulation", "create");
    assert_eq!(regulation["resource_id"], reg["id"]);
    // Named by the SHA-256 of each id, as the regulation record names them:
    // a deletion leaves no copy of the id in the log.
    let hashed = format!("sha256:{}", sluice_store::keys::hash_secret("user-42"));
    assert_eq!(regulation["after"]["subjectSha256"], json!([hashed]));
    assert!(!regulation.to_string().contains("user-42"));
    s.stop().await;
}
