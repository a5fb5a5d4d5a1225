//! Tests of [`super`]: the destination form.

use super::*;

#[test]
fn api_messages_map_to_their_form_fields() {
    assert_eq!(field_of("name: must not be empty"), "name");
    assert_eq!(
        field_of("settings.urls[3].url: must use the http or https protocol"),
        "url3"
    );
    assert_eq!(
        field_of("settings.urls[1].headers.X-A: value has characters"),
        "headers1"
    );
    assert_eq!(
        field_of("settings.sharedSecret: must be at most 1024 bytes"),
        "secret"
    );
    assert_eq!(
        field_of("source_ids: source src_x does not exist"),
        "sources"
    );
    assert_eq!(field_of("something else"), "form");
}

#[test]
fn the_error_summary_follows_the_form() {
    let mut keys = vec![
        "secret", "headers1", "url1", "urls", "name", "url0", "form", "sources", "url10",
    ];
    keys.sort_by_key(|k| position(k));
    assert_eq!(
        keys,
        [
            "name", "sources", "url0", "url1", "headers1", "url10", "urls", "secret", "form"
        ]
    );
}

#[test]
fn header_lines_need_a_colon() {
    let h = header_lines("f", "X-A: 1\n\n  X-B:two  ").unwrap();
    assert_eq!(h["X-A"], "1");
    assert_eq!(h["X-B"], "two");
    assert!(
        header_lines("f", "nope")
            .unwrap_err()
            .starts_with("f: each line")
    );
}

fn form(fields: &[(String, String)]) -> Form {
    Form::new(fields.to_vec())
}

fn hooks(n: usize) -> Vec<(String, String)> {
    let mut fields = vec![
        ("type".to_owned(), "Webhooks".to_owned()),
        ("name".to_owned(), "hooks".to_owned()),
    ];
    for i in 0..n {
        fields.push((format!("url{i}"), format!("https://hooks.example.com/{i}")));
        fields.push((format!("headers{i}"), String::new()));
    }
    fields
}

#[test]
fn a_sixth_url_is_refused_with_the_api_message_and_kept_in_the_form() {
    let rules = Rules::default();
    let (e, _, _) = validate(&form(&hooks(6)), false, &rules);
    // The admin API's refusal of the same six URLs, word for word.
    let six: Vec<Value> = (0..6)
        .map(|i| json!({"url": format!("https://hooks.example.com/{i}")}))
        .collect();
    let api = sluice_api::admin::webhook_settings::parse(&json!({"urls": six}), None, &rules)
        .err()
        .map(|err| err.message);
    assert_eq!(e.errors.get("urls"), api.as_ref());
    assert_eq!(
        api.as_deref(),
        Some("settings.urls: at most 5 webhook URLs are allowed, got 6")
    );
    assert_eq!(e.urls.len(), 6);
    assert_eq!(e.urls[5].0, "https://hooks.example.com/5");
    // Shown again with all six rows, the sixth holding what was typed.
    let session = Session::new(
        "s",
        0,
        "c".into(),
        sluice_api::principal::Principal::AdminToken,
    );
    let mode = Mode {
        action: "/destinations/new",
        submit: "Save destination",
        editing: false,
    };
    let html = render(&session, &[], &e, &mode).into_string();
    assert!(html.contains(r#"name="url5""#), "{html}");
    assert!(html.contains(r#"value="https://hooks.example.com/5""#));
    assert!(html.contains("at most 5 webhook URLs are allowed, got 6"));
}

#[test]
fn five_urls_pass_and_rows_beyond_the_form_are_read_by_their_own_names() {
    let (e, urls, _) = validate(&form(&hooks(5)), false, &Rules::default());
    assert!(e.errors.is_empty(), "{:?}", e.errors);
    assert_eq!(urls.len(), 5);
    // A far row counts; names the form never uses, and empty rows, do not.
    let mut fields = hooks(5);
    for (k, v) in [
        ("url9", "https://hooks.example.com/9"),
        ("url05", "https://hooks.example.com/x"),
        ("url+6", "https://hooks.example.com/y"),
        ("url99999999999999999999999", "https://hooks.example.com/z"),
        ("url7", ""),
        ("urls", "https://hooks.example.com/w"),
    ] {
        fields.push((k.to_owned(), v.to_owned()));
    }
    let (e, _, _) = validate(&form(&fields), false, &Rules::default());
    assert_eq!(
        e.errors.get("urls").map(String::as_str),
        Some("settings.urls: at most 5 webhook URLs are allowed, got 6")
    );
    assert_eq!(e.urls.len(), 6);
    assert_eq!(e.urls[5].0, "https://hooks.example.com/9");
}

#[test]
fn the_api_refusing_the_whole_url_list_is_shown_beside_it() {
    assert_eq!(
        field_of("settings.urls: at most 5 webhook URLs are allowed, got 6"),
        "urls"
    );
}

#[test]
fn a_row_shows_its_url_error_and_its_header_error_together() {
    let mut fields = hooks(1);
    for (k, v) in fields.iter_mut() {
        match k.as_str() {
            "url0" => *v = "ftp://example.com/hook".into(),
            "headers0" => *v = "X-Signature: mine".into(),
            _ => {}
        }
    }
    let (e, urls, _) = validate(&form(&fields), false, &Rules::default());
    assert!(urls.is_empty());
    assert!(
        e.errors["url0"].contains("must use the http or https protocol"),
        "{:?}",
        e.errors
    );
    assert!(
        e.errors["headers0"].contains("is set by Sluice and cannot be overridden"),
        "{:?}",
        e.errors
    );
}
