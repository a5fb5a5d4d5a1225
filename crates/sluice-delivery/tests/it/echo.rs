//! A receiver that echoes its request must not get the destination's
//! secrets into the attempt log: the stored response snippet hides them.
//!
//! The echo receiver is a real local HTTP/1.1 server answering with the
//! request's headers as JSON (as debugging endpoints do), plus a `note`
//! the test chooses, standing in for a receiver that quotes a secret back.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sluice_delivery::DeliveryConfig;
use sluice_store::{DeliveryState, StandardWebhooks, WebhookSettings, WebhookUrl};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

const AUTH: &str = "Bearer ECHOSECRET-AUTH-echo";
const KEY: &str = "ECHOSECRET-KEY-echo";
const PASSWORD: &str = "TRACEPASSWORD99";
const SHARED: &str = "ECHOSECRET-SHARED-echo";
const STANDARD: &str = "whsec_ZWNoby1zdGFuZGFyZC1zZWNyZXQtMjRi";

/// Starts the echo receiver; returns its port. Its answer begins with the
/// `x-api-key` value, then `authorization`, then every header, then `note`.
async fn echo_receiver(note: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let note = Arc::new(note);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, note.clone()));
        }
    });
    port
}

async fn answer(mut stream: TcpStream, note: Arc<String>) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
        if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8_lossy(&seen[..head_end]).into_owned();
    let mut headers = Map::new();
    for line in head.lines().skip(1) {
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), json!(value.trim()));
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while seen.len() < head_end + 4 + length {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let first = |name: &str| headers.get(name).cloned().unwrap_or(Value::Null);
    let body = format!(
        "{{\"x-api-key\":{},\"authorization\":{},\"headers\":{},\"note\":{}}}",
        first("x-api-key"),
        first("authorization"),
        Value::Object(headers.clone()),
        json!(note.as_str()),
    );
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn echo_url(port: u16, user_info: &str) -> WebhookUrl {
    WebhookUrl {
        url: format!("http://{user_info}127.0.0.1:{port}/echo"),
        headers: vec![
            ("X-Api-Key".into(), KEY.into()),
            ("X-Team".into(), "visible-team".into()),
        ],
    }
}

/// Delivers one event to `urls` and returns the stored response snippet.
async fn stored_response(config: DeliveryConfig, settings: WebhookSettings) -> String {
    let (_dir, store) = new_store().await;
    let dest = destination_with(&store, "d1", settings).await;
    let engine = Running::start(store.clone(), config);
    append(&store, &[track("m-echo")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-echo", DeliveryState::Succeeded).await;
    engine.stop().await;
    let log = attempts(&store, done.id).await;
    assert_eq!(log.len(), 1);
    log[0].response.clone().unwrap_or_default()
}

#[tokio::test]
async fn secrets_echoed_by_a_receiver_are_hidden_in_the_attempt_log() {
    let note = format!("shared={SHARED} standard={STANDARD}");
    let port = echo_receiver(note).await;
    let mut with_header = echo_url(port, "");
    with_header
        .headers
        .push(("Authorization".into(), AUTH.into()));
    let settings = WebhookSettings {
        urls: vec![with_header],
        shared_secret: Some(SHARED.into()),
        standard_webhooks: Some(StandardWebhooks {
            secret: STANDARD.into(),
            previous_secret: None,
            previous_until: None,
        }),
        ..WebhookSettings::default()
    };
    let shown = stored_response(fast_config(), settings).await;
    for secret in [
        "ECHOSECRET",
        KEY,
        AUTH,
        SHARED,
        STANDARD,
        &STANDARD["whsec_".len()..],
    ] {
        assert!(!shown.contains(secret), "{secret} shown in {shown}");
    }
    assert!(shown.contains(r#""x-api-key":"****""#), "{shown}");
    assert!(shown.contains(r#""authorization":"****""#), "{shown}");
    assert!(
        shown.contains("visible-team"),
        "other headers stay: {shown}"
    );
    assert!(shown.contains("x-sluice-message-id"), "{shown}");
}

#[tokio::test]
async fn url_password_and_its_basic_token_echoed_by_a_receiver_are_hidden() {
    let port = echo_receiver(format!("you sent password {PASSWORD}")).await;
    let settings = WebhookSettings {
        urls: vec![echo_url(port, &format!("tUser:{PASSWORD}@"))],
        ..WebhookSettings::default()
    };
    let shown = stored_response(fast_config(), settings).await;
    // base64("tUser:TRACEPASSWORD99") begins "dFVzZXI6VFJBQ0VQQV".
    for secret in [PASSWORD, "dFVzZXI6VFJBQ0VQQV", "dFVzZXI6"] {
        assert!(!shown.contains(secret), "{secret} shown in {shown}");
    }
    assert!(shown.contains(r#""authorization":"Basic ****""#), "{shown}");
    assert!(shown.contains("you sent password ****"), "{shown}");
}

#[tokio::test]
async fn a_secret_cut_by_the_response_cap_shows_none_of_its_characters() {
    let port = echo_receiver(String::new()).await;
    let settings = WebhookSettings {
        urls: vec![echo_url(port, "")],
        ..WebhookSettings::default()
    };
    let head = r#"{"x-api-key":""#;
    let config = DeliveryConfig {
        // The cap ends 10 characters into the key.
        response_body_cap: head.len() + 10,
        ..fast_config()
    };
    let shown = stored_response(config, settings).await;
    assert_eq!(shown, format!("{head}****"));
}
