use super::*;

#[test]
fn every_occurrence_of_a_secret_is_hidden() {
    let text = r#"{"authorization":"Bearer ECHOSECRET-AUTH","again":"ECHOSECRET-AUTH"}"#;
    let shown = redact(text, &["ECHOSECRET-AUTH"], false);
    assert_eq!(shown, r#"{"authorization":"Bearer ****","again":"****"}"#);
}

#[test]
fn text_without_secrets_is_returned_unchanged_and_borrowed() {
    let shown = redact("all good", &["s3cret-value", ""], true);
    assert!(matches!(shown, Cow::Borrowed("all good")));
}

#[test]
fn empty_secrets_hide_nothing() {
    assert_eq!(redact("abc", &[""], false), "abc");
}

#[test]
fn overlapping_and_adjacent_secrets_become_one_mask() {
    let shown = redact(
        "x Bearer tok-123456 y",
        &["Bearer tok-123456", "tok-123456"],
        false,
    );
    assert_eq!(shown, "x **** y");
    let shown = redact("AAAABBBB", &["AAAA", "BBBB"], false);
    assert_eq!(shown, "****");
    let shown = redact("AAAABBBB", &["AAAA"], false);
    assert_eq!(shown, "****BBBB");
}

#[test]
fn a_secret_at_either_end_is_hidden() {
    assert_eq!(redact("topsecret!", &["topsecret"], false), "****!");
    assert_eq!(redact("!topsecret", &["topsecret"], false), "!****");
    assert_eq!(redact("topsecret", &["topsecret"], false), "****");
}

#[test]
fn json_escaped_forms_are_hidden() {
    let secret = r#"pa"ss\wo/rd-1234"#;
    let json = serde_like(secret);
    assert_eq!(redact(&json, &[secret], false), "\"****\"");
    let php = json.replace('/', "\\/");
    assert_eq!(redact(&php, &[secret], false), "\"****\"");
}

/// The secret quoted as JSON encoders write it.
fn serde_like(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn a_secret_cut_at_the_end_of_a_capped_body_is_hidden() {
    let secret = "ECHOSECRET-KEY-echo";
    let cut = "{\"x-api-key\": \"ECHOSECR";
    assert_eq!(redact(cut, &[secret], true), "{\"x-api-key\": \"****");
    // Not cut: the body ended there, so a look-alike ending is left alone.
    assert_eq!(redact(cut, &[secret], false), cut);
}

#[test]
fn a_cut_prefix_shorter_than_the_minimum_is_left() {
    let secret = "ECHOSECRET-KEY-echo";
    assert_eq!(redact("value: ECH", &[secret], true), "value: ECH");
    assert_eq!(redact("value: ECHO", &[secret], true), "value: ****");
}

#[test]
fn a_cut_inside_a_multibyte_character_still_hides_the_prefix() {
    let secret = "geheimnis-ü-123456";
    let body = String::from_utf8_lossy(&secret.as_bytes()[..11]).into_owned();
    assert!(body.ends_with('\u{FFFD}'), "{body}");
    assert_eq!(redact(&body, &[secret], true), "****");
}

#[test]
fn credential_parts_hide_the_token_without_its_scheme() {
    let parts: Vec<_> = credential_parts("Bearer abc-123").collect();
    assert_eq!(parts, ["Bearer abc-123", "abc-123"]);
    let parts: Vec<_> = credential_parts("plainkey").collect();
    assert_eq!(parts, ["plainkey"]);
}

#[test]
fn only_sensitive_header_values_are_secrets() {
    let masker = Masker::new(&["X-Customer".into()]);
    let headers = vec![
        ("Authorization".to_owned(), "Bearer tok-1".to_owned()),
        ("X-Api-Key".to_owned(), "key-2".to_owned()),
        ("X-Customer".to_owned(), "cust-3".to_owned()),
        ("X-Team".to_owned(), "data".to_owned()),
    ];
    let secrets: Vec<_> = sensitive_header_values(&masker, &headers).collect();
    assert_eq!(secrets, ["Bearer tok-1", "tok-1", "key-2", "cust-3"]);
}
