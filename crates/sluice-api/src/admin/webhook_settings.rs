//! Validation of Webhooks destination settings, and their masked view.
//!
//! Settings (seed): up to 5 URL entries, each a full http(s) URL with optional
//! static `key: value` headers, and an optional `sharedSecret`. Every failure
//! names the offending field, e.g. `settings.urls[2].headers.X-A: …`.

use axum::http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use sluice_store::{WebhookSettings, WebhookUrl, keys};

use crate::error::ApiError;

/// The most URL entries a Webhooks destination may have.
pub const MAX_URLS: usize = 5;

/// Headers Sluice sets itself on every delivery. A static header may not name
/// one: the request's framing, its identity and its signature are not the
/// customer's to override.
pub const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "host",
    "user-agent",
    "x-signature",
    "x-sluice-message-id",
    "x-sluice-attempt",
];

/// Parses `settings` from a create or update body. `previous` supplies the
/// secret kept when an update omits `sharedSecret` (an explicit `null` or
/// `""` removes it).
pub fn parse(
    value: &Value,
    previous: Option<&WebhookSettings>,
) -> Result<WebhookSettings, ApiError> {
    let obj = value
        .as_object()
        .ok_or_else(|| ApiError::invalid("settings", "must be an object"))?;
    for key in obj.keys() {
        if key != "urls" && key != "sharedSecret" {
            return Err(ApiError::invalid(
                &format!("settings.{key}"),
                "is not a known setting",
            ));
        }
    }
    let urls = match obj.get("urls") {
        None => previous.map(|p| p.urls.clone()).unwrap_or_default(),
        Some(v) => parse_urls(v)?,
    };
    let shared_secret = match obj.get("sharedSecret") {
        None => previous.and_then(|p| p.shared_secret.clone()),
        Some(v) => parse_secret(v)?,
    };
    Ok(WebhookSettings {
        urls,
        shared_secret,
    })
}

fn parse_urls(value: &Value) -> Result<Vec<WebhookUrl>, ApiError> {
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
        .map(|(i, item)| parse_entry(&format!("settings.urls[{i}]"), item))
        .collect()
}

/// Parses `sharedSecret`: `null` or `""` mean none. Public so that the
/// dashboard validates the field on its own with the same message.
pub fn parse_secret(value: &Value) -> Result<Option<String>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
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

/// Parses one URL entry; `field` names it in messages
/// (`settings.urls[2]`). Public so that the dashboard validates each entry
/// on its own and shows every error next to its field.
pub fn parse_entry(field: &str, item: &Value) -> Result<WebhookUrl, ApiError> {
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
    let url = check_url(&format!("{field}.url"), url)?;
    let headers = match headers {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => parse_headers(&format!("{field}.headers"), v)?,
    };
    Ok(WebhookUrl { url, headers })
}

fn check_url(field: &str, raw: &str) -> Result<String, ApiError> {
    let parsed = url::Url::parse(raw.trim())
        .map_err(|e| ApiError::invalid(field, format!("'{raw}' is not a full URL ({e})")))?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(ApiError::invalid(
            field,
            "must use the http or https protocol",
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(ApiError::invalid(field, "must name a host"));
    }
    Ok(parsed.to_string())
}

fn parse_headers(field: &str, value: &Value) -> Result<Vec<(String, String)>, ApiError> {
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
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
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

/// Settings as the admin API shows them: the secret masked.
pub fn view(settings: &WebhookSettings) -> Value {
    let urls: Vec<Value> = settings
        .urls
        .iter()
        .map(|u| {
            let headers: Map<String, Value> = u
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({"url": u.url, "headers": headers})
        })
        .collect();
    json!({
        "urls": urls,
        "sharedSecret": settings.shared_secret.as_deref().map(keys::hint),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(v: Value) -> String {
        parse(&v, None).unwrap_err().message
    }

    #[test]
    fn sixth_url_is_refused() {
        let urls: Vec<Value> = (0..6)
            .map(|i| json!({"url": format!("https://h{i}.example")}))
            .collect();
        assert!(err(json!({"urls": urls})).starts_with("settings.urls: at most 5"));
    }

    #[test]
    fn url_without_http_scheme_is_refused() {
        assert!(
            err(json!({"urls": [{"url": "ftp://x.example"}]})).contains("settings.urls[0].url")
        );
        assert!(err(json!({"urls": [{"url": "x.example/hook"}]})).contains("settings.urls[0].url"));
    }

    #[test]
    fn header_with_newline_or_bad_name_is_refused() {
        let e =
            err(json!({"urls": [{"url": "http://a.example", "headers": {"X-A": "b\r\nX-B: c"}}]}));
        assert!(e.contains("settings.urls[0].headers.X-A"), "{e}");
        let e = err(json!({"urls": [{"url": "http://a.example", "headers": {"X A": "b"}}]}));
        assert!(e.contains("not a valid HTTP header name"), "{e}");
        let e =
            err(json!({"urls": [{"url": "http://a.example", "headers": {"X-Signature": "b"}}]}));
        assert!(e.contains("set by Sluice"), "{e}");
    }

    #[test]
    fn omitted_secret_is_kept_and_null_removes_it() {
        let prev = WebhookSettings {
            urls: vec![],
            shared_secret: Some("s3cret".into()),
        };
        let kept = parse(&json!({"urls": []}), Some(&prev)).unwrap();
        assert_eq!(kept.shared_secret.as_deref(), Some("s3cret"));
        let removed = parse(&json!({"sharedSecret": null}), Some(&prev)).unwrap();
        assert_eq!(removed.shared_secret, None);
    }

    #[test]
    fn view_masks_the_secret() {
        let s = WebhookSettings {
            urls: vec![],
            shared_secret: Some("s3cretvalue".into()),
        };
        assert_eq!(view(&s)["sharedSecret"], json!("s3cr…"));
    }
}
