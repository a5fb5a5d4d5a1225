//! Credentials inside destination settings, and how they are shown.
//!
//! Why: static headers and URL userinfo are how receivers authenticate
//! Sluice (`Authorization: Bearer …`, `https://user:pass@host`). They are
//! stored in clear because every request needs them, but the admin API, the
//! attempt log and log lines show only a masked form: at most the first four
//! characters of a long header value, never any character of URL userinfo.
//!
//! A masked value ends with [`ELLIPSIS`] (headers) or is [`HIDDEN`] (URL
//! userinfo). An update that sends a masked value back unchanged keeps the
//! stored one ([`Masker::is_mask_of`]), so clients can round-trip settings.

/// What follows the visible head of a masked header value.
pub const ELLIPSIS: &str = "…";
/// What replaces URL userinfo parts.
pub const HIDDEN: &str = "****";
/// Characters of a header value shown, when the value is long enough.
const HEAD: usize = 4;
/// Values shorter than this show no characters at all.
const SHOW_HEAD_FROM: usize = 12;

/// Header names that always count as sensitive.
const EXACT: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];
/// A header whose name contains one of these counts as sensitive.
const CONTAINS: &[&str] = &["key", "token", "secret", "signature", "password", "auth"];

/// Decides which headers are sensitive and masks values. `extra` holds the
/// operator's additional header names (`delivery.sensitive_headers`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Masker {
    extra: Vec<String>,
}

impl Masker {
    pub fn new(extra: &[String]) -> Masker {
        Masker {
            extra: extra
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether the value of header `name` is a credential.
    pub fn is_sensitive(&self, name: &str) -> bool {
        let name = name.trim().to_ascii_lowercase();
        EXACT.contains(&name.as_str())
            || CONTAINS.iter().any(|part| name.contains(part))
            || self.extra.contains(&name)
    }

    /// The value of header `name` as shown: masked when sensitive.
    pub fn header_value(&self, name: &str, value: &str) -> String {
        if self.is_sensitive(name) {
            mask_value(value)
        } else {
            value.to_owned()
        }
    }

    /// Whether `sent` is what [`Masker::header_value`] shows for `stored`
    /// under a sensitive `name`: a client sending it back keeps `stored`.
    pub fn is_mask_of(&self, name: &str, sent: &str, stored: &str) -> bool {
        self.is_sensitive(name) && is_mask_of(sent, stored)
    }
}

/// Whether `sent` is [`mask_value`]'s form of `stored` (and not `stored`
/// itself): a secret sent back as shown, which keeps the stored one. Used
/// for sensitive header values and for a destination's shared secret.
pub fn is_mask_of(sent: &str, stored: &str) -> bool {
    sent != stored && mask_value(stored) == sent
}

/// A secret's masked form: the first four characters of a value of twelve
/// or more characters, then `…`; shorter values show only `…`.
pub fn mask_value(value: &str) -> String {
    if value.chars().count() >= SHOW_HEAD_FROM {
        let head: String = value.chars().take(HEAD).collect();
        format!("{head}{ELLIPSIS}")
    } else {
        ELLIPSIS.to_owned()
    }
}

/// Whether `value` looks like a masked header value (ends with `…`).
pub fn looks_masked(value: &str) -> bool {
    value.ends_with(ELLIPSIS)
}

/// `url` with its userinfo replaced by [`HIDDEN`]; other URLs unchanged.
/// Text that does not parse as a URL with an authority (a client's typo,
/// quoted in an error) is masked by where a userinfo would stand: `https://alice:pw@[bad/` →
/// `https://****@[bad/`.
pub fn mask_url(url: &str) -> String {
    // `alice:pw@host/x` parses too, as an opaque URL of scheme `alice`:
    // judged by the text as well.
    let Ok(mut parsed) = url::Url::parse(url)
        .map_err(|_| ())
        .and_then(|u| if u.cannot_be_a_base() { Err(()) } else { Ok(u) })
    else {
        return mask_url_text(url);
    };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return url.to_owned();
    }
    let hidden_user = parsed.set_username(HIDDEN).is_ok();
    let hidden_pass = parsed.password().is_none() || parsed.set_password(Some(HIDDEN)).is_ok();
    if hidden_user && hidden_pass {
        parsed.to_string()
    } else {
        // A URL that cannot carry userinfo has none to hide; be safe anyway.
        HIDDEN.to_owned()
    }
}

/// [`mask_url`] for text that did not parse: the userinfo is what comes
/// before the last `@` of the authority (after `://`, or from the start
/// without one, up to the first `/`, `?` or `#`).
fn mask_url_text(text: &str) -> String {
    let start = text.find("://").map_or(0, |i| i + 3);
    let rest = &text[start..];
    let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
    match authority.rfind('@') {
        Some(at) => format!("{}{HIDDEN}{}", &text[..start], &rest[at..]),
        None => text.to_owned(),
    }
}

/// Whether `sent` (a URL as a client sent it back) is the masked form of
/// `stored`, so the stored URL with its userinfo is kept.
pub fn is_masked_url_of(sent: &str, stored: &str) -> bool {
    sent != stored && mask_url(stored) == sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_hidden_in_url_text_that_does_not_parse() {
        for (text, shown) in [
            (
                "https://alice:S3cret@hooks.example.com:99999/in",
                "https://****@hooks.example.com:99999/in",
            ),
            ("http://alice:Boot@[bad/", "http://****@[bad/"),
            ("bob:0ther@bad host/x@y", "****@bad host/x@y"),
            ("http://a@b@c/", "http://****@c/"),
            ("hooks.example/x", "hooks.example/x"),
            (
                "https://hooks.example/in?to=a@b",
                "https://hooks.example/in?to=a@b",
            ),
        ] {
            assert_eq!(mask_url(text), shown, "{text}");
        }
    }

    #[test]
    fn sensitive_names_are_recognised_case_insensitively() {
        let m = Masker::new(&["X-Customer-Id".into()]);
        for name in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "X-Api-Key",
            "X-Auth-Token",
            "X-Webhook-Secret",
            "X-Hub-Signature",
            "X-Password",
            "x-customer-id",
        ] {
            assert!(m.is_sensitive(name), "{name}");
        }
        for name in ["X-Team", "Accept", "X-Tenant"] {
            assert!(!m.is_sensitive(name), "{name}");
        }
    }

    #[test]
    fn masked_values_show_at_most_four_characters_of_long_values() {
        assert_eq!(mask_value("Bearer abcdefghijklmnop"), "Bear…");
        assert_eq!(mask_value("short-pass"), "…");
        assert_eq!(mask_value(""), "…");
        let m = Masker::default();
        assert_eq!(m.header_value("X-Team", "blue"), "blue");
        assert_eq!(
            m.header_value("Authorization", "Bearer s3cr3t-t0ken"),
            "Bear…"
        );
    }

    #[test]
    fn sending_the_mask_back_is_recognised() {
        let m = Masker::default();
        let stored = "Bearer s3cr3t-t0ken";
        assert!(m.is_mask_of("Authorization", "Bear…", stored));
        assert!(!m.is_mask_of("Authorization", "Bearer new-token-value", stored));
        assert!(!m.is_mask_of("X-Team", "Bear…", stored), "not sensitive");
        assert!(looks_masked("Bear…"));
    }

    #[test]
    fn url_userinfo_is_hidden_entirely() {
        assert_eq!(
            mask_url("https://user:pa55word@hooks.example.com/x?q=1"),
            "https://****:****@hooks.example.com/x?q=1"
        );
        assert_eq!(
            mask_url("https://apikey@h.example/"),
            "https://****@h.example/"
        );
        assert_eq!(mask_url("https://h.example/p"), "https://h.example/p");
        let stored = "https://user:pa55word@hooks.example.com/x";
        assert!(is_masked_url_of(&mask_url(stored), stored));
        assert!(!is_masked_url_of(
            "https://user:other@hooks.example.com/x",
            stored
        ));
    }
}
