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
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The displayable start of a secret: its first 4 characters and an ellipsis.
pub fn hint(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}…")
}

/// Whether `secret` hashes to `expected_hash`, compared in constant time.
pub fn verify_secret(secret: &str, expected_hash: &str) -> bool {
    hash_secret(secret)
        .as_bytes()
        .ct_eq(expected_hash.as_bytes())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

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
