//! Hiding a destination's secrets inside text a receiver sent back.
//!
//! Why: the attempt log keeps the start of every response body, and a
//! receiver that echoes its request (a debugging endpoint, a proxy's error
//! page) returns the credentials Sluice sent it: a static `Authorization`
//! header, the `Basic` token made from URL userinfo, a shared secret. The
//! admin API and the dashboard show that log, so every occurrence of a
//! secret is replaced by [`HIDDEN`] before the text is stored.
//!
//! Each secret is matched as it was sent and as JSON escapes it (`"` and
//! `\`, and `/` as `\/`, which some encoders write), case-sensitively. A
//! body cut at the attempt log's cap may end inside a secret: a trailing
//! piece of at least [`MIN_CUT_PREFIX`] bytes that begins a secret is hidden
//! too, so the cut leaks at most a few characters.

use std::borrow::Cow;

pub use crate::mask::HIDDEN;
use crate::mask::Masker;

/// The shortest piece of a secret hidden at the end of a cut body. Shorter
/// ones show what [`crate::mask::mask_value`] may show anyway, and hiding
/// them would mangle the end of many bodies that merely end like a secret
/// starts.
pub const MIN_CUT_PREFIX: usize = 4;

/// `text` with every occurrence of each of `secrets` replaced by
/// [`HIDDEN`] (overlapping or adjacent matches become one). `cut` says the
/// text is the start of a longer body: then a trailing prefix of a secret is
/// hidden as well. Empty secrets are ignored. Returns `text` unchanged
/// (borrowed) when nothing matched.
pub fn redact<'a, S: AsRef<str>>(text: &'a str, secrets: &[S], cut: bool) -> Cow<'a, str> {
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    for secret in secrets {
        let secret = secret.as_ref();
        if secret.is_empty() {
            continue;
        }
        for form in forms(secret) {
            hidden.extend(
                text.match_indices(form.as_ref())
                    .map(|(at, found)| (at, at + found.len())),
            );
            if cut && let Some(start) = cut_prefix(text, &form) {
                hidden.push((start, text.len()));
            }
        }
    }
    if hidden.is_empty() {
        return Cow::Borrowed(text);
    }
    hidden.sort_unstable();
    let mut out = String::with_capacity(text.len());
    // The end of the hidden run being built: text before it is written.
    let mut run_end: Option<usize> = None;
    for (start, end) in hidden {
        match run_end {
            Some(run) if start <= run => run_end = Some(run.max(end)),
            _ => {
                out.push_str(&text[run_end.unwrap_or(0)..start]);
                out.push_str(HIDDEN);
                run_end = Some(end);
            }
        }
    }
    out.push_str(&text[run_end.unwrap_or(0)..]);
    Cow::Owned(out)
}

/// The parts of a credential header value to hide: the whole value and,
/// for a `<scheme> <credentials>` value (`Bearer abc…`, `Basic dXNl…`), the
/// credentials alone, which a receiver may echo without the scheme.
pub fn credential_parts(value: &str) -> impl Iterator<Item = &str> {
    let credentials = value
        .trim()
        .split_once(' ')
        .map(|(_, rest)| rest.trim())
        .filter(|rest| !rest.is_empty());
    std::iter::once(value).chain(credentials)
}

/// The values of the sensitive headers among `headers` (by `masker`'s
/// rule, the one that masks them in the admin API), split by
/// [`credential_parts`].
pub fn sensitive_header_values<'a>(
    masker: &'a Masker,
    headers: &'a [(String, String)],
) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(|(name, _)| masker.is_sensitive(name))
        .flat_map(|(_, value)| credential_parts(value))
}

/// The forms `secret` may take in a body: as sent, and JSON-escaped.
fn forms(secret: &str) -> Vec<Cow<'_, str>> {
    let mut forms = vec![Cow::Borrowed(secret)];
    if secret.contains(['"', '\\', '/']) || secret.chars().any(char::is_control) {
        let mut escaped = String::with_capacity(secret.len() + 8);
        for c in secret.chars() {
            match c {
                '"' => escaped.push_str("\\\""),
                '\\' => escaped.push_str("\\\\"),
                c if c.is_control() => escaped.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => escaped.push(c),
            }
        }
        let slashes = escaped.replace('/', "\\/");
        if escaped != secret {
            forms.push(Cow::Owned(escaped));
        }
        if slashes != secret && forms.iter().all(|f| *f != slashes) {
            forms.push(Cow::Owned(slashes));
        }
    }
    forms
}

/// Where a trailing prefix of `secret` (at least [`MIN_CUT_PREFIX`] bytes,
/// shorter than the secret: a whole one is an ordinary match) starts in
/// `text`, if `text` ends with one. A replacement character left by a cut
/// inside a multi-byte character does not hide the prefix before it.
fn cut_prefix(text: &str, secret: &str) -> Option<usize> {
    let end = text.strip_suffix('\u{FFFD}').unwrap_or(text);
    let longest = secret.len().saturating_sub(1).min(end.len());
    (MIN_CUT_PREFIX..=longest)
        .rev()
        .filter(|&n| secret.is_char_boundary(n))
        .find(|&n| end.ends_with(&secret[..n]))
        .map(|n| end.len() - n)
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
