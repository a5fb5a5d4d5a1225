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

/// The bootstrap file declares the same opt-ins as the admin API: a
/// Standard Webhooks secret (re-applied at every start without restarting a
/// rotation; a changed one rotates with the declared overlap) and a CA
/// bundle file trusted for that destination.
#[tokio::test]
async fn bootstrap_file_declares_standard_webhooks_and_a_ca_bundle_file() {
    const NEW_WHSEC: &str = "whsec_cGVyZmVjdGx5LXJhbmRvbS1rZXktMzItYnl0ZXMh";
    let rx = Receiver::start_tls_private_ca().await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("private-ca.pem");
    std::fs::write(&ca_file, rx.cert_pem().expect("CA")).unwrap();
    let file = dir.path().join("bootstrap.toml");
    let declare = |secret: &str| {
        let text = format!(
            r#"
[[sources]]
id = "web"
name = "Website"
write_key = "bootstrap-write-key-0123456789"

[[destinations]]
id = "signed"
name = "Signed"
sources = ["web"]
urls = [{{ url = "{url}" }}]
ca_bundle_file = "{ca}"

[destinations.standard_webhooks]
secret = "{secret}"
rotation_overlap_seconds = 600
"#,
            url = rx.url(),
            ca = ca_file.display(),
        );
        std::fs::write(&file, text).unwrap();
    };
    let mut config = crate::support::test_config(dir.path());
    config.bootstrap = Some(file.clone());

    declare(WHSEC);
    let s = TestServer::start_with(config.clone()).await;
    let (_, d) = s.admin(Method::GET, "/destinations/signed", None).await;
    assert_eq!(
        d["settings"]["standardWebhooks"]["secret"],
        json!("whsec_MfKQ…")
    );
    assert_eq!(d["settings"]["caBundle"], json!(rx.cert_pem().unwrap()));
    let event = json!({"userId": "u1", "event": "E", "messageId": "m-boot"});
    let key = "bootstrap-write-key-0123456789";
    let (status, _) = s.collect("/v1/track", Some(key), event.to_string()).await;
    assert_eq!(status, 200);
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let req = &got[0];
    let ts: i64 = req.header("webhook-timestamp").unwrap().parse().unwrap();
    let secret = standard::secret_key(WHSEC).unwrap();
    assert!(standard::verify(
        &secret,
        req.header("webhook-id").unwrap(),
        ts,
        req.body.as_ref(),
        req.header("webhook-signature").unwrap()
    ));
    s.stop().await;

    // The same secret again: no rotation. A new one: a rotation of 600 s,
    // which a further start with that secret keeps running.
    let s = TestServer::start_with(config.clone()).await;
    let (_, d) = s.admin(Method::GET, "/destinations/signed", None).await;
    assert_eq!(
        d["settings"]["standardWebhooks"]["previousSecretValidUntil"],
        Value::Null
    );
    s.stop().await;
    declare(NEW_WHSEC);
    for round in 0..2 {
        let s = TestServer::start_with(config.clone()).await;
        let (_, d) = s.admin(Method::GET, "/destinations/signed", None).await;
        let shown = &d["settings"]["standardWebhooks"];
        assert_eq!(shown["secret"], json!("whsec_cGVy…"), "round {round}");
        assert!(
            shown["previousSecretValidUntil"].is_string(),
            "round {round}: {shown}"
        );
        s.stop().await;
    }

    // "generate" would change at every start: refused, as is a leaf "CA".
    declare("generate");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = sluice_server::run(
        config.clone(),
        listener,
        async {},
        &sluice_server::StderrAnnounce,
    )
    .await
    .expect_err("a generated secret in the bootstrap file stops start-up");
    assert!(
        err.to_string().contains("standard_webhooks.secret"),
        "{err}"
    );
    declare(WHSEC);
    let leaf = Receiver::start_tls().await;
    std::fs::write(&ca_file, leaf.cert_pem().expect("self-signed leaf")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = sluice_server::run(config, listener, async {}, &sluice_server::StderrAnnounce)
        .await
        .expect_err("a leaf certificate as CA bundle stops start-up");
    assert!(err.to_string().contains("caBundle"), "{err}");
}
