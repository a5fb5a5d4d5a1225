//! The collection API as Segment libraries use it: paths, auth forms,
//! encodings, CORS, enrichment.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

use crate::support::{TestServer, basic};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip")
}

fn call(kind: &str) -> Value {
    match kind {
        "track" => json!({"userId": "u1", "event": "Clicked"}),
        "alias" => json!({"userId": "u1", "previousId": "anon-1"}),
        "group" => json!({"userId": "u1", "groupId": "g1"}),
        _ => json!({"userId": "u1"}),
    }
}

#[tokio::test]
async fn every_single_call_path_stores_its_type() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let paths = [
        ("track", "track"),
        ("identify", "identify"),
        ("page", "page"),
        ("screen", "screen"),
        ("group", "group"),
        ("alias", "alias"),
        ("t", "track"),
        ("i", "identify"),
        ("p", "page"),
        ("s", "screen"),
        ("g", "group"),
        ("a", "alias"),
    ];
    for (path, kind) in paths {
        let (status, body) = s
            .collect(&format!("/v1/{path}"), Some(&key), call(kind).to_string())
            .await;
        assert_eq!(
            (status, &body),
            (200, &json!({"success": true})),
            "/v1/{path}"
        );
    }
    let events = s.events(&src).await;
    let mut types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    types.reverse();
    let expected: Vec<&str> = paths.iter().map(|(_, k)| *k).collect();
    assert_eq!(types, expected);
}

#[tokio::test]
async fn batch_import_and_browser_batch_paths_accept_batches() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    for path in ["/v1/batch", "/v1/import", "/v1/b"] {
        let body = json!({"batch": [{"type": "track", "userId": "u", "event": path}]});
        let (status, _) = s.collect(path, Some(&key), body.to_string()).await;
        assert_eq!(status, 200, "{path}");
    }
    assert_eq!(s.events(&src).await.len(), 3);
}

#[tokio::test]
async fn every_write_key_form_is_accepted() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let body = |extra: Value| {
        let mut b = json!({"userId": "u", "event": "e"});
        if let (Some(o), Some(e)) = (b.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        b.to_string()
    };
    let url = s.url("/v1/track");
    // Basic with the trailing colon, and without it.
    let r = s
        .http
        .post(&url)
        .header("authorization", basic(&key))
        .body(body(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let plain = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &key)
    );
    let r = s
        .http
        .post(&url)
        .header("authorization", plain)
        .body(body(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // writeKey in the body only (analytics-python >= 2.3, analytics-node 2.x).
    let r = s
        .http
        .post(&url)
        .body(body(json!({"writeKey": key})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Bearer token plus the body writeKey.
    let r = s
        .http
        .post(&url)
        .bearer_auth("opaque")
        .body(body(json!({"writeKey": key})))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = s.events(&src).await;
    assert_eq!(events.len(), 4);
    assert!(
        events.iter().all(|e| e["event"].get("writeKey").is_none()),
        "writeKey must not be stored"
    );
}

#[tokio::test]
async fn unknown_missing_and_disabled_keys_get_401_in_the_error_shape() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let ok = json!({"userId": "u", "event": "e"}).to_string();
    let (status, body) = s
        .collect("/v1/track", Some("nope-not-a-key"), ok.clone())
        .await;
    assert_eq!(status, 401);
    assert_eq!(body["success"], json!(false));
    assert_eq!(body["code"], json!("unauthorized"));
    let (status, _) = s.collect("/v1/track", None, ok.clone()).await;
    assert_eq!(status, 401);
    let (status, _) = s
        .admin(
            reqwest::Method::PATCH,
            &format!("/sources/{src}"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = s.collect("/v1/track", Some(&key), ok).await;
    assert_eq!(status, 401);
    assert!(body["message"].as_str().unwrap_or("").contains("disabled"));
    assert!(s.events(&src).await.is_empty());
}

#[tokio::test]
async fn gzip_and_text_plain_bodies_are_accepted() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let body = json!({"batch": [{"type": "track", "userId": "u", "event": "zipped"}]}).to_string();
    let r = s
        .http
        .post(s.url("/v1/batch"))
        .header("authorization", basic(&key))
        .header("content-encoding", "gzip")
        .body(gzip(body.as_bytes()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .http
        .post(s.url("/v1/t"))
        .header("content-type", "text/plain")
        .body(json!({"writeKey": key, "userId": "u", "event": "plain"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let names: Vec<Value> = s
        .events(&src)
        .await
        .iter()
        .map(|e| e["event"]["event"].clone())
        .collect();
    assert_eq!(names, vec![json!("plain"), json!("zipped")]);
}

#[tokio::test]
async fn gzip_bomb_is_refused_without_inflating_it() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    // 64 MiB of zeros compresses to ~64 KiB; reading must stop at the limit.
    let zeros = vec![b' '; 64 * 1024 * 1024];
    let bomb = gzip(&zeros);
    assert!(bomb.len() < 500 * 1024);
    let r = s
        .http
        .post(s.url("/v1/batch"))
        .header("authorization", basic(&key))
        .header("content-encoding", "gzip")
        .body(bomb)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], json!("body_too_large"));
    assert!(s.events(&src).await.is_empty());
}

#[tokio::test]
async fn invalid_json_and_invalid_items_are_rejected_whole() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let (status, body) = s.collect("/v1/track", Some(&key), "{not json").await;
    assert_eq!((status, body["code"].clone()), (400, json!("invalid_json")));
    let batch = json!({"batch": [
        {"type": "track", "userId": "u", "event": "ok"},
        {"type": "track", "userId": "u", "event": "ok"},
        {"type": "track", "userId": "u"},
    ]});
    let (status, body) = s.collect("/v1/batch", Some(&key), batch.to_string()).await;
    assert_eq!(status, 400);
    assert!(
        body["message"].as_str().unwrap_or("").contains("batch[2]"),
        "{body}"
    );
    let (status, body) = s
        .collect(
            "/v1/batch",
            Some(&key),
            json!({"batch": [{"userId": "u"}]}).to_string(),
        )
        .await;
    assert_eq!((status, body["code"].clone()), (400, json!("missing_type")));
    let (status, body) = s
        .collect(
            "/v1/batch",
            Some(&key),
            json!({"batch": [{"type": "boom", "userId": "u"}]}).to_string(),
        )
        .await;
    assert_eq!((status, body["code"].clone()), (400, json!("unknown_type")));
    for (path, bad) in [
        ("/v1/identify", json!({"traits": {}})),
        ("/v1/alias", json!({"userId": "u"})),
        ("/v1/group", json!({"userId": "u"})),
        ("/v1/track", json!({"userId": "u"})),
    ] {
        let (status, body) = s.collect(path, Some(&key), bad.to_string()).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body["message"].is_string() && body["code"].is_string());
    }
    assert!(
        s.events(&src).await.is_empty(),
        "nothing may be half-accepted"
    );
}

#[tokio::test]
async fn cors_preflight_allows_browser_clients() {
    let s = TestServer::start().await;
    let r = s
        .http
        .request(reqwest::Method::OPTIONS, s.url("/v1/t"))
        .header("origin", "https://shop.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let h = r.headers();
    assert_eq!(
        h.get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("https://shop.example")
    );
    assert!(
        h.get("access-control-allow-methods")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .contains("POST")
    );
}

#[tokio::test]
async fn stored_events_are_enriched_and_skew_corrected() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let batch = json!({
        "batch": [{"type": "track", "userId": "u", "event": "e", "timestamp": "2024-01-01T19:11:01.152Z",
                   "context": {"page": {"path": "/x"}}}],
        "sentAt": "2024-01-01T19:11:01.169Z",
        "context": {"library": {"name": "analytics-go", "version": "2.1.0"}, "page": {"path": "/batch"}},
    });
    let (status, _) = s.collect("/v1/batch", Some(&key), batch.to_string()).await;
    assert_eq!(status, 200);
    let events = s.events(&src).await;
    let e = &events[0]["event"];
    let parse = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    // timestamp = receivedAt - (sentAt - originalTimestamp) = receivedAt - 17 ms
    assert_eq!(
        (parse(&e["receivedAt"]) - parse(&e["timestamp"])).num_milliseconds(),
        17
    );
    assert_eq!(e["originalTimestamp"], json!("2024-01-01T19:11:01.152Z"));
    assert_eq!(
        e["context"]["page"]["path"],
        json!("/x"),
        "item context wins"
    );
    assert_eq!(
        e["context"]["library"]["name"],
        json!("analytics-go"),
        "batch context merged"
    );
    assert_eq!(e["context"]["ip"], json!("127.0.0.1"));
    assert_eq!(e["messageId"].as_str().map(str::len), Some(36));
}

#[tokio::test]
async fn unknown_collection_path_is_a_json_404() {
    let s = TestServer::start().await;
    let (_, key) = s.source("web").await;
    let (status, body) = s.collect("/v1/nope", Some(&key), "{}").await;
    assert_eq!(status, 404);
    assert_eq!(body["success"], json!(false));
}

#[tokio::test]
async fn analytics_go_vectors_are_accepted() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/analytics-go");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!("missing {}", dir.display());
    };
    let s = TestServer::start().await;
    let (src, key) = s.source("go").await;
    let mut sent = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let body = std::fs::read(&path).unwrap();
        let (status, resp) = s.collect("/v1/batch", Some(&key), body).await;
        assert_eq!(status, 200, "{}: {resp}", path.display());
        sent += 1;
    }
    assert!(sent >= 5, "expected the five call vectors, found {sent}");
    assert!(s.events(&src).await.len() >= 5);
}
