//! Which static header names a webhook URL entry may carry.
//!
//! Why one rule: the admin API refuses these names when settings are
//! saved, and the sender drops them from settings stored before the rule
//! (or written around the API). Two lists drifted apart once (the API
//! accepted `Upgrade` and `X-Sluice-Tenant`, which the sender dropped
//! silently, and refused `Content-Encoding`, which the sender sent), so both
//! call [`is_refused_static_header`].

/// Names that describe the request's framing or routing. A static one
/// would corrupt the request (`Content-Length`, `Transfer-Encoding`), send
/// it elsewhere (`Host`), or claim an encoding the body does not have
/// (`Content-Encoding`).
pub const FRAMING_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
];

/// Names Sluice sets itself on every request: its identity and the body's
/// type.
pub const OWN_HEADERS: &[&str] = &["user-agent", "content-type", "x-signature"];

/// Prefixes of names Sluice owns: `X-Sluice-Message-Id`, `X-Sluice-Attempt`
/// and any later `X-Sluice-…`; the Standard Webhooks headers (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature`) and any later `webhook-…`, even
/// on a destination that has not opted in.
pub const OWN_PREFIXES: &[&str] = &["x-sluice-", "webhook-"];

/// Whether a static header called `name` (any case, surrounding spaces
/// ignored) is refused: the admin API rejects it and the sender drops it.
pub fn is_refused_static_header(name: &str) -> bool {
    let name = name.trim();
    FRAMING_HEADERS
        .iter()
        .chain(OWN_HEADERS)
        .any(|refused| name.eq_ignore_ascii_case(refused))
        || OWN_PREFIXES.iter().any(|prefix| {
            name.get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_and_sluice_owned_names_are_refused_in_any_case() {
        for name in [
            "Host",
            "content-length",
            "Content-Encoding",
            "TRANSFER-ENCODING",
            "Connection",
            "Upgrade",
            "TE",
            "User-Agent",
            "Content-Type",
            "X-Signature",
            "X-Sluice-Message-Id",
            "X-Sluice-Attempt",
            "X-Sluice-Tenant",
            "webhook-id",
            "Webhook-Timestamp",
            "Webhook-Signature",
            "Webhook-Version",
            " host ",
        ] {
            assert!(is_refused_static_header(name), "{name}");
        }
    }

    #[test]
    fn customer_headers_are_allowed() {
        for name in [
            "Authorization",
            "X-Api-Key",
            "X-Team",
            "Accept",
            "X-Signature-Version",
            "Tenant",
            "X-Sluicer",
            "Webhook",
            "te-x",
            "é",
        ] {
            assert!(!is_refused_static_header(name), "{name}");
        }
    }
}
