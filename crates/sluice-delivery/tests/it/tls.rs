//! Certificates are verified: a self-signed endpoint gets an error and no
//! request, unless its certificate is in the configured extra CA bundle.
//! Other TLS failures (a fatal alert from the endpoint) are retried.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use sluice_delivery::policy::Class;
use sluice_delivery::sender::{Job, Sender};
use sluice_delivery::{DeliveryConfig, DeliveryEngine, DeliveryError};
use sluice_store::{DeliveryState, WebhookSettings};
use sluice_testkit::Receiver;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
        error.starts_with("TLS certificate rejected, request not sent: "),
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

/// A TLS endpoint that answers every ClientHello with a fatal
/// `internal_error` alert (an overloaded or restarting TLS terminator).
async fn alerting_endpoint() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hellos = Arc::new(AtomicUsize::new(0));
    let seen = hellos.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut hello = [0u8; 1024];
                if matches!(stream.read(&mut hello).await, Ok(n) if n > 0) {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
                // Alert record, TLS 1.2 framing: level fatal (2), internal_error (80).
                let _ = stream
                    .write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50])
                    .await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, hellos)
}

#[tokio::test]
async fn a_fatal_alert_in_the_handshake_is_retried_and_says_nothing_was_sent() {
    let (port, hellos) = alerting_endpoint().await;
    let sender = Sender::new(&fast_config()).expect("sender");
    let job = Job {
        delivery_id: 1,
        attempt: 1,
        message_id: "m-alert".into(),
        body: Bytes::from_static(b"{}"),
        signature: None,
        standard: None,
        destination: None,
    };
    let result = sender
        .send_one(&url(&format!("https://127.0.0.1:{port}/hook")), &job)
        .await;
    assert_eq!(hellos.load(Ordering::SeqCst), 1, "the handshake was tried");
    let error = result.attempt.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("TLS handshake failed, request not sent: ") && error.contains("alert"),
        "{error}"
    );
    assert!(!error.contains("certificate"), "{error}");
    assert_eq!(result.verdict.class, Class::Retryable);
    assert_eq!(result.error_kind, Some("tls"));
}

#[tokio::test]
async fn a_delivery_to_an_endpoint_sending_fatal_alerts_is_retried_not_dead() {
    let (_dir, store) = new_store().await;
    let (port, hellos) = alerting_endpoint().await;
    let target = url(&format!("https://127.0.0.1:{port}/hook"));
    let dest = destination(&store, "d1", vec![target], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-alert")], &[&dest]).await;
    engine.handle.notify();
    let deadline = std::time::Instant::now() + WAIT;
    while hellos.load(Ordering::SeqCst) < 3 {
        assert!(std::time::Instant::now() < deadline, "no retries");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    engine.stop().await;
    let found = deliveries(&store, "m-alert").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].state, DeliveryState::Pending, "{found:?}");
    assert!(found[0].attempts >= 2, "{found:?}");
}
