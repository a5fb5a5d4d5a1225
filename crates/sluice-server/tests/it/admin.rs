//! The admin API: CRUD, secrets, validation, the debugger view.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::TestServer;

#[tokio::test]
async fn admin_api_requires_the_bearer_token() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/api/v1/sources")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .http
        .get(s.url("/api/v1/sources"))
        .bearer_auth("wrong-token-000000")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], json!("unauthorized"));
}

#[tokio::test]
async fn source_crud_shows_the_write_key_only_on_create_and_rotate() {
    let s = TestServer::start().await;
    let (id, key) = s.source("web").await;
    assert!(key.len() >= 32);
    let (status, got) = s.admin(Method::GET, &format!("/sources/{id}"), None).await;
    assert_eq!(status, 200);
    assert!(got.get("write_key").is_none());
    assert_eq!(got["write_key_hint"], json!(format!("{}…", &key[..4])));
    let (_, list) = s.admin(Method::GET, "/sources", None).await;
    assert!(
        !list.to_string().contains(&key),
        "list must not leak the key"
    );

    let (status, renamed) = s
        .admin(
            Method::PATCH,
            &format!("/sources/{id}"),
            Some(json!({"name": "site"})),
        )
        .await;
    assert_eq!((status, renamed["name"].clone()), (200, json!("site")));

    let (status, rotated) = s
        .admin(Method::POST, &format!("/sources/{id}/rotate-key"), None)
        .await;
    assert_eq!(status, 200);
    let new_key = rotated["write_key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    let call = json!({"userId": "u", "event": "e"}).to_string();
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.clone()).await.0,
        401
    );
    assert_eq!(s.collect("/v1/track", Some(&new_key), call).await.0, 200);

    let (status, _) = s
        .admin(Method::DELETE, &format!("/sources/{id}"), None)
        .await;
    assert_eq!(status, 204);
    assert_eq!(
        s.admin(Method::GET, &format!("/sources/{id}"), None)
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn destination_validation_names_the_field() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let six: Vec<Value> = (0..6)
        .map(|i| json!({"url": format!("https://h{i}.example/hook")}))
        .collect();
    let cases = [
        (
            json!({"name": "d", "source_ids": [src], "settings": {"urls": six}}),
            "settings.urls",
        ),
        (
            json!({"name": "d", "settings": {"urls": [{"url": "hooks.example/x"}]}}),
            "settings.urls[0].url",
        ),
        (
            json!({"name": "d", "settings": {"urls": [{"url": "ftp://hooks.example/x"}]}}),
            "settings.urls[0].url",
        ),
        (
            json!({"name": "d", "settings": {"urls": [{"url": "https://h.example", "headers": {"X-A": "a\r\nB: c"}}]}}),
            "settings.urls[0].headers.X-A",
        ),
        (
            json!({"name": "d", "settings": {"urls": [{"url": "https://h.example", "headers": {"Bad Name": "v"}}]}}),
            "settings.urls[0].headers.Bad Name",
        ),
        (json!({"name": "", "settings": {"urls": []}}), "name"),
        (
            json!({"name": "hooks\u{1b}[2J", "settings": {"urls": []}}),
            "name: must not contain control characters",
        ),
        (json!({"name": "d", "type": "Mixpanel"}), "type"),
        (
            json!({"name": "d", "source_ids": ["src_missing"]}),
            "source",
        ),
    ];
    for (body, field) in cases {
        let (status, resp) = s
            .admin(Method::POST, "/destinations", Some(body.clone()))
            .await;
        assert!(status == 400 || status == 404, "{body} → {status} {resp}");
        let msg = resp["message"].as_str().unwrap_or("");
        assert!(msg.contains(field), "message {msg:?} should name {field}");
        assert_eq!(resp["success"], json!(false));
    }
    assert_eq!(
        s.admin(Method::GET, "/destinations", None).await.1["data"],
        json!([])
    );
}

#[tokio::test]
async fn destination_crud_masks_the_shared_secret() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let id = s
        .webhook(
            &src,
            json!([{"url": "https://hooks.example/a", "headers": {"X-Team": "data"}}]),
            Some("topsecret123"),
        )
        .await;
    let (status, d) = s
        .admin(Method::GET, &format!("/destinations/{id}"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(d["settings"]["sharedSecret"], json!("tops…"));
    assert_eq!(d["settings"]["urls"][0]["headers"]["X-Team"], json!("data"));
    assert_eq!(d["source_ids"], json!([src]));
    assert!(!d.to_string().contains("topsecret123"));

    let (status, d) = s
        .admin(
            Method::PATCH,
            &format!("/destinations/{id}"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!((status, d["enabled"].clone()), (200, json!(false)));
    let (_, catalog) = s.admin(Method::GET, "/catalog/destinations", None).await;
    assert_eq!(catalog["data"][0]["name"], json!("Webhooks"));
    assert_eq!(
        s.admin(Method::DELETE, &format!("/destinations/{id}"), None)
            .await
            .0,
        204
    );
    assert_eq!(
        s.admin(Method::GET, &format!("/destinations/{id}"), None)
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn recent_events_page_newest_first() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    for i in 0..5 {
        let body = json!({"userId": "u", "event": format!("e{i}")}).to_string();
        assert_eq!(s.collect("/v1/track", Some(&key), body).await.0, 200);
    }
    let (_, page1) = s
        .admin(Method::GET, &format!("/sources/{src}/events?limit=2"), None)
        .await;
    let names = |p: &Value| -> Vec<String> {
        p["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"]["event"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&page1), ["e4", "e3"]);
    let before = page1["next_before"].as_i64().unwrap();
    let (_, page2) = s
        .admin(
            Method::GET,
            &format!("/sources/{src}/events?limit=2&before={before}"),
            None,
        )
        .await;
    assert_eq!(names(&page2), ["e2", "e1"]);
    let (status, bad) = s
        .admin(
            Method::GET,
            &format!("/sources/{src}/events?limit=zero"),
            None,
        )
        .await;
    assert_eq!((status, bad["code"].clone()), (400, json!("invalid_query")));
}

#[tokio::test]
async fn events_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(crate::support::test_config(dir.path())).await;
    let (src, key) = s.source("web").await;
    assert_eq!(
        s.collect(
            "/v1/track",
            Some(&key),
            json!({"userId": "u", "event": "kept"}).to_string()
        )
        .await
        .0,
        200
    );
    s.stop().await;
    let s = TestServer::start_with(crate::support::test_config(dir.path())).await;
    let events = s.events(&src).await;
    assert_eq!(events[0]["event"]["event"], json!("kept"));
    assert_eq!(
        s.collect(
            "/v1/track",
            Some(&key),
            json!({"userId": "u", "event": "again"}).to_string()
        )
        .await
        .0,
        200
    );
}

#[tokio::test]
async fn wrong_methods_and_malformed_ids_answer_in_the_json_error_shape() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/v1/track")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], json!("method_not_allowed"));
    let (status, body) = s.admin(Method::GET, "/deliveries/not-a-number", None).await;
    assert_eq!((status, body["code"].clone()), (404, json!("not_found")));
    // Path parameters that do not parse (not an integer, not UTF-8 once
    // decoded) name nothing: JSON 404s, not axum's plain-text 400s.
    for path in [
        "/deliveries/abc/replay",
        "/deliveries/99999999999999999999999/replay",
        "/sources/%FF",
        "/computed-traits/%FF",
    ] {
        let method = if path.ends_with("replay") {
            Method::POST
        } else {
            Method::GET
        };
        let (status, body) = s.admin(method, path, None).await;
        assert_eq!(
            (status, body["code"].clone()),
            (404, json!("not_found")),
            "{path}: {body}"
        );
        assert!(
            !body.to_string().contains("abc"),
            "{path}: the parameter is not quoted"
        );
        let kind = if path.starts_with("/deliveries") {
            "delivery"
        } else if path.starts_with("/sources") {
            "source"
        } else {
            "computed trait"
        };
        assert_eq!(
            body["message"],
            json!(format!("{kind} not found")),
            "{path}"
        );
    }
    let r = s
        .http
        .get(s.url("/v1/projects/%FF/settings"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], json!("not_found"));
    let (status, body) = s
        .admin(
            Method::POST,
            "/destinations",
            Some(json!({"name": "d", "source_ids": ["src_nope"]})),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("invalid_field"))
    );
    assert!(body["message"].as_str().unwrap().starts_with("source_ids:"));
}

#[tokio::test]
async fn browser_settings_point_back_at_sluice_and_are_never_cached() {
    let s = TestServer::start().await;
    let (_, key) = s.source("web").await;
    let r = s
        .http
        .get(s.url(&format!("/v1/projects/{key}/settings")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // It echoes the request's Host: no shared cache may keep it.
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.unwrap();
    let host = s.base.trim_start_matches("http://");
    assert_eq!(
        body["integrations"]["Segment.io"]["apiHost"],
        json!(format!("{host}/v1"))
    );
    let r = s
        .http
        .get(s.url("/v1/projects/wrong-key/settings"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

/// A misspelt optional field is a 400 naming it, never silently ignored:
/// ignored, `enabeld` would create an enabled source, `destinaton_ids` an
/// unconnected trait, and a misspelt scope would widen a replay or a
/// deletion to everything.
#[tokio::test]
async fn misspelt_fields_are_refused_not_ignored() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let dst = s
        .webhook(&src, json!(["https://hooks.example/a"]), None)
        .await;
    let (_, ct) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Orders", "definition": {"kind": "counter", "event": "Order Completed"}})),
        )
        .await;
    let ct = ct["id"].as_str().unwrap().to_owned();
    let definition = json!({"condition": {"performed": {"event": "Signed Up"}}});
    for (method, path, body, field) in [
        (
            Method::POST,
            "/sources".to_owned(),
            json!({"name": "typo", "enabeld": false}),
            "enabeld",
        ),
        (
            Method::POST,
            "/computed-traits".to_owned(),
            json!({"name": "Orders 2", "destinaton_ids": [dst],
                   "definition": {"kind": "counter", "event": "Order Completed"}}),
            "destinaton_ids",
        ),
        (
            Method::POST,
            "/audiences".to_owned(),
            json!({"name": "Signed up", "destinaton_ids": [dst], "definition": definition}),
            "destinaton_ids",
        ),
        (
            Method::PATCH,
            format!("/computed-traits/{ct}"),
            json!({"nmae": "x"}),
            "nmae",
        ),
        (
            Method::POST,
            format!("/destinations/{dst}/replay"),
            json!({"messageId": "m-1"}),
            "messageId",
        ),
        (
            Method::POST,
            "/regulations".to_owned(),
            json!({"regulationType": "DELETE_ONLY", "subjectIds": ["u1"], "sourceID": src}),
            "sourceID",
        ),
    ] {
        let (status, resp) = s.admin(method.clone(), &path, Some(body.clone())).await;
        assert_eq!(status, 400, "{method} {path} {body} → {resp}");
        assert_eq!(resp["code"], json!("invalid_field"), "{resp}");
        let message = resp["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with(&format!("{field}: is not a known field")),
            "{message}"
        );
    }
    let (_, sources) = s.admin(Method::GET, "/sources", None).await;
    assert_eq!(sources["data"].as_array().unwrap().len(), 1, "{sources}");
    let (_, regulations) = s.admin(Method::GET, "/regulations", None).await;
    assert_eq!(regulations["data"], json!([]), "{regulations}");
}

#[tokio::test]
async fn names_with_control_characters_are_refused_wherever_a_name_is_set() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    for (method, path, body) in [
        (Method::POST, "/sources".to_owned(), json!({"name": "a\nb"})),
        (
            Method::PATCH,
            format!("/sources/{src}"),
            json!({"name": "web\u{7}"}),
        ),
        (
            Method::POST,
            "/computed-traits".to_owned(),
            json!({"name": "Orders\r\nX", "key": "orders",
                   "definition": {"kind": "counter", "event": "E"}}),
        ),
    ] {
        let (status, resp) = s.admin(method.clone(), &path, Some(body.clone())).await;
        assert_eq!(status, 400, "{method} {path} → {resp}");
        assert_eq!(
            resp["message"],
            json!("name: must not contain control characters"),
            "{resp}"
        );
    }
    let (_, source) = s.admin(Method::GET, &format!("/sources/{src}"), None).await;
    assert_eq!(source["name"], json!("web"), "{source}");
    let (status, resp) = s
        .admin(
            Method::POST,
            "/sources",
            Some(json!({"name": "Web — café ✓"})),
        )
        .await;
    assert_eq!(status, 201, "{resp}");
}
