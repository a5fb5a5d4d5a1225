//! Request headers and the signature receivers check.

use serde_json::Value;
use sluice_signing::{json::to_js_json, signature};
use sluice_store::WebhookUrl;
use sluice_testkit::Receiver;

use crate::support::*;

const SECRET: &str = "s3cret-shared";

#[tokio::test]
async fn signed_request_carries_sluice_and_static_headers() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let entry = WebhookUrl {
        url: rx.url(),
        headers: vec![
            ("X-Team".into(), "growth".into()),
            ("User-Agent".into(), "spoofed".into()),
            ("X-Sluice-Attempt".into(), "99".into()),
        ],
    };
    let dest = destination(&store, "d1", vec![entry], Some(SECRET), true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let req = rx.wait_for(1, WAIT).await.remove(0);
    assert_eq!(req.header("user-agent"), Some("Sluice/1.0"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("x-team"), Some("growth"));
    assert_eq!(req.header("x-sluice-message-id"), Some("m-1"));
    assert_eq!(req.header("x-sluice-attempt"), Some("1"));
    assert_eq!(req.headers.get_all("x-sluice-attempt").iter().count(), 1);
    engine.stop().await;
}

#[tokio::test]
async fn signature_verifies_over_raw_and_reserialized_body() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], Some(SECRET), true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let req = rx.wait_for(1, WAIT).await.remove(0);
    let sig = req.header("x-signature").expect("signed").to_owned();
    assert_eq!(sig, signature::sign(SECRET.as_bytes(), &req.body));
    assert!(
        sig.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    );
    // What a JS receiver does: JSON.stringify(req.body) after parsing.
    let parsed: Value = serde_json::from_slice(&req.body).expect("JSON body");
    let reserialized = to_js_json(&parsed);
    assert_eq!(reserialized.as_bytes(), &req.body[..]);
    assert!(signature::verify(
        SECRET.as_bytes(),
        reserialized.as_bytes(),
        &sig
    ));
    engine.stop().await;
}

#[tokio::test]
async fn no_secret_means_no_signature_header() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let req = rx.wait_for(1, WAIT).await.remove(0);
    assert_eq!(req.header("x-signature"), None);
    engine.stop().await;
}
