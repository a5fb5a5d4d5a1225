//! The OpenAPI document (`sluice_api::openapi`): the checked-in copy matches
//! the code, the server serves it behind the admin token, every documented
//! operation is routed, and nothing is routed that it does not document.
//! (Its validity as OpenAPI 3.1 is checked by `browser/tests/openapi.test.mjs`
//! with a JSON Schema validator of the official 3.1 schema.)

use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{ADMIN_TOKEN, TestServer, read};

fn checked_in() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn checked_in_document_is_what_the_code_generates() {
    let generated = sluice_api::openapi::document_json();
    let path = checked_in();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).expect("writing docs/openapi.json");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/openapi.json differs from the document the code generates.\n\
         Regenerate it with either of:\n  \
         UPDATE_OPENAPI=1 cargo test -p sluice-server --test it openapi\n  \
         cargo run -p sluice -- openapi > docs/openapi.json\n\
         and commit the result (read the diff: it is the API change)."
    );
}

#[test]
fn document_is_openapi_3_1_with_unique_operation_ids_and_both_security_schemes() {
    let doc: Value = serde_json::from_str(&sluice_api::openapi::document_json()).unwrap();
    assert_eq!(doc["openapi"], json!("3.1.0"));
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["adminToken"]["scheme"], json!("bearer"));
    assert_eq!(schemes["writeKey"]["scheme"], json!("basic"));
    assert_eq!(doc["security"], json!([{"adminToken": []}]));
    let error = &doc["components"]["schemas"]["ErrorBody"]["properties"];
    for field in ["success", "code", "message"] {
        assert!(error.get(field).is_some(), "ErrorBody lacks {field}");
    }
    let mut ids = std::collections::HashSet::new();
    for (path, op) in operations(&doc) {
        let id = op.1["operationId"].as_str().unwrap_or_default().to_owned();
        assert!(ids.insert(id.clone()), "operationId {id} repeats ({path})");
        let security = &op.1["security"];
        if path.starts_with("/v1/{kind}") {
            assert_eq!(security, &json!([{"writeKey": []}, {}]), "{path}");
        }
    }
}

/// `(path, (method, operation))` of every documented operation.
fn operations(doc: &Value) -> Vec<(String, (Method, Value))> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (name, op) in item.as_object().expect("path item") {
            let method = Method::from_bytes(name.to_uppercase().as_bytes()).expect("method");
            out.push((path.clone(), (method, op.clone())));
        }
    }
    out
}

/// A concrete path for a templated one: ids that do not exist (the handler
/// answers its own 404, which is not the router's), a real call type.
fn concrete(path: &str) -> String {
    path.replace("{kind}", "track")
        .split('/')
        .map(|seg| if seg.starts_with('{') { "999999" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

#[tokio::test]
async fn every_documented_operation_is_routed_and_no_other_method_is() {
    let s = TestServer::start().await;
    let doc: Value = serde_json::from_str(&sluice_api::openapi::document_json()).unwrap();
    let documented = operations(&doc);
    assert!(documented.len() > 30, "{} operations", documented.len());
    let mut paths: Vec<&str> = documented.iter().map(|(p, _)| p.as_str()).collect();
    paths.dedup();
    for path in paths {
        let url = s.url(&concrete(path));
        for method in METHODS {
            let mut req = s
                .http
                .request(method.clone(), &url)
                .bearer_auth(ADMIN_TOKEN);
            if method != Method::GET {
                req = req.json(&json!({}));
            }
            let (status, body) = read(req.send().await.expect("request")).await;
            let is_documented = documented
                .iter()
                .any(|(p, (m, _))| p == path && *m == method);
            let what = format!("{method} {path}: {status} {body}");
            if is_documented {
                assert_ne!(status, 405, "documented but not routed: {what}");
                assert!(
                    !(status == 404 && body["message"] == json!("route not found")),
                    "documented but not routed: {what}"
                );
            } else {
                assert_eq!(status, 405, "routed but not documented: {what}");
                assert_eq!(body["code"], json!("method_not_allowed"), "{what}");
            }
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn served_document_is_the_generated_one_behind_the_admin_token() {
    let s = TestServer::start().await;
    let anonymous = s
        .http
        .get(s.url("/api/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let (status, served) = s.admin(Method::GET, "/openapi.json", None).await;
    assert_eq!(status, 200);
    let generated: Value = serde_json::from_str(&sluice_api::openapi::document_json()).unwrap();
    assert_eq!(served, generated);
    s.stop().await;
}

/// Routes exist only through `OpenApiRouter::routes(routes!(…))`, which
/// documents them. A plain axum `.route(…)` in the API crate would be served
/// without a description; the only ones allowed are the operational
/// endpoints, which are not part of the HTTP API.
#[test]
fn api_crate_registers_no_route_outside_the_documented_table() {
    const ALLOWED: [&str; 3] = [r#""/health""#, r#""/ready""#, r#""/metrics""#];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sluice-api/src");
    let mut stack = vec![root];
    let mut offenders = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            let flat = code
                .join(" ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            for (i, _) in flat.match_indices(".route(") {
                let call = &flat[i..flat.len().min(i + 40)];
                if !ALLOWED
                    .iter()
                    .any(|a| call.starts_with(&format!(".route({a}")))
                {
                    offenders.push(format!("{}: {call}", path.display()));
                }
            }
            for needle in [".route_service(", ".nest_service("] {
                if flat.contains(needle) {
                    offenders.push(format!("{}: {needle}", path.display()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "routes registered without an OpenAPI description: {offenders:#?}\n\
         Annotate the handler with #[utoipa::path(...)] and register it with \
         .routes(routes!(handler)) (see crates/sluice-api/src/openapi/mod.rs)."
    );
}
