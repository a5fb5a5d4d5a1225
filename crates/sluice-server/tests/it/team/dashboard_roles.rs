//! Roles on the dashboard: every page and form asks for the role its
//! route needs, as the admin API does. A refused form is the `403` page
//! and changes nothing; a viewer's pages leave their forms out.

use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use super::people::sign_in_as;
use super::{PASSWORD, audit_log, user};
use crate::dashboard::{client, hidden_csrf};
use crate::support::TestServer;

/// Every page (GET) of the dashboard, ids filled in.
fn pages(src: &str, dst: &str, ct: &str, aud: &str, usr: &str) -> Vec<(String, &'static str)> {
    let v = "viewer";
    let a = "admin";
    vec![
        ("/".into(), v),
        ("/catalog".into(), v),
        ("/sources".into(), v),
        (format!("/sources/{src}"), v),
        ("/debugger".into(), v),
        (format!("/sources/{src}/debugger"), v),
        (format!("/sources/{src}/schema"), v),
        ("/usage".into(), v),
        ("/delivery-health".into(), v),
        ("/destinations".into(), v),
        ("/destinations/new".into(), v),
        (format!("/destinations/{dst}"), v),
        (format!("/destinations/{dst}/edit"), v),
        (format!("/destinations/{dst}/deliveries"), v),
        ("/computed-traits".into(), v),
        ("/computed-traits/new".into(), v),
        (format!("/computed-traits/{ct}"), v),
        ("/audiences".into(), v),
        (format!("/audiences/{aud}"), v),
        ("/profiles".into(), v),
        ("/account".into(), v),
        ("/regulations".into(), a),
        ("/suppressions".into(), a),
        ("/users".into(), a),
        (format!("/users/{usr}"), a),
        ("/tokens".into(), a),
        ("/audit".into(), a),
    ]
}

/// A form's path, its fields and the role it needs.
type Form = (String, Vec<(&'static str, String)>, &'static str);

/// Every form (POST) that changes something, ids filled in, with fields
/// that would make the change.
fn forms(src: &str, dst: &str, ct: &str, usr: &str) -> Vec<Form> {
    let e = "editor";
    let a = "admin";
    let none = Vec::new;
    vec![
        ("/sources".into(), vec![("name", "intruder".into())], e),
        (format!("/sources/{src}/rotate-key"), none(), e),
        (
            format!("/sources/{src}/rename"),
            vec![("name", "renamed".into())],
            e,
        ),
        (
            format!("/sources/{src}/enabled"),
            vec![("enabled", "false".into()), ("confirm", "yes".into())],
            e,
        ),
        (
            format!("/sources/{src}/delete"),
            vec![("confirm", "yes".into())],
            e,
        ),
        (
            format!("/sources/{src}/rules/block"),
            vec![
                ("list", "blocked_events".into()),
                ("name", "Secret".into()),
                ("blocked", "true".into()),
            ],
            e,
        ),
        (
            format!("/sources/{src}/rules/plan"),
            vec![("enabled", "on".into())],
            e,
        ),
        (
            "/destinations/new".into(),
            vec![
                ("name", "intruder".into()),
                ("url0", "https://example.com/x".into()),
            ],
            e,
        ),
        (
            format!("/destinations/{dst}/edit"),
            vec![("name", "renamed".into())],
            e,
        ),
        (
            format!("/destinations/{dst}/enabled"),
            vec![("enabled", "false".into())],
            e,
        ),
        (
            format!("/destinations/{dst}/delete"),
            vec![("confirm", "yes".into())],
            e,
        ),
        (format!("/destinations/{dst}/test"), none(), e),
        (
            format!("/destinations/{dst}/filters"),
            vec![("name", "f".into()), ("action", "drop".into())],
            e,
        ),
        (
            format!("/destinations/{dst}/filters/delete"),
            vec![("name", "f".into())],
            e,
        ),
        (format!("/destinations/{dst}/replay"), none(), e),
        ("/deliveries/1/replay".into(), none(), e),
        (
            "/computed-traits/new".into(),
            vec![
                ("name", "Intruder".into()),
                ("kind", "counter".into()),
                ("event", "E".into()),
            ],
            e,
        ),
        (
            format!("/computed-traits/{ct}/destinations/{dst}"),
            vec![("on", "1".into())],
            e,
        ),
        (
            format!("/computed-traits/{ct}/delete"),
            vec![("confirm", "yes".into())],
            e,
        ),
        (
            "/regulations".into(),
            vec![
                ("regulationType", "SUPPRESS_ONLY".into()),
                ("subjectIds", "u1".into()),
            ],
            a,
        ),
        (
            "/users".into(),
            vec![
                ("username", "intruder".into()),
                ("role", "admin".into()),
                ("password", PASSWORD.into()),
            ],
            a,
        ),
        (
            format!("/users/{usr}/role"),
            vec![("role", "admin".into())],
            a,
        ),
        (
            format!("/users/{usr}/password"),
            vec![("password", "another long passphrase".into())],
            a,
        ),
        (format!("/users/{usr}/sessions/revoke"), none(), a),
        (
            format!("/users/{usr}/delete"),
            vec![("confirm", "yes".into())],
            a,
        ),
        (
            "/tokens".into(),
            vec![("name", "intruder".into()), ("role", "admin".into())],
            a,
        ),
    ]
}

fn rank(role: &str) -> u8 {
    ["viewer", "editor", "admin"]
        .iter()
        .position(|r| *r == role)
        .unwrap_or(9) as u8
}

/// What a refused form could have changed, read through the admin API.
async fn state(s: &TestServer) -> Vec<Value> {
    let mut out = Vec::new();
    for path in [
        "/sources",
        "/destinations",
        "/users",
        "/tokens",
        "/computed-traits",
        "/regulations",
    ] {
        let (status, mut body) = s.admin(Method::GET, path, None).await;
        assert_eq!(status, 200);
        if let Some(list) = body["data"].as_array_mut() {
            for item in list {
                if let Some(o) = item.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        out.push(body);
    }
    // Sign-ins are entries too; only the others count as changes here.
    let changes: Vec<Value> = audit_log(s, "?limit=500")
        .await
        .into_iter()
        .filter(|e| e["resource"] != json!("session"))
        .collect();
    out.push(Value::Array(changes));
    out
}

#[tokio::test]
async fn every_page_and_form_answers_each_role_as_its_route_needs() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let dst = s
        .webhook(&src, json!(["https://example.com/hook"]), None)
        .await;
    let def = json!({"kind": "counter", "event": "Bought"});
    let (_, ct) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Orders", "definition": def})),
        )
        .await;
    let ct = ct["id"].as_str().unwrap().to_owned();
    let aud_def = json!({"condition": {"performed": {"event": "Bought"}}});
    let (_, aud) = s
        .admin(
            Method::POST,
            "/audiences",
            Some(json!({"name": "Buyers", "definition": aud_def})),
        )
        .await;
    let aud = aud["id"].as_str().unwrap().to_owned();
    let target = user(&s, "target", "viewer").await;
    let mut cookies = Vec::new();
    for role in ["viewer", "editor", "admin"] {
        user(&s, &format!("{role}-person"), role).await;
        let cookie = sign_in_as(&s, &format!("{role}-person"), PASSWORD)
            .await
            .expect("signs in");
        cookies.push((role, cookie));
    }
    let http = client();
    for (path, needed) in pages(&src, &dst, &ct, &aud, &target) {
        for (role, cookie) in &cookies {
            let res = http
                .get(s.url(&path))
                .header(COOKIE, cookie)
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let location = res
                .headers()
                .get("location")
                .map(|l| l.to_str().unwrap().to_owned());
            let html = res.text().await.unwrap();
            if rank(role) >= rank(needed) {
                if status == 303 {
                    // A page that leads on (the debugger to the only source).
                    let to = location.unwrap_or_default();
                    assert!(!to.starts_with("/signin"), "GET {path} as {role}: {to}");
                    continue;
                }
                assert_eq!(status, 200, "GET {path} as {role}");
                // The navigation shows admins' pages to admins only.
                assert_eq!(
                    html.contains("href=\"/audit\""),
                    *role == "admin",
                    "nav of {path} as {role}"
                );
                if *role == "viewer" {
                    assert!(html.contains("<body class=\"read-only\">"), "{path}");
                }
            } else {
                assert_eq!(status, 403, "GET {path} as {role}");
                assert!(
                    html.contains("forbidden")
                        && html.contains(&format!("needs the {needed} role")),
                    "{html}"
                );
            }
        }
    }
    let mut refused = 0;
    for (path, fields, needed) in forms(&src, &dst, &ct, &target) {
        for (role, cookie) in &cookies {
            if rank(role) >= rank(needed) {
                continue;
            }
            // The session's own CSRF token, from a page the role may open.
            let page = http
                .get(s.url("/account"))
                .header(COOKIE, cookie)
                .send()
                .await
                .unwrap();
            let csrf = hidden_csrf(&page.text().await.unwrap());
            let mut form: Vec<(&str, String)> = vec![("csrf", csrf)];
            form.extend(fields.iter().cloned());
            let before = state(&s).await;
            let res = http
                .post(s.url(&path))
                .header(COOKIE, cookie)
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status().as_u16(), 403, "POST {path} as {role}");
            assert_eq!(
                state(&s).await,
                before,
                "POST {path} as {role} changed something"
            );
            refused += 1;
        }
    }
    assert!(refused >= 30, "{refused}");
    s.stop().await;
}

#[tokio::test]
async fn an_admin_adds_a_user_on_the_users_page_and_the_log_shows_it() {
    let s = TestServer::start().await;
    user(&s, "boss", "admin").await;
    let cookie = sign_in_as(&s, "boss", PASSWORD).await.expect("signs in");
    let http = client();
    let page = http
        .get(s.url("/users"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let csrf = hidden_csrf(&page.text().await.unwrap());
    let res = http
        .post(s.url("/users"))
        .header(COOKIE, &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("username", "newbie"),
            ("role", "editor"),
            ("password", "short"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("password: must be at least 12 characters")
    );
    let res = http
        .post(s.url("/users"))
        .header(COOKIE, &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("username", "newbie"),
            ("role", "editor"),
            ("password", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert!(sign_in_as(&s, "newbie", PASSWORD).await.is_ok());
    let audit = http
        .get(s.url("/audit?actor=boss&resource=user"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(audit.status(), 200);
    let html = audit.text().await.unwrap();
    assert!(
        html.contains("newbie") && html.contains("dashboard"),
        "{html}"
    );
    s.stop().await;
}
