//! `testdata/signatures/vectors.json` through [`sign`] and [`verify`].

use sluice_signing::{sign, to_js_json, verify};

use crate::{field, load_vectors};

#[test]
fn sign_reproduces_every_signature_vector() {
    for v in load_vectors("signatures/vectors.json") {
        let (secret, body) = (field(&v, "secret"), field(&v, "body"));
        assert_eq!(
            sign(secret.as_bytes(), body.as_bytes()),
            field(&v, "signature"),
            "{v}"
        );
    }
}

#[test]
fn verify_accepts_every_signature_vector() {
    for v in load_vectors("signatures/vectors.json") {
        let (secret, body) = (field(&v, "secret"), field(&v, "body"));
        assert!(
            verify(secret.as_bytes(), body.as_bytes(), field(&v, "signature")),
            "{v}"
        );
    }
}

#[test]
fn verify_rejects_every_vector_with_a_changed_body() {
    for v in load_vectors("signatures/vectors.json") {
        let (secret, body) = (field(&v, "secret"), field(&v, "body"));
        let tampered = format!("{body} ");
        assert!(
            !verify(
                secret.as_bytes(),
                tampered.as_bytes(),
                field(&v, "signature")
            ),
            "{v}"
        );
    }
}

#[test]
fn signature_over_sent_body_matches_signature_over_reserialized_body() {
    // What a JSON.stringify(req.body) receiver signs is what we sent, so a
    // body rendered by to_js_json signs the same both ways.
    let raw = r#"{ "b": 1.0, "1": "x", "a": [1e21, -0] }"#;
    let sent = to_js_json(&serde_json::from_str(raw).unwrap());
    let reserialized = to_js_json(&serde_json::from_str(&sent).unwrap());
    assert_eq!(sent, r#"{"1":"x","b":1,"a":[1e+21,0]}"#);
    assert_eq!(
        sign(b"s", sent.as_bytes()),
        sign(b"s", reserialized.as_bytes())
    );
}
