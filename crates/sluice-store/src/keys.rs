//! Ids, write keys and the hashes the store keeps instead of keys.

use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A new random id with a type prefix, e.g. `src_7Gq...` (16 alphanumerics,
/// about 95 bits: ids are names, not secrets).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_alnum(16))
}

/// A new write key: 32 alphanumerics, about 190 bits of entropy.
pub fn new_write_key() -> String {
    random_alnum(32)
}

/// A new secret token (admin token): 40 alphanumerics.
pub fn new_token() -> String {
    random_alnum(40)
}

fn random_alnum(n: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// SHA-256 of a secret, lowercase hex: what is stored and looked up.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(secret_digest(secret))
}

/// SHA-256 of a secret: the bytes [`hash_secret`] writes out. The ingest
/// path looks keys up by these, with no hex string per request.
pub fn secret_digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The digest a stored [`hash_secret`] names; `None` if it is not one.
pub fn parse_hash(hash: &str) -> Option<[u8; 32]> {
    let mut digest = [0; 32];
    hex::decode_to_slice(hash, &mut digest).ok()?;
    Some(digest)
}

/// Whether two digests are equal, compared in constant time.
pub fn digests_match(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// The displayable start of a secret: its first 4 characters and an ellipsis.
pub fn hint(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}…")
}

/// Whether `secret` hashes to `expected_hash`, compared in constant time.
pub fn verify_secret(secret: &str, expected_hash: &str) -> bool {
    parse_hash(expected_hash)
        .is_some_and(|expected| digests_match(&secret_digest(secret), &expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_the_bytes_of_the_stored_hash() {
        let hash = hash_secret("key");
        assert_eq!(parse_hash(&hash), Some(secret_digest("key")));
        assert!(digests_match(&secret_digest("key"), &secret_digest("key")));
        assert!(!digests_match(&secret_digest("key"), &secret_digest("kez")));
        assert_eq!(parse_hash("not hex"), None);
        assert_eq!(parse_hash("abcd"), None, "too short");
    }

    #[test]
    fn write_keys_are_long_and_distinct() {
        let a = new_write_key();
        let b = new_write_key();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn verify_accepts_only_the_hashed_secret() {
        let h = hash_secret("k1");
        assert!(verify_secret("k1", &h));
        assert!(!verify_secret("k2", &h));
    }

    #[test]
    fn hint_shows_four_characters() {
        assert_eq!(hint("abcdefgh"), "abcd…");
    }
}
