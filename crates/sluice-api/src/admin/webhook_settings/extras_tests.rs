use chrono::TimeZone;

use super::*;
use serde_json::json;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn message(err: ApiError) -> String {
    format!("{err:?}")
}

#[test]
fn a_supplied_secret_is_checked_and_errors_name_the_field() {
    let ok = parse_standard(&json!({"secret": SECRET}), None, now()).unwrap();
    assert_eq!(ok.unwrap().secret, SECRET);
    for (bad, field) in [
        (
            json!({"secret": "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}),
            "settings.standardWebhooks.secret",
        ),
        (
            json!({"secret": "whsec_!!"}),
            "settings.standardWebhooks.secret",
        ),
        (json!({}), "settings.standardWebhooks.secret"),
        (
            json!({"secret": SECRET, "rotationOverlapSeconds": -1}),
            "settings.standardWebhooks.rotationOverlapSeconds",
        ),
        (
            json!({"secret": SECRET, "x": 1}),
            "settings.standardWebhooks.x",
        ),
        (json!("whsec_x"), "settings.standardWebhooks"),
    ] {
        let err = message(parse_standard(&bad, None, now()).unwrap_err());
        assert!(err.contains(field), "{bad}: {err}");
        assert!(!err.contains("MfKQ9r8G"), "secret echoed: {err}");
    }
}

#[test]
fn generate_makes_a_valid_fresh_secret() {
    let a = parse_standard(&json!({"secret": "generate"}), None, now())
        .unwrap()
        .unwrap();
    let b = parse_standard(&json!({"secret": "generate"}), None, now())
        .unwrap()
        .unwrap();
    assert!(sluice_signing::standard::secret_key(&a.secret).is_ok());
    assert_ne!(a.secret, b.secret);
    assert!(asked_to_generate(
        &json!({"standardWebhooks": {"secret": "generate"}})
    ));
    assert!(!asked_to_generate(
        &json!({"standardWebhooks": {"secret": SECRET}})
    ));
}

#[test]
fn a_new_secret_rotates_and_keeps_the_old_one_for_the_overlap() {
    let stored = StandardWebhooks {
        secret: SECRET.into(),
        previous_secret: None,
        previous_until: None,
    };
    let rotated = parse_standard(
        &json!({"secret": "generate", "rotationOverlapSeconds": 60}),
        Some(&stored),
        now(),
    )
    .unwrap()
    .unwrap();
    assert_ne!(rotated.secret, SECRET);
    assert_eq!(rotated.previous_secret.as_deref(), Some(SECRET));
    assert_eq!(
        rotated.previous_until,
        Some(now() + chrono::Duration::seconds(60))
    );
    let shown = view_standard(Some(&rotated), now()).unwrap();
    let until = shown
        .previous_secret_valid_until
        .clone()
        .expect("a rotation runs");
    let parsed = chrono::DateTime::parse_from_rfc3339(&until).expect("RFC 3339");
    assert_eq!(
        until,
        parsed.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        "ISO 8601 UTC with milliseconds, as the API's other times"
    );
    let later = view_standard(Some(&rotated), now() + chrono::Duration::seconds(61)).unwrap();
    assert!(later.previous_secret_valid_until.is_none());

    // The mask sent back keeps everything, including the running rotation.
    let masked = shown.secret.as_str();
    assert!(
        masked.starts_with("whsec_") && masked.len() < 16,
        "{masked}"
    );
    let kept = parse_standard(&json!({"secret": masked}), Some(&rotated), now()).unwrap();
    assert_eq!(kept.as_ref(), Some(&rotated));
    // So does the whole view, its read-only end of the rotation included.
    let read = serde_json::to_value(&shown).unwrap();
    assert!(read["previousSecretValidUntil"].is_string(), "{read}");
    let kept = parse_standard(&read, Some(&rotated), now()).unwrap();
    assert_eq!(kept.as_ref(), Some(&rotated));
    // Zero overlap: the old secret stops at once.
    let abrupt = parse_standard(
        &json!({"secret": SECRET, "rotationOverlapSeconds": 0}),
        Some(&rotated),
        now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(abrupt.previous_secret, None);
    assert_eq!(
        parse_standard(&Value::Null, Some(&rotated), now()).unwrap(),
        None
    );
}

#[test]
fn ca_bundle_refuses_non_pem_and_allows_removal() {
    let err = message(parse_ca_bundle(&json!("not a certificate")).unwrap_err());
    assert!(err.contains("settings.caBundle"), "{err}");
    assert_eq!(parse_ca_bundle(&json!("")).unwrap(), None);
    assert_eq!(parse_ca_bundle(&Value::Null).unwrap(), None);
    assert!(parse_ca_bundle(&json!(5)).is_err());
}
