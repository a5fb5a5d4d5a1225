//! Request headers: the URL entry's static headers, then Sluice's own,
//! which win over static headers of the same name. Static headers the
//! admin API refuses ([`is_refused_static_header`]: framing, and names
//! Sluice owns) are dropped.

use http::HeaderName;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use sluice_outbound::is_refused_static_header;
use sluice_store::WebhookUrl;

use super::{Failure, Job};
use crate::policy::TransportError;

/// The product token sent as `User-Agent`.
pub const USER_AGENT: &str = "Sluice/1.0";
/// Hex HMAC-SHA1 of the body, keyed with the destination's shared secret.
pub const SIGNATURE_HEADER: &str = "x-signature";
/// The event's `messageId`, for receivers that deduplicate.
pub const MESSAGE_ID_HEADER: &str = "x-sluice-message-id";
/// The attempt number, 1-based.
pub const ATTEMPT_HEADER: &str = "x-sluice-attempt";
/// Standard Webhooks: the delivery's id, stable across retries.
pub const WEBHOOK_ID_HEADER: &str = "webhook-id";
/// Standard Webhooks: the attempt's Unix time in seconds.
pub const WEBHOOK_TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// Standard Webhooks: space-separated `v1,<base64>` signatures.
pub const WEBHOOK_SIGNATURE_HEADER: &str = "webhook-signature";

/// Builds the headers for one URL; fails (without echoing the value, which
/// may be a credential) when a static header is not valid HTTP.
pub fn build(url: &WebhookUrl, job: &Job) -> Result<HeaderMap, Failure> {
    build_inner(url, job).map_err(|message| Failure {
        kind: TransportError::InvalidRequest,
        message,
    })
}

fn build_inner(url: &WebhookUrl, job: &Job) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in &url.headers {
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("invalid static header name {name:?}"))?;
        // The admin API refuses these names; settings stored before it did
        // (or written around it) have them dropped here, by the same rule.
        if is_refused_static_header(name.as_str()) {
            continue;
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("invalid value for static header {name}"))?;
        headers.append(name, value);
    }
    headers.insert(
        http::header::USER_AGENT,
        HeaderValue::from_static(USER_AGENT),
    );
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(signature) = &job.signature {
        let value = HeaderValue::from_str(signature)
            .map_err(|_| "signature is not a valid header value".to_owned())?;
        headers.insert(HeaderName::from_static(SIGNATURE_HEADER), value);
    }
    if let Some(standard) = &job.standard {
        let id = HeaderValue::from_str(&standard.id)
            .map_err(|_| "webhook-id is not a valid header value".to_owned())?;
        let signature = HeaderValue::from_str(&standard.signature)
            .map_err(|_| "webhook-signature is not a valid header value".to_owned())?;
        headers.insert(HeaderName::from_static(WEBHOOK_ID_HEADER), id);
        headers.insert(
            HeaderName::from_static(WEBHOOK_TIMESTAMP_HEADER),
            HeaderValue::from(standard.timestamp),
        );
        headers.insert(HeaderName::from_static(WEBHOOK_SIGNATURE_HEADER), signature);
    }
    let message_id = HeaderValue::from_str(&job.message_id)
        .map_err(|_| "messageId is not a valid header value".to_owned())?;
    headers.insert(HeaderName::from_static(MESSAGE_ID_HEADER), message_id);
    headers.insert(
        HeaderName::from_static(ATTEMPT_HEADER),
        HeaderValue::from(job.attempt),
    );
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn job(signature: Option<&str>) -> Job {
        Job {
            delivery_id: 1,
            attempt: 3,
            message_id: "m-1".into(),
            body: Bytes::from_static(b"{}"),
            signature: signature.map(str::to_owned),
            standard: None,
            destination: None,
        }
    }

    fn url(headers: &[(&str, &str)]) -> WebhookUrl {
        WebhookUrl {
            url: "http://x/".into(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn sluice_headers_win_over_static_ones() {
        let h = build_inner(
            &url(&[
                ("User-Agent", "evil"),
                ("X-Signature", "forged"),
                ("Webhook-Signature", "v1,forged"),
                ("webhook-id", "forged"),
                ("X-Team", "a"),
            ]),
            &job(None),
        )
        .expect("valid headers");
        assert_eq!(h["user-agent"], USER_AGENT);
        assert!(h.get(SIGNATURE_HEADER).is_none());
        assert!(h.get(WEBHOOK_SIGNATURE_HEADER).is_none());
        assert!(h.get(WEBHOOK_ID_HEADER).is_none());
        assert_eq!(h["x-team"], "a");
        assert_eq!(h[MESSAGE_ID_HEADER], "m-1");
        assert_eq!(h[ATTEMPT_HEADER], "3");
    }

    #[test]
    fn framing_headers_are_dropped_and_signature_is_set_with_a_secret() {
        let h = build_inner(
            &url(&[("Host", "other"), ("Content-Length", "1")]),
            &job(Some("ab12")),
        )
        .expect("valid headers");
        assert!(h.get("host").is_none());
        assert!(h.get("content-length").is_none());
        assert_eq!(h[SIGNATURE_HEADER], "ab12");
    }

    #[test]
    fn standard_webhooks_headers_are_set_when_opted_in() {
        let mut j = job(None);
        j.standard = Some(super::super::StandardHeaders {
            id: "msg_1".into(),
            timestamp: 1_700_000_000,
            signature: "v1,a v1,b".into(),
        });
        let h = build_inner(&url(&[("webhook-timestamp", "0")]), &j).expect("valid headers");
        assert_eq!(h[WEBHOOK_ID_HEADER], "msg_1");
        assert_eq!(h[WEBHOOK_TIMESTAMP_HEADER], "1700000000");
        assert_eq!(h[WEBHOOK_SIGNATURE_HEADER], "v1,a v1,b");
        assert_eq!(h.get_all(WEBHOOK_TIMESTAMP_HEADER).iter().count(), 1);
    }

    #[test]
    fn every_name_the_admin_api_refuses_is_dropped_by_the_sender() {
        // The rule's own lists, and a later name under each owned prefix.
        let refused = sluice_outbound::headers::FRAMING_HEADERS
            .iter()
            .chain(sluice_outbound::headers::OWN_HEADERS)
            .copied()
            .chain(["X-Sluice-Tenant", "Webhook-Version"]);
        for name in refused {
            assert!(is_refused_static_header(name), "{name}");
            let h = build_inner(&url(&[(name, "static")]), &job(None)).expect("valid headers");
            assert!(
                h.iter().all(|(_, v)| v != "static"),
                "{name} was sent: {h:?}"
            );
        }
        let h = build_inner(&url(&[("X-Team", "static")]), &job(None)).expect("valid headers");
        assert_eq!(h["x-team"], "static");
    }

    #[test]
    fn invalid_static_header_fails_without_echoing_the_value() {
        let err = build_inner(&url(&[("X-Token", "line\nbreak-secret")]), &job(None))
            .expect_err("newline is invalid");
        assert!(!err.contains("secret"), "{err}");
    }
}
