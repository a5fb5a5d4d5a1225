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
fn view_masks_the_secret() {
    let s = WebhookSettings {
        urls: vec![],
        shared_secret: Some("s3cretvalue".into()),
        ..WebhookSettings::default()
    };
    assert_eq!(
        serde_json::to_value(view(&s, &Masker::default())).unwrap()["sharedSecret"],
        json!("s3cr…")
    );
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
