use super::*;
use serde_json::json;

fn err(v: Value) -> String {
    parse(&v, None, &Rules::default()).unwrap_err().message
}

#[test]
fn sixth_url_is_refused() {
    let urls: Vec<Value> = (0..6)
        .map(|i| json!({"url": format!("https://h{i}.example")}))
        .collect();
    assert!(err(json!({"urls": urls})).starts_with("settings.urls: at most 5"));
}

#[test]
fn url_without_http_scheme_is_refused() {
    assert!(err(json!({"urls": [{"url": "ftp://x.example"}]})).contains("settings.urls[0].url"));
    assert!(err(json!({"urls": [{"url": "x.example/hook"}]})).contains("settings.urls[0].url"));
}

#[test]
fn a_url_that_does_not_parse_is_quoted_without_its_password() {
    for url in [
        "https://alice:S3cretPass@hooks.example.com:99999/in",
        "http://alice:BootPassw0rd@[bad/",
    ] {
        let message = err(json!({"urls": [{"url": url}]}));
        assert!(message.contains("is not a full URL"), "{message}");
        assert!(message.contains("****@"), "{message}");
        assert!(
            !message.contains("Pass") && !message.contains("alice"),
            "{message}"
        );
    }
}

#[test]
fn header_with_newline_or_bad_name_is_refused() {
    let e = err(json!({"urls": [{"url": "http://a.example", "headers": {"X-A": "b\r\nX-B: c"}}]}));
    assert!(e.contains("settings.urls[0].headers.X-A"), "{e}");
    let e = err(json!({"urls": [{"url": "http://a.example", "headers": {"X A": "b"}}]}));
    assert!(e.contains("not a valid HTTP header name"), "{e}");
    let e = err(json!({"urls": [{"url": "http://a.example", "headers": {"X-Signature": "b"}}]}));
    assert!(e.contains("set by Sluice"), "{e}");
}

#[test]
fn omitted_secret_is_kept_and_null_removes_it() {
    let prev = WebhookSettings {
        urls: vec![],
        shared_secret: Some("s3cret".into()),
        ..WebhookSettings::default()
    };
    let kept = parse(&json!({"urls": []}), Some(&prev), &Rules::default()).unwrap();
    assert_eq!(kept.shared_secret.as_deref(), Some("s3cret"));
    let removed = parse(
        &json!({"sharedSecret": null}),
        Some(&prev),
        &Rules::default(),
    )
    .unwrap();
    assert_eq!(removed.shared_secret, None);
}

#[test]
fn a_secret_of_only_spaces_is_refused() {
    for secret in ["   ", "\t", " \n "] {
        let e = err(json!({"urls": [], "sharedSecret": secret}));
        assert!(e.starts_with("settings.sharedSecret:"), "{e}");
    }
}

fn with_secret(secret: &str) -> WebhookSettings {
    WebhookSettings {
        urls: vec![],
        shared_secret: Some(secret.into()),
        ..WebhookSettings::default()
    }
}

fn shown_secret(settings: &WebhookSettings) -> Value {
    serde_json::to_value(view(settings, &Masker::default())).unwrap()["sharedSecret"].clone()
}

#[test]
fn view_masks_the_secret_and_shows_nothing_of_a_short_one() {
    assert_eq!(shown_secret(&with_secret("s3cret-value")), json!("s3cr…"));
    assert_eq!(shown_secret(&with_secret("s3cretvalue")), json!("…"));
    assert_eq!(shown_secret(&with_secret("abc")), json!("…"));
}

#[test]
fn a_secret_sent_back_as_shown_keeps_the_stored_one() {
    for secret in ["my-long-secret-123", "abc"] {
        let stored = with_secret(secret);
        let shown = serde_json::to_value(view(&stored, &Masker::default())).unwrap();
        let back =
            parse(&shown, Some(&stored), &Rules::default()).expect("a read is accepted back");
        assert_eq!(back.shared_secret.as_deref(), Some(secret));
    }
}

#[test]
fn a_masked_secret_that_is_not_the_stored_ones_is_refused() {
    let stored = with_secret("my-long-secret-123");
    for sent in ["wxyz…", "my-l……", "…"] {
        let e = parse(
            &json!({"sharedSecret": sent}),
            Some(&stored),
            &Rules::default(),
        )
        .unwrap_err()
        .message;
        assert!(
            e.starts_with("settings.sharedSecret: is a masked value"),
            "{sent}: {e}"
        );
    }
    let e = err(json!({"sharedSecret": "my-l…"}));
    assert!(e.contains("matches no stored secret"), "{e}");
}

#[test]
fn a_new_secret_replaces_the_stored_one() {
    let stored = with_secret("my-long-secret-123");
    let back = parse(
        &json!({"sharedSecret": "another-secret"}),
        Some(&stored),
        &Rules::default(),
    )
    .unwrap();
    assert_eq!(back.shared_secret.as_deref(), Some("another-secret"));
}

#[test]
fn literal_blocked_hosts_are_refused() {
    for url in [
        "http://127.0.0.1:9/x",
        "http://localhost/",
        "http://2130706433/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://10.0.0.1/",
    ] {
        let e = err(json!({"urls": [{"url": url}]}));
        assert!(
            e.contains("settings.urls[0].url") && e.contains("blocked"),
            "{url}: {e}"
        );
    }
}

#[test]
fn masked_values_round_trip_and_keep_the_stored_credentials() {
    let rules = Rules::default();
    let stored = WebhookSettings {
        urls: vec![WebhookUrl {
            url: "https://user:pa55word@hooks.example.com/x".into(),
            headers: vec![
                ("Authorization".into(), "Bearer s3cr3t-t0ken-value".into()),
                ("X-Team".into(), "blue".into()),
            ],
        }],
        shared_secret: None,
        ..WebhookSettings::default()
    };
    let shown = serde_json::to_value(view(&stored, &rules.masker)).unwrap();
    assert_eq!(
        shown["urls"][0]["url"],
        "https://****:****@hooks.example.com/x"
    );
    assert_eq!(shown["urls"][0]["headers"]["Authorization"], "Bear…");
    assert_eq!(shown["urls"][0]["headers"]["X-Team"], "blue");
    let back = parse(
        &json!({"urls": shown["urls"].clone()}),
        Some(&stored),
        &rules,
    )
    .expect("masked values are accepted");
    assert_eq!(back.urls, stored.urls);
    let wrong = parse(
        &json!({"urls": [{"url": "https://h.example/", "headers": {"Authorization": "Bear…"}}]}),
        Some(&stored),
        &rules,
    );
    assert!(wrong.is_err(), "a mask with nothing behind it is not saved");
}

#[test]
fn static_header_names_are_refused_exactly_when_the_sender_would_drop_them() {
    let header =
        |name: &str| json!({"urls": [{"url": "http://a.example", "headers": {name: "v"}}]});
    let owned = sluice_outbound::headers::FRAMING_HEADERS
        .iter()
        .chain(sluice_outbound::headers::OWN_HEADERS)
        .copied();
    for name in owned.chain([
        "TE",
        "X-Sluice-Message-Id",
        "X-Sluice-Tenant",
        "Webhook-Id",
        "Webhook-Version",
        "Authorization",
        "X-Api-Key",
        "X-Team",
        "Accept",
        "X-Signature-Version",
    ]) {
        let refused = parse(&header(name), None, &Rules::default()).is_err();
        assert_eq!(
            refused,
            is_refused_static_header(name),
            "{name}: the admin API and the sender disagree"
        );
    }
    let e = err(header("Upgrade"));
    assert!(e.contains("settings.urls[0].headers.Upgrade"), "{e}");
    assert!(e.contains("set by Sluice"), "{e}");
    assert!(parse(&header("Content-Encoding"), None, &Rules::default()).is_err());
}
