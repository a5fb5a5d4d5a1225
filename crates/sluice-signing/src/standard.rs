//! Standard Webhooks signatures (<https://www.standardwebhooks.com>).
//!
//! Three headers: `webhook-id` (stable across retries of one delivery),
//! `webhook-timestamp` (Unix seconds of this attempt) and
//! `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries
//! over `{id}.{timestamp}.{body}`. The key is the base64 part of a
//! `whsec_…` secret. During a secret rotation one entry per secret is sent,
//! and receivers accept the request when any entry verifies.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// The prefix of a Standard Webhooks secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a generated secret (what Svix generates; 192 bits).
pub const GENERATED_KEY_BYTES: usize = 24;
/// Fewest key bytes accepted in a supplied secret (128 bits).
pub const MIN_KEY_BYTES: usize = 16;
/// Most key bytes accepted (one HMAC-SHA256 block).
pub const MAX_KEY_BYTES: usize = 64;

/// Why a string is not a usable `whsec_…` secret. Messages never echo it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("must start with 'whsec_'")]
    Prefix,
    #[error("must be 'whsec_' followed by standard base64")]
    Base64,
    #[error("must encode between 16 and 64 key bytes, got {0}")]
    Length(usize),
}

/// The HMAC key of a `whsec_…` secret.
pub fn secret_key(secret: &str) -> Result<Vec<u8>, SecretError> {
    let encoded = secret
        .strip_prefix(SECRET_PREFIX)
        .ok_or(SecretError::Prefix)?;
    let key = B64.decode(encoded).map_err(|_| SecretError::Base64)?;
    if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&key.len()) {
        return Err(SecretError::Length(key.len()));
    }
    Ok(key)
}

/// The `whsec_…` form of `key` (the caller supplies the randomness).
pub fn secret_from_key(key: &[u8]) -> String {
    format!("{SECRET_PREFIX}{}", B64.encode(key))
}

/// The `webhook-id` of one delivery: the same on every retry, so receivers
/// can deduplicate, and distinct per destination for the same event.
/// `msg_` and 32 hex digits of SHA-256 over destination and messageId.
pub fn webhook_id(destination_id: &str, message_id: &str) -> String {
    use sha2::Digest as _;
    let mut hash = Sha256::new();
    hash.update(destination_id.as_bytes());
    hash.update([0u8]);
    hash.update(message_id.as_bytes());
    format!("msg_{}", hex::encode(&hash.finalize()[..16]))
}

/// One signature entry, `v1,<base64>`, of `body` sent as message `id` at
/// `timestamp` (Unix seconds).
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    format!("v1,{}", B64.encode(digest(key, id, timestamp, body)))
}

/// The `webhook-signature` value: one entry per key, space-separated, in
/// the order given (the current secret first).
pub fn signature_header(keys: &[&[u8]], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| sign(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether any `v1` entry of `header` is the signature of `body` under
/// `key`, compared in constant time. No clock: the caller checks the
/// timestamp's age.
pub fn verify(key: &[u8], id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
    let expected = digest(key, id, timestamp, body);
    header.split(' ').any(|entry| {
        entry
            .strip_prefix("v1,")
            .and_then(|b64| B64.decode(b64).ok())
            .is_some_and(|got| bool::from(got.ct_eq(&expected)))
    })
}

fn digest(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example from the Standard Webhooks reference libraries' tests.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn sign_matches_the_reference_vector() {
        let key = secret_key(SECRET).expect("valid secret");
        assert_eq!(sign(&key, ID, TS, BODY), EXPECTED);
        assert!(verify(&key, ID, TS, BODY, EXPECTED));
    }

    #[test]
    fn rotation_header_carries_one_entry_per_key_and_each_verifies() {
        let new = [7u8; 24];
        let old = [9u8; 24];
        let header = signature_header(&[&new, &old], ID, TS, BODY);
        let entries: Vec<&str> = header.split(' ').collect();
        assert_eq!(entries.len(), 2);
        assert!(verify(&new, ID, TS, BODY, &header));
        assert!(verify(&old, ID, TS, BODY, &header));
        assert!(!verify(&[1u8; 24], ID, TS, BODY, &header));
    }

    #[test]
    fn verify_rejects_other_id_timestamp_or_body() {
        let key = [3u8; 32];
        let header = signature_header(&[&key], ID, TS, BODY);
        assert!(!verify(&key, "msg_other", TS, BODY, &header));
        assert!(!verify(&key, ID, TS + 1, BODY, &header));
        assert!(!verify(&key, ID, TS, b"{}", &header));
        assert!(!verify(&key, ID, TS, BODY, &header.replace("v1,", "v2,")));
    }

    #[test]
    fn webhook_id_is_stable_and_differs_per_destination() {
        let a = webhook_id("dst_a", "m-1");
        assert_eq!(a, webhook_id("dst_a", "m-1"));
        assert_ne!(a, webhook_id("dst_b", "m-1"));
        assert_ne!(a, webhook_id("dst_a", "m-2"));
        assert!(a.starts_with("msg_") && a.len() == 36, "{a}");
    }

    #[test]
    fn secrets_round_trip_and_bad_forms_are_refused() {
        let key = [42u8; GENERATED_KEY_BYTES];
        let secret = secret_from_key(&key);
        assert!(secret.starts_with("whsec_"));
        assert_eq!(secret_key(&secret).expect("own form"), key);
        assert_eq!(
            secret_key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(SecretError::Prefix)
        );
        assert_eq!(secret_key("whsec_not base64!"), Err(SecretError::Base64));
        assert_eq!(secret_key("whsec_AAAA"), Err(SecretError::Length(3)));
    }
}
