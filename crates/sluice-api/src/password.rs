//! Dashboard passwords: argon2id with the `argon2` crate's default cost
//! (19 MiB, 2 passes, 1 lane: OWASP's recommended minimum), stored as PHC
//! strings. Hashing and checking run on the blocking pool, so a sign-in
//! never stalls the request workers.
//!
//! A sign-in for a username that does not exist is checked against a
//! throwaway hash all the same, so that the answer's timing does not tell
//! which usernames exist.

pub mod guesses;

use std::sync::{Mutex, OnceLock};

use argon2::password_hash::SaltString;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};

use crate::error::{ApiError, ApiResult};

/// The shortest password accepted, in characters.
pub const MIN_CHARS: usize = 12;
/// The longest password accepted, in bytes.
pub const MAX_BYTES: usize = 1024;

/// Refuses a password that is too short or too long, naming `field`.
pub fn check(field: &str, password: &str) -> ApiResult<()> {
    if password.chars().count() < MIN_CHARS {
        return Err(ApiError::invalid(
            field,
            format!("must be at least {MIN_CHARS} characters"),
        ));
    }
    if password.len() > MAX_BYTES {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {MAX_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn hash_now(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())?;
    Ok(Argon2::default()
        .hash_password(password.as_bytes(), &salt)?
        .to_string())
}

/// The argon2id PHC string of `password`.
pub async fn hash(password: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .map_err(|e| ApiError::from(sluice_store::StoreError::internal(format!("hashing: {e}"))))?
        .map_err(|e| ApiError::from(sluice_store::StoreError::internal(format!("hashing: {e}"))))
}

/// Whether `password` matches `stored`; with no stored hash, a throwaway
/// one is checked so that the time taken is the same, and the answer no.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    let known = stored.is_some();
    tokio::task::spawn_blocking(move || {
        let phc = match stored {
            Some(s) => s,
            None => throwaway().to_owned(),
        };
        let Ok(parsed) = PasswordHash::new(&phc) else {
            return false;
        };
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && known
    })
    .await
    .unwrap_or(false)
}

/// Runs `f` on this node's count of wrong current passwords
/// ([`guesses`]); a poisoned lock is still usable (plain counters).
pub fn with_guesses<T>(f: impl FnOnce(&mut guesses::Guesses) -> T) -> T {
    static GUESSES: OnceLock<Mutex<guesses::Guesses>> = OnceLock::new();
    let lock = GUESSES.get_or_init(Mutex::default);
    let mut g = match lock.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    f(&mut g)
}

fn throwaway() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let random: String = sluice_store::keys::new_token();
        hash_now(&random).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let h = hash("correct horse battery".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify("correct horse battery".into(), Some(h.clone())).await);
        assert!(!verify("correct horse batterz".into(), Some(h)).await);
        assert!(!verify("anything".into(), None).await);
    }

    #[test]
    fn short_and_huge_passwords_are_refused() {
        assert!(check("password", "short").is_err());
        assert!(check("password", &"x".repeat(MAX_BYTES + 1)).is_err());
        assert!(check("password", "twelve chars").is_ok());
    }
}
