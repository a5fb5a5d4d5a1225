//! The opt-in settings beside URLs and `sharedSecret`: Standard Webhooks
//! signing (`standardWebhooks`) and a private CA bundle (`caBundle`).
//!
//! `standardWebhooks` is `null` (off) or
//! `{"secret": "whsec_…" | "generate", "rotationOverlapSeconds": N}`.
//! Setting a secret other than the stored one is a rotation: the old
//! secret keeps signing beside the new one for the overlap (default 24 h,
//! as Svix does), so receivers can switch without losing a request.
//! Secrets are shown as `whsec_` and four characters; sending that mask
//! back keeps the stored secret.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_signing::standard::{self, GENERATED_KEY_BYTES};
use sluice_store::StandardWebhooks;
use utoipa::ToSchema;

use crate::error::ApiError;

const FIELD: &str = "settings.standardWebhooks";
/// Overlap after a rotation when the request names none: 24 hours.
pub const DEFAULT_ROTATION_OVERLAP_SECS: i64 = 24 * 60 * 60;
/// The longest overlap accepted: 30 days.
pub const MAX_ROTATION_OVERLAP_SECS: i64 = 30 * 24 * 60 * 60;
/// The keys of `standardWebhooks` ([`StandardInput`] documents them).
/// `previousSecretValidUntil` is read-only: it is accepted and ignored, so
/// that settings can be sent back exactly as a read showed them.
pub const STANDARD_KEYS: &[&str] = &[
    "secret",
    "rotationOverlapSeconds",
    "previousSecretValidUntil",
];
/// The `secret` value that asks Sluice to generate one.
pub const GENERATE: &str = "generate";

/// Parses `standardWebhooks` against the stored value at `now`.
pub fn parse_standard(
    value: &Value,
    previous: Option<&StandardWebhooks>,
    now: DateTime<Utc>,
) -> Result<Option<StandardWebhooks>, ApiError> {
    let obj = match value {
        Value::Null => return Ok(None),
        Value::Object(obj) => obj,
        _ => return Err(ApiError::invalid(FIELD, "must be an object or null")),
    };
    if let Some(k) = obj.keys().find(|k| !STANDARD_KEYS.contains(&k.as_str())) {
        return Err(ApiError::invalid(
            &format!("{FIELD}.{k}"),
            "is not a known key",
        ));
    }
    let overlap = match obj.get("rotationOverlapSeconds") {
        None | Some(Value::Null) => DEFAULT_ROTATION_OVERLAP_SECS,
        Some(v) => v
            .as_i64()
            .filter(|n| (0..=MAX_ROTATION_OVERLAP_SECS).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    &format!("{FIELD}.rotationOverlapSeconds"),
                    format!("must be an integer from 0 to {MAX_ROTATION_OVERLAP_SECS}"),
                )
            })?,
    };
    let secret_field = format!("{FIELD}.secret");
    let requested = match obj.get("secret") {
        None | Some(Value::Null) => previous.map(|p| p.secret.clone()),
        Some(Value::String(s)) if s == GENERATE => Some(generate()),
        Some(Value::String(s)) => match previous {
            Some(p) if *s == mask(&p.secret) => Some(p.secret.clone()),
            _ => {
                standard::secret_key(s)
                    .map_err(|e| ApiError::invalid(&secret_field, e.to_string()))?;
                Some(s.clone())
            }
        },
        Some(_) => return Err(ApiError::invalid(&secret_field, "must be a string")),
    };
    let secret = requested.ok_or_else(|| {
        ApiError::invalid(
            &secret_field,
            "is required: a 'whsec_…' secret, or \"generate\"",
        )
    })?;
    Ok(Some(match previous {
        Some(p) if p.secret != secret => StandardWebhooks {
            previous_secret: (overlap > 0).then(|| p.secret.clone()),
            previous_until: (overlap > 0).then(|| now + chrono::Duration::seconds(overlap)),
            secret,
        },
        // Unchanged: a rotation still in progress keeps running.
        Some(p) => p.clone(),
        None => StandardWebhooks {
            secret,
            previous_secret: None,
            previous_until: None,
        },
    }))
}

/// A new random `whsec_…` secret.
fn generate() -> String {
    let key: [u8; GENERATED_KEY_BYTES] = rand::random();
    standard::secret_from_key(&key)
}

/// The shown form of a secret: `whsec_` and its next four characters.
pub fn mask(secret: &str) -> String {
    let body = secret
        .strip_prefix(standard::SECRET_PREFIX)
        .unwrap_or(secret);
    let head: String = body.chars().take(4).collect();
    format!("{}{head}…", standard::SECRET_PREFIX)
}

/// `standardWebhooks` as the admin API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct StandardView {
    /// `whsec_` and 4 characters; in full only in the answer to the request
    /// that generated it.
    #[schema(example = "whsec_MfKQ…")]
    pub secret: String,
    /// While a rotation runs, when the old secret stops signing (ISO 8601 UTC
    /// with milliseconds).
    #[serde(rename = "previousSecretValidUntil")]
    pub previous_secret_valid_until: Option<String>,
}

/// `standardWebhooks` in a request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StandardInput {
    /// `"generate"`, or `whsec_` and standard base64 of 16 to 64 key bytes.
    /// Omitted: keep the stored one. Another than the stored one rotates.
    pub secret: Option<String>,
    /// 0 to 2592000, default 86400: how long the old secret keeps signing.
    #[serde(rename = "rotationOverlapSeconds")]
    #[schema(minimum = 0, maximum = 2592000)]
    pub rotation_overlap_seconds: Option<i64>,
    /// Read-only (see [`StandardView`]): accepted and ignored, so that a
    /// read can be sent back unchanged.
    #[serde(rename = "previousSecretValidUntil")]
    pub previous_secret_valid_until: Option<String>,
}

/// The admin API's view of `standardWebhooks` at `now`: masked secret and
/// when a running rotation's old secret stops signing.
pub fn view_standard(s: Option<&StandardWebhooks>, now: DateTime<Utc>) -> Option<StandardView> {
    let s = s?;
    let until = s
        .previous_until
        .filter(|until| *until > now && s.previous_secret.is_some());
    Some(StandardView {
        secret: mask(&s.secret),
        // ISO 8601 UTC with milliseconds, as every time in the admin API.
        previous_secret_valid_until: until
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    })
}

/// Whether the request asked for a generated secret; the response to that
/// request alone then carries the new secret in full (the only time it is
/// shown, as with a source's write key).
pub fn asked_to_generate(settings: &Value) -> bool {
    settings
        .get("standardWebhooks")
        .and_then(|s| s.get("secret"))
        .and_then(Value::as_str)
        == Some(GENERATE)
}

/// Parses `caBundle`: `null` or `""` remove it; otherwise a PEM bundle of CA
/// certificates only.
pub fn parse_ca_bundle(value: &Value) -> Result<Option<String>, ApiError> {
    const CA_FIELD: &str = "settings.caBundle";
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => {
            sluice_outbound::ca::parse_bundle(s)
                .map_err(|e| ApiError::invalid(CA_FIELD, e.to_string()))?;
            Ok(Some(s.clone()))
        }
        _ => Err(ApiError::invalid(CA_FIELD, "must be a PEM string or null")),
    }
}

#[cfg(test)]
#[path = "extras_tests.rs"]
mod tests;
