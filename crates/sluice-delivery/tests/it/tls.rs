//! Certificates are verified: a self-signed endpoint gets an error and no
//! request, unless its certificate is in the configured extra CA bundle.

use sluice_delivery::{DeliveryConfig, DeliveryEngine, DeliveryError};
use sluice_store::{DeliveryState, WebhookSettings};
use sluice_testkit::Receiver;

use crate::support::*;

#[tokio::test]
async fn self_signed_endpoint_gets_no_request_and_is_not_retried() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start_tls().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], Some("k"), true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    assert_eq!(dead.attempts, 1);
    let log = attempts(&store, dead.id).await;
    assert_eq!(log[0].status, None);
    let error = log[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("TLS") && error.contains("certificate"),
        "{error}"
    );
    assert!(
        rx.requests().is_empty(),
        "no HTTP request may reach the endpoint"
    );
    assert!(rx.tls_failures() >= 1, "the client did try to connect");
    engine.stop().await;
}

#[tokio::test]
async fn extra_ca_bundle_makes_a_private_certificate_trusted() {
    let (dir, store) = new_store().await;
    let rx = Receiver::start_tls().await;
    let ca_path = dir.path().join("private-ca.pem");
    std::fs::write(&ca_path, rx.cert_pem().unwrap_or_default()).expect("write CA bundle");
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let config = DeliveryConfig {
        extra_ca_file: Some(ca_path),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    assert_eq!(rx.requests().len(), 1);
    engine.stop().await;
}

#[tokio::test]
async fn unreadable_ca_bundle_refuses_to_start() {
    let (dir, store) = new_store().await;
    let config = DeliveryConfig {
        extra_ca_file: Some(dir.path().join("missing.pem")),
        ..fast_config()
    };
    let started = DeliveryEngine::start(store, config, std::future::pending());
    assert!(matches!(started, Err(DeliveryError::CaFile { .. })));
}

#[tokio::test]
async fn an_endpoint_offering_http2_is_sent_http2_with_the_same_headers_and_body() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start_tls_h2().await;
    let settings = WebhookSettings {
        urls: vec![url(&rx.url())],
        shared_secret: Some("k".into()),
        ca_bundle: rx.cert_pem().map(str::to_owned),
        ..WebhookSettings::default()
    };
    let dest = destination_with(&store, "d1", settings).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-h2")], &[&dest]).await;
    engine.handle.notify();
    wait_state(&store, "m-h2", DeliveryState::Succeeded).await;
    engine.stop().await;
    let got = rx.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].version, http::Version::HTTP_2);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].path, "/hook");
    assert_eq!(got[0].header("x-sluice-message-id"), Some("m-h2"));
    let signature = got[0].header("x-signature").unwrap_or_default();
    assert_eq!(
        signature,
        sluice_signing::signature::sign(b"k", &got[0].body)
    );
}
