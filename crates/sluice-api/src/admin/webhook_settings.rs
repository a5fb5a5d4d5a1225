//! Validation of Webhooks destination settings, and their masked view.
//!
//! Settings, as Segment's Webhooks destination has them: up to 5 URL
//! entries, each a full http(s) URL with optional static `key: value`
//! headers, and an optional `sharedSecret`. Every failure
//! names the offending field, e.g. `settings.urls[2].headers.X-A: …`.
//!
//! A URL whose host literally names a blocked address (loopback, private,
//! link-local…, see `sluice_outbound::network`) is refused unless the
//! operator allowed its network. Credentials are shown masked (URL
//! userinfo, sensitive header values); an update that sends a masked value
//! back unchanged keeps the stored one.
//!
//! Opt-ins beside those (`standardWebhooks`, `caBundle`) live in [`extras`];
//! the shown and accepted shapes (serde and OpenAPI types) in [`mod@view`].

pub mod extras;
pub mod view;

pub use view::{SettingsInput, SettingsView, UrlInput, UrlView, view};

use axum::http::{HeaderName, HeaderValue};
use serde_json::Value;
use sluice_outbound::mask::{self, is_masked_url_of, looks_masked};
use sluice_outbound::{Masker, NetworkPolicy, is_refused_static_header};
use sluice_store::{WebhookSettings, WebhookUrl};

use crate::error::ApiError;

/// The most URL entries a Webhooks destination may have.
pub const MAX_URLS: usize = 5;

/// The keys of `settings` ([`SettingsInput`] documents them).
pub const KNOWN_SETTINGS: &[&str] = &["urls", "sharedSecret", "standardWebhooks", "caBundle"];

/// The rules settings are checked and shown by.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub network: NetworkPolicy,
    pub masker: Masker,
}

/// Parses `settings` from a create or update body. `previous` supplies the
/// secret kept when an update omits `sharedSecret` (an explicit `null` or
/// `""` removes it), and the credentials kept when masked values come back.
pub fn parse(
    value: &Value,
    previous: Option<&WebhookSettings>,
    rules: &Rules,
) -> Result<WebhookSettings, ApiError> {
    let obj = value
        .as_object()
        .ok_or_else(|| ApiError::invalid("settings", "must be an object"))?;
    for key in obj.keys() {
        if !KNOWN_SETTINGS.contains(&key.as_str()) {
            return Err(ApiError::invalid(
                &format!("settings.{key}"),
                "is not a known setting",
            ));
        }
    }
    let urls = match obj.get("urls") {
        None => previous.map(|p| p.urls.clone()).unwrap_or_default(),
        Some(v) => parse_urls(v, previous, rules)?,
    };
    let shared_secret = match obj.get("sharedSecret") {
        None => previous.and_then(|p| p.shared_secret.clone()),
        Some(v) => keep_stored_secret(
            parse_secret(v)?,
            previous.and_then(|p| p.shared_secret.as_deref()),
        )?,
    };
    let standard_webhooks = match obj.get("standardWebhooks") {
        None => previous.and_then(|p| p.standard_webhooks.clone()),
        Some(v) => extras::parse_standard(
            v,
            previous.and_then(|p| p.standard_webhooks.as_ref()),
            chrono::Utc::now(),
        )?,
    };
    let ca_bundle = match obj.get("caBundle") {
        None => previous.and_then(|p| p.ca_bundle.clone()),
        Some(v) => extras::parse_ca_bundle(v)?,
    };
    Ok(WebhookSettings {
        urls,
        shared_secret,
        standard_webhooks,
        ca_bundle,
    })
}

fn parse_urls(
    value: &Value,
    previous: Option<&WebhookSettings>,
    rules: &Rules,
) -> Result<Vec<WebhookUrl>, ApiError> {
    let items = value
        .as_array()
        .ok_or_else(|| ApiError::invalid("settings.urls", "must be an array"))?;
    if items.len() > MAX_URLS {
        return Err(ApiError::invalid(
            "settings.urls",
            format!(
                "at most {MAX_URLS} webhook URLs are allowed, got {}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let entry = parse_entry(&format!("settings.urls[{i}]"), item, rules)?;
            unmask(
                &format!("settings.urls[{i}]"),
                entry,
                previous,
                &rules.masker,
            )
        })
        .collect()
}

/// Parses `sharedSecret`: `null` or `""` mean none. Public so that the
/// dashboard validates the field on its own with the same message.
pub fn parse_secret(value: &Value) -> Result<Option<String>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) if s.trim().is_empty() => Err(ApiError::invalid(
            "settings.sharedSecret",
            "must not be only spaces (leave it empty for no secret)",
        )),
        Value::String(s) if s.len() > 1024 => Err(ApiError::invalid(
            "settings.sharedSecret",
            "must be at most 1024 bytes",
        )),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(ApiError::invalid(
            "settings.sharedSecret",
            "must be a string",
        )),
    }
}

/// A `sharedSecret` is shown as a sensitive header value is
/// ([`mask::mask_value`]: a short secret shows no character of itself).
/// Sent back as a read showed it, it keeps the stored secret;
/// a masked-looking one that is not the stored secret's shown form is
/// refused, never saved as the new secret (every signature would then be
/// keyed with the mask).
fn keep_stored_secret(
    sent: Option<String>,
    stored: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let Some(sent) = sent else {
        return Ok(None);
    };
    if let Some(stored) = stored.filter(|s| mask::is_mask_of(&sent, s)) {
        return Ok(Some(stored.to_owned()));
    }
    if looks_masked(&sent) {
        return Err(ApiError::invalid(
            "settings.sharedSecret",
            "is a masked value that matches no stored secret; send the full secret",
        ));
    }
    Ok(Some(sent))
}

/// Puts stored credentials back where a client sent their masked form: a
/// URL equal to a stored URL's masked form is that stored URL, and a masked
/// sensitive header value of that entry is its stored value. A masked-looking
/// value with nothing stored behind it is refused rather than saved.
fn unmask(
    field: &str,
    mut entry: WebhookUrl,
    previous: Option<&WebhookSettings>,
    masker: &Masker,
) -> Result<WebhookUrl, ApiError> {
    let stored_urls = previous.map(|p| p.urls.as_slice()).unwrap_or_default();
    if let Some(stored) = stored_urls
        .iter()
        .find(|s| is_masked_url_of(&entry.url, &s.url))
    {
        entry.url = stored.url.clone();
    } else if entry.url.contains(&format!("{}@", mask::HIDDEN)) {
        return Err(ApiError::invalid(
            &format!("{field}.url"),
            "carries masked credentials that match no stored URL; send the full URL",
        ));
    }
    let stored = stored_urls.iter().find(|s| s.url == entry.url);
    for (name, value) in &mut entry.headers {
        if !masker.is_sensitive(name) || !looks_masked(value) {
            continue;
        }
        let kept = stored.and_then(|s| {
            s.headers
                .iter()
                .find(|(n, v)| n.eq_ignore_ascii_case(name) && masker.is_mask_of(name, value, v))
        });
        match kept {
            Some((_, v)) => *value = v.clone(),
            None => {
                return Err(ApiError::invalid(
                    &format!("{field}.headers.{name}"),
                    "is a masked value that matches no stored value; send the full value",
                ));
            }
        }
    }
    Ok(entry)
}

/// Parses one URL entry; `field` names it in messages
/// (`settings.urls[2]`). Public so that the dashboard validates each entry
/// on its own and shows every error next to its field.
pub fn parse_entry(field: &str, item: &Value, rules: &Rules) -> Result<WebhookUrl, ApiError> {
    // A bare string is accepted as an entry without headers.
    let (url, headers) = match item {
        Value::String(s) => (s.as_str(), None),
        Value::Object(o) => {
            if let Some(k) = o.keys().find(|k| *k != "url" && *k != "headers") {
                return Err(ApiError::invalid(
                    &format!("{field}.{k}"),
                    "is not a known key",
                ));
            }
            let url = o
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::invalid(&format!("{field}.url"), "is required"))?;
            (url, o.get("headers"))
        }
        _ => return Err(ApiError::invalid(field, "must be an object with 'url'")),
    };
    let url = check_url(&format!("{field}.url"), url, &rules.network)?;
    let headers = match headers {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => parse_headers(&format!("{field}.headers"), v)?,
    };
    Ok(WebhookUrl { url, headers })
}

fn check_url(field: &str, raw: &str, network: &NetworkPolicy) -> Result<String, ApiError> {
    let parsed = url::Url::parse(raw.trim()).map_err(|e| {
        // Quoted with its userinfo hidden: the text may carry a password.
        let shown = sluice_outbound::mask::mask_url(raw);
        ApiError::invalid(field, format!("'{shown}' is not a full URL ({e})"))
    })?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(ApiError::invalid(
            field,
            "must use the http or https protocol",
        ));
    }
    let Some(host) = parsed.host().filter(|h| !h.to_string().is_empty()) else {
        return Err(ApiError::invalid(field, "must name a host"));
    };
    network.check_host(&host).map_err(|blocked| {
        ApiError::invalid(field, format!("names a blocked address: {blocked}"))
    })?;
    Ok(parsed.to_string())
}

/// Parses an entry's `headers` object; `field` names it in messages
/// (`settings.urls[2].headers`). Public so that the dashboard checks a
/// row's headers apart from its URL and shows both errors.
pub fn parse_headers(field: &str, value: &Value) -> Result<Vec<(String, String)>, ApiError> {
    let obj = value
        .as_object()
        .ok_or_else(|| ApiError::invalid(field, "must be an object of name: value"))?;
    let mut out = Vec::with_capacity(obj.len());
    for (name, v) in obj {
        let here = format!("{field}.{name}");
        let v = v
            .as_str()
            .ok_or_else(|| ApiError::invalid(&here, "value must be a string"))?;
        if name.is_empty() {
            return Err(ApiError::invalid(field, "header names must not be empty"));
        }
        HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ApiError::invalid(&here, "is not a valid HTTP header name"))?;
        // The sender drops the same names ([`is_refused_static_header`]).
        if is_refused_static_header(name) {
            return Err(ApiError::invalid(
                &here,
                "is set by Sluice and cannot be overridden",
            ));
        }
        if v.contains(['\r', '\n']) || HeaderValue::from_str(v).is_err() {
            return Err(ApiError::invalid(
                &here,
                "value has characters not allowed in HTTP headers",
            ));
        }
        out.push((name.clone(), v.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "webhook_settings_tests.rs"]
mod tests;
