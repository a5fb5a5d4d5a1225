//! Webhooks settings as the admin API shows them ([`SettingsView`], masked)
//! and as requests give them ([`SettingsInput`], which documents the keys
//! [`super::parse`] accepts).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_outbound::Masker;
use sluice_outbound::mask::{mask_url, mask_value};
use sluice_store::WebhookSettings;
use utoipa::ToSchema;

use super::extras;

/// Webhooks settings as the admin API shows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsView {
    /// Up to 5 entries.
    pub urls: Vec<UrlView>,
    /// Masked: the first 4 characters and `…` for a secret of 12 or more
    /// characters, `…` alone for a shorter one; `null` when unset. Sent back
    /// unchanged, it keeps the stored secret.
    #[serde(rename = "sharedSecret")]
    pub shared_secret: Option<String>,
    /// `null` when Standard Webhooks signing is off.
    #[serde(rename = "standardWebhooks")]
    pub standard_webhooks: Option<extras::StandardView>,
    /// PEM CA certificates trusted for this destination only.
    #[serde(rename = "caBundle")]
    pub ca_bundle: Option<String>,
}

/// One webhook URL with its static headers.
#[derive(Debug, Serialize, ToSchema)]
pub struct UrlView {
    /// Userinfo shown as `****`.
    pub url: String,
    /// Sensitive values masked.
    #[schema(value_type = std::collections::HashMap<String, String>)]
    pub headers: serde_json::Map<String, Value>,
}

/// Webhooks settings as a create or update body gives them. Each key is
/// optional; on update an omitted key keeps its value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsInput {
    /// Each entry a URL string or `{"url", "headers"}`; at most 5. Replaces the list.
    pub urls: Option<Vec<UrlInput>>,
    /// At most 1024 bytes; `null` or `""` removes it.
    #[serde(rename = "sharedSecret")]
    pub shared_secret: Option<String>,
    /// `null` turns Standard Webhooks signing off.
    #[serde(rename = "standardWebhooks")]
    pub standard_webhooks: Option<extras::StandardInput>,
    /// PEM CA certificates (CA:TRUE only, at most 16, 64 KiB); `null` removes it.
    #[serde(rename = "caBundle")]
    pub ca_bundle: Option<String>,
}

/// A webhook URL entry in a request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum UrlInput {
    /// A full http(s) URL.
    Url(String),
    /// A URL with static headers (names not reserved, values without CR/LF).
    WithHeaders {
        url: String,
        headers: Option<std::collections::BTreeMap<String, String>>,
    },
}

/// Settings as the admin API shows them: the secret, URL userinfo and
/// sensitive header values masked.
pub fn view(settings: &WebhookSettings, masker: &Masker) -> SettingsView {
    let urls = settings
        .urls
        .iter()
        .map(|u| UrlView {
            url: mask_url(&u.url),
            headers: u
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(masker.header_value(k, v))))
                .collect(),
        })
        .collect();
    SettingsView {
        urls,
        shared_secret: settings.shared_secret.as_deref().map(mask_value),
        standard_webhooks: extras::view_standard(
            settings.standard_webhooks.as_ref(),
            chrono::Utc::now(),
        ),
        ca_bundle: settings.ca_bundle.clone(),
    }
}
