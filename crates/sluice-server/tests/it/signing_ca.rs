//! The opt-in destination settings through the admin API: Standard Webhooks
//! secrets and CA bundles are checked with 400s naming the field, never
//! echoed in full, and a private-CA endpoint receives once its CA is set.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_signing::standard;
use sluice_testkit::Receiver;

use crate::support::TestServer;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn create(s: &TestServer, src: &str, settings: Value) -> (u16, Value) {
    let body = json!({"name": "hook", "source_ids": [src], "settings": settings});
    s.admin(Method::POST, "/destinations", Some(body)).await
}

#[tokio::test]
async fn bad_signing_and_ca_settings_get_400s_naming_the_field() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let leaf = Receiver::start_tls().await;
    let cases = [
        (
            json!({"standardWebhooks": {"secret": "not-whsec"}}),
            "settings.standardWebhooks.secret",
        ),
        (
            json!({"standardWebhooks": {"secret": "whsec_AAAA"}}),
            "settings.standardWebhooks.secret",
        ),
        (
            json!({"standardWebhooks": {}}),
            "settings.standardWebhooks.secret",
        ),
        (
            json!({"standardWebhooks": {"secret": WHSEC, "rotationOverlapSeconds": "1h"}}),
            "settings.standardWebhooks.rotationOverlapSeconds",
        ),
        (json!({"caBundle": "no pem here"}), "settings.caBundle"),
        (json!({"caBundle": leaf.cert_pem()}), "settings.caBundle"),
        (
            json!({"urls": [{"url": "https://hooks.example.com/", "headers": {"Webhook-Signature": "v1,x"}}]}),
            "settings.urls[0].headers.Webhook-Signature",
        ),
    ];
    for (settings, field) in cases {
        let (status, body) = create(&s, &src, settings.clone()).await;
        assert_eq!(status, 400, "{settings}: {body}");
        assert_eq!(body["code"], "invalid_field", "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(field), "{field}: {message}");
    }
    let (_, body) = create(&s, &src, json!({"caBundle": leaf.cert_pem()})).await;
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("not a CA certificate"), "{message}");
}

#[tokio::test]
async fn a_supplied_secret_is_masked_and_kept_when_its_mask_comes_back() {
    let s = TestServer::start().await;
    let (src, _) = s.source("web").await;
    let settings =
        json!({"urls": ["https://hooks.example.com/"], "standardWebhooks": {"secret": WHSEC}});
    let (status, body) = create(&s, &src, settings).await;
    assert_eq!(status, 201, "{body}");
    let shown = body["settings"]["standardWebhooks"]["secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(shown, "whsec_MfKQ…");
    assert!(!body.to_string().contains(WHSEC));
    let id = body["id"].as_str().expect("id");
    let patch = json!({"settings": {"standardWebhooks": {"secret": shown}}});
    let (status, body) = s
        .admin(Method::PATCH, &format!("/destinations/{id}"), Some(patch))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["settings"]["standardWebhooks"]["previousSecretValidUntil"],
        Value::Null,
        "sending the mask back is not a rotation"
    );
}

#[tokio::test]
async fn private_ca_endpoint_receives_signed_requests_once_its_ca_is_configured() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start_tls_private_ca().await;
    let ca = rx.cert_pem().expect("CA").to_owned();
    let settings =
        json!({"urls": [rx.url()], "caBundle": ca, "standardWebhooks": {"secret": WHSEC}});
    let (status, body) = create(&s, &src, settings).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["settings"]["caBundle"],
        json!(ca),
        "CA certificates are public"
    );
    let event = json!({"userId": "u1", "event": "E", "messageId": "m-ca"});
    let (status, _) = s.collect("/v1/track", Some(&key), event.to_string()).await;
    assert_eq!(status, 200);
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let req = &got[0];
    let id = req.header("webhook-id").expect("webhook-id");
    let ts: i64 = req
        .header("webhook-timestamp")
        .and_then(|t| t.parse().ok())
        .expect("webhook-timestamp");
    let signature = req.header("webhook-signature").expect("webhook-signature");
    let key = standard::secret_key(WHSEC).expect("secret");
    assert!(standard::verify(&key, id, ts, req.body.as_ref(), signature));
}
