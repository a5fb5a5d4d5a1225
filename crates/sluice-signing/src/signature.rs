//! `X-Signature`: lowercase hex HMAC-SHA1 of the body, keyed with the
//! destination's shared secret.
//!
//! SHA-1 is weak as a plain hash but HMAC-SHA1 remains a sound MAC, and it is
//! what Segment-compatible receivers already check, so we keep it.

use hmac::{Hmac, Mac};
use sha1::Sha1;

type HmacSha1 = Hmac<Sha1>;

/// Keyed MAC state; HMAC accepts keys of any length, so this never fails.
fn mac(secret: &[u8], body: &[u8]) -> HmacSha1 {
    let mut mac = <HmacSha1 as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(body);
    mac
}

/// The `X-Signature` value for `body`: 40 lowercase hex digits.
///
/// `body` must be the exact bytes sent (the UTF-8 of [`crate::to_js_json`]).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    hex::encode(mac(secret, body).finalize().into_bytes())
}

/// Whether `signature_hex` is the signature of `body` under `secret`.
///
/// Hex digits may be upper- or lowercase. The digest comparison runs in
/// constant time, so response timing does not leak how many leading bytes of
/// a forged signature were right. Anything that is not 40 hex digits is
/// rejected without computing the MAC; its length is not secret.
pub fn verify(secret: &[u8], body: &[u8], signature_hex: &str) -> bool {
    let mut expected = [0u8; 20];
    if hex::decode_to_slice(signature_hex, &mut expected).is_err() {
        return false;
    }
    mac(secret, body).verify_slice(&expected).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 2202 test case 2.
    const RFC2202_KEY: &[u8] = b"Jefe";
    const RFC2202_DATA: &[u8] = b"what do ya want for nothing?";
    const RFC2202_MAC: &str = "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79";

    #[test]
    fn sign_matches_rfc2202_vector_in_lowercase_hex() {
        assert_eq!(sign(RFC2202_KEY, RFC2202_DATA), RFC2202_MAC);
    }

    #[test]
    fn sign_accepts_empty_secret_and_body() {
        assert_eq!(sign(b"", b""), "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d");
    }

    #[test]
    fn sign_accepts_secret_longer_than_block_size() {
        let key = [0xaa_u8; 80];
        let data = b"Test Using Larger Than Block-Size Key - Hash Key First";
        assert_eq!(sign(&key, data), "aa4ae5e15272d00e95705637ce8a3b55ed402112");
    }

    #[test]
    fn verify_accepts_own_signature_in_either_case() {
        let sig = sign(b"secret", b"{}");
        assert!(verify(b"secret", b"{}", &sig));
        assert!(verify(b"secret", b"{}", &sig.to_uppercase()));
    }

    #[test]
    fn verify_rejects_other_secret_or_body() {
        let sig = sign(b"secret", b"{}");
        assert!(!verify(b"Secret", b"{}", &sig));
        assert!(!verify(b"secret", b"{ }", &sig));
    }

    #[test]
    fn verify_rejects_malformed_signatures() {
        let sig = sign(b"secret", b"{}");
        assert!(!verify(b"secret", b"{}", ""));
        assert!(!verify(b"secret", b"{}", &sig[..38]));
        assert!(!verify(b"secret", b"{}", &format!("{sig}00")));
        assert!(!verify(b"secret", b"{}", &format!("{}zz", &sig[..38])));
        assert!(!verify(b"secret", b"{}", &format!("sha1={sig}")));
    }

    #[test]
    fn verify_rejects_single_flipped_bit() {
        let mut bytes = hex::decode(sign(b"k", b"body")).unwrap();
        bytes[19] ^= 1;
        assert!(!verify(b"k", b"body", &hex::encode(bytes)));
    }
}
