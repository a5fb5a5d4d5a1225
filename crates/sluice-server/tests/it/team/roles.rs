//! Every admin route × every role, read off the OpenAPI document: a role
//! the route allows gets past the check (whatever the handler then says),
//! a lower one gets `403 forbidden` in the stable error shape, and nothing
//! changes.

use reqwest::Method;
use serde_json::{Value, json};

use super::{PASSWORD, call, token};
use crate::support::{ADMIN_TOKEN, TestServer};

/// `(method, path, required role)` of every admin operation.
fn admin_operations() -> Vec<(Method, String, String)> {
    let doc: Value = serde_json::from_str(&sluice_api::openapi::document_json()).unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(route) = path.strip_prefix("/api/v1") else {
            continue;
        };
        for (method, op) in item.as_object().unwrap() {
            let role = op["x-sluice-role"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} states no role"))
                .to_owned();
            let security = json!([{"adminToken": []}, {"apiToken": [role.clone()]}]);
            assert_eq!(op["security"], security, "{method} {path}");
            if role != "viewer" {
                assert!(op["responses"].get("403").is_some(), "{method} {path}");
            }
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            out.push((method, route.to_owned(), role));
        }
    }
    out
}

fn rank(role: &str) -> u8 {
    match role {
        "viewer" => 0,
        "editor" => 1,
        "admin" => 2,
        other => panic!("unknown role {other}"),
    }
}

/// Real resources, so that a refused call would have had something to change.
struct Fixtures {
    ids: Vec<(&'static str, String)>,
}

impl Fixtures {
    async fn make(s: &TestServer) -> Fixtures {
        let (source, _) = s.source("web").await;
        let dest = s
            .webhook(
                &source,
                json!(["https://example.com/hook"]),
                Some("s3cret-0123456789"),
            )
            .await;
        let user = super::user(s, "fixture", "viewer").await;
        let (_, tok) = s
            .admin(
                Method::POST,
                "/tokens",
                Some(json!({"name": "fixture", "role": "viewer"})),
            )
            .await;
        let def = json!({"kind": "counter", "event": "Bought"});
        let (status, ct) = s
            .admin(
                Method::POST,
                "/computed-traits",
                Some(json!({"name": "Orders", "definition": def})),
            )
            .await;
        assert_eq!(status, 201, "{ct}");
        let aud_def = json!({"condition": {"performed": {"event": "Bought"}}});
        let (status, aud) = s
            .admin(
                Method::POST,
                "/audiences",
                Some(json!({"name": "Buyers", "definition": aud_def})),
            )
            .await;
        assert_eq!(status, 201, "{aud}");
        Fixtures {
            ids: vec![
                ("sources", source),
                ("destinations", dest.clone()),
                ("users", user),
                ("tokens", tok["id"].as_str().unwrap().to_owned()),
                ("computed-traits", ct["id"].as_str().unwrap().to_owned()),
                ("audiences", aud["id"].as_str().unwrap().to_owned()),
                ("destination_id", dest),
            ],
        }
    }

    fn id(&self, kind: &str) -> &str {
        &self.ids.iter().find(|(k, _)| *k == kind).unwrap().1
    }

    /// `route` with its parameters replaced by real ids.
    fn real(&self, route: &str) -> String {
        let kind = route.split('/').nth(1).unwrap_or("");
        route
            .replace("{destination_id}", self.id("destination_id"))
            .replace("{session_id}", "sess_none")
            .replace(
                "{id}",
                match kind {
                    "sources" | "destinations" | "users" | "tokens" | "computed-traits"
                    | "audiences" => self.id(kind),
                    _ => "1",
                },
            )
    }
}

/// `route` with ids that do not exist: an allowed call reaches its handler
/// and changes nothing.
fn missing(route: &str) -> String {
    route
        .split('/')
        .map(|seg| if seg.starts_with('{') { "999999" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// A body that would make the change, had the call been allowed.
fn body_for(method: &Method, route: &str) -> Option<Value> {
    if *method == Method::GET || *method == Method::DELETE {
        return None;
    }
    Some(match route {
        "/sources" => json!({"name": "intruder"}),
        "/sources/{id}" | "/destinations/{id}" => json!({"name": "renamed"}),
        "/destinations" => json!({"name": "intruder", "type": "Webhooks"}),
        "/users" => json!({"username": "intruder", "role": "admin", "password": PASSWORD}),
        "/users/{id}" => json!({"role": "admin"}),
        "/tokens" => json!({"name": "intruder", "role": "admin"}),
        "/regulations" => json!({"regulationType": "SUPPRESS_ONLY", "subjectIds": ["u1"]}),
        "/sources/{id}/rules" => json!({"blocked_events": ["Secret"]}),
        "/destinations/{id}/filters" => json!({"filters": []}),
        _ => json!({}),
    })
}

/// Everything a refused call could have changed, read with the admin token.
async fn state(s: &TestServer, f: &Fixtures) -> Vec<Value> {
    let mut out = Vec::new();
    let reads = [
        "/sources".to_owned(),
        "/destinations".to_owned(),
        "/users".to_owned(),
        "/tokens".to_owned(),
        "/computed-traits".to_owned(),
        "/audiences".to_owned(),
        "/regulations".to_owned(),
        "/audit?limit=500".to_owned(),
        format!("/sources/{}/rules", f.id("sources")),
        format!("/destinations/{}/filters", f.id("destinations")),
    ];
    for path in reads {
        let (status, mut body) = s.admin(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        // Counters the engines move by themselves are not changes.
        if let Some(list) = body["data"].as_array_mut() {
            for item in list {
                if let Some(o) = item.as_object_mut() {
                    o.remove("status");
                    o.remove("last_used_at");
                }
            }
        }
        out.push(body);
    }
    out
}

#[tokio::test]
async fn every_admin_route_answers_each_role_as_the_document_says_and_a_403_changes_nothing() {
    let s = TestServer::start().await;
    let f = Fixtures::make(&s).await;
    let tokens = [
        ("viewer", token(&s, "viewer").await),
        ("editor", token(&s, "editor").await),
        ("admin", token(&s, "admin").await),
        ("admin", ADMIN_TOKEN.to_owned()),
    ];
    let operations = admin_operations();
    assert!(operations.len() > 50, "{} operations", operations.len());
    let mut refused = 0;
    for (method, route, needed) in &operations {
        for (role, tok) in &tokens {
            let what = format!("{method} {route} as {role}");
            if rank(role) >= rank(needed) {
                let (status, body) = call(&s, tok, method.clone(), &missing(route), None).await;
                assert!(
                    status != 403 && status != 401,
                    "{what}: allowed, got {status} {body}"
                );
                continue;
            }
            let before = state(&s, &f).await;
            let body = body_for(method, route);
            let (status, answer) = call(&s, tok, method.clone(), &f.real(route), body).await;
            assert_eq!(status, 403, "{what}: {answer}");
            assert_eq!(answer["success"], json!(false), "{what}");
            assert_eq!(answer["code"], json!("forbidden"), "{what}");
            let message = answer["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("needs the {needed} role")),
                "{what}: {message}"
            );
            assert_eq!(state(&s, &f).await, before, "{what} changed something");
            refused += 1;
        }
    }
    assert!(refused > 40, "{refused} refusals checked");
    s.stop().await;
}

#[tokio::test]
async fn a_users_token_acts_with_the_lower_of_its_role_and_the_users() {
    let s = TestServer::start().await;
    let user = super::user(&s, "erin", "editor").await;
    let (status, body) = s
        .admin(
            Method::POST,
            "/tokens",
            Some(json!({"name": "erin's laptop", "role": "admin", "user_id": user})),
        )
        .await;
    assert_eq!(status, 400, "above the user's role: {body}");
    assert_eq!(body["code"], json!("invalid_field"));
    let (status, body) = s
        .admin(
            Method::POST,
            "/tokens",
            Some(json!({"name": "erin's laptop", "role": "editor", "user_id": user})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let tok = body["token"].as_str().unwrap().to_owned();
    let (status, me) = call(&s, &tok, Method::GET, "/me", None).await;
    assert_eq!((status, me["role"].clone()), (200, json!("editor")));
    let (status, _) = call(
        &s,
        &tok,
        Method::POST,
        "/sources",
        Some(json!({"name": "a"})),
    )
    .await;
    assert_eq!(status, 201);
    // The user is demoted: the token follows at once.
    let (status, _) = s
        .admin(
            Method::PATCH,
            &format!("/users/{user}"),
            Some(json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, me) = call(&s, &tok, Method::GET, "/me", None).await;
    assert_eq!((status, me["role"].clone()), (200, json!("viewer")));
    let (status, _) = call(
        &s,
        &tok,
        Method::POST,
        "/sources",
        Some(json!({"name": "b"})),
    )
    .await;
    assert_eq!(status, 403);
    // The user is deleted: so is the token.
    let (status, _) = s
        .admin(Method::DELETE, &format!("/users/{user}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, body) = call(&s, &tok, Method::GET, "/me", None).await;
    assert_eq!(status, 401, "{body}");
    s.stop().await;
}
