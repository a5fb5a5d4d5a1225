//! A destination's own CA bundle: its private-CA endpoint is trusted for
//! that destination only; a self-signed leaf never becomes trusted by
//! being pasted as a CA; the network guard applies regardless.

use bytes::Bytes;
use sluice_delivery::DeliveryConfig;
use sluice_delivery::policy::Class;
use sluice_delivery::sender::{Job, Sender};
use sluice_outbound::NetworkPolicy;
use sluice_store::{DeliveryState, WebhookSettings};
use sluice_testkit::Receiver;

use crate::support::*;

fn trusting(rx: &Receiver, pem: &str) -> WebhookSettings {
    WebhookSettings {
        urls: vec![url(&rx.url())],
        ca_bundle: Some(pem.to_owned()),
        ..WebhookSettings::default()
    }
}

#[tokio::test]
async fn private_ca_endpoint_is_trusted_only_by_the_destination_with_its_ca() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start_tls_private_ca().await;
    let ca = rx.cert_pem().expect("CA pem").to_owned();
    let with_ca = destination_with(&store, "d-ca", trusting(&rx, &ca)).await;
    let without = destination(&store, "d-plain", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-ca")], &[&with_ca]).await;
    append(&store, &[track("m-plain")], &[&without]).await;
    engine.handle.notify();
    wait_state(&store, "m-ca", DeliveryState::Succeeded).await;
    let dead = wait_state(&store, "m-plain", DeliveryState::Dead).await;
    let error = attempts(&store, dead.id).await[0]
        .error
        .clone()
        .unwrap_or_default();
    assert!(error.contains("TLS"), "{error}");
    let got = rx.requests();
    assert_eq!(got.len(), 1, "only the trusting destination got through");
    assert_eq!(got[0].header("x-sluice-message-id"), Some("m-ca"));
    engine.stop().await;
}

#[tokio::test]
async fn self_signed_leaf_pasted_as_ca_is_not_trusted() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start_tls().await;
    let leaf = rx.cert_pem().expect("leaf pem").to_owned();
    // Stored directly, past the admin API's check, as a hand edit would be.
    let dest = destination_with(&store, "d1", trusting(&rx, &leaf)).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    let error = attempts(&store, dead.id).await[0]
        .error
        .clone()
        .unwrap_or_default();
    assert!(error.contains("not a CA certificate"), "{error}");
    assert!(
        rx.requests().is_empty(),
        "no request may reach the endpoint"
    );
    assert_eq!(rx.tls_failures(), 0, "not even a connection is made");
    engine.stop().await;
}

#[tokio::test]
async fn network_guard_still_refuses_loopback_with_a_ca_bundle() {
    let rx = Receiver::start_tls_private_ca().await;
    let ca = rx.cert_pem().expect("CA pem").to_owned();
    let config = DeliveryConfig {
        network: NetworkPolicy::default(),
        ..fast_config()
    };
    let sender = Sender::new(&config).expect("sender");
    let job = Job {
        delivery_id: 1,
        attempt: 1,
        message_id: "m-1".into(),
        body: Bytes::from_static(b"{}"),
        signature: None,
        standard: None,
        destination: None,
    };
    let results = sender
        .send_all_trusting(&[url(&rx.url())], Some(&ca), &job)
        .await;
    let error = results[0].attempt.error.clone().unwrap_or_default();
    assert!(error.contains("blocked"), "{error}");
    assert_eq!(results[0].verdict.class, Class::Permanent);
    assert!(rx.requests().is_empty());
    assert_eq!(rx.tls_failures(), 0);
}
