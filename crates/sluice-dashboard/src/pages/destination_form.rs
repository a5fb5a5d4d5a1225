//! The destination form, shared by creation and editing: the sources to
//! connect, up to five webhook URLs each with optional static headers (a
//! form sending more is refused as the API refuses them, never cut short),
//! an optional shared secret. Each field is checked on its own by the admin
//! API's validation functions, so every error shows next to its field, in
//! the API's words; the API's handlers then check everything again.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde_json::{Map, Value, json};
use sluice_api::admin::extract::non_empty;
use sluice_api::admin::webhook_settings::{
    MAX_URLS, Rules, parse_entry, parse_headers, parse_secret,
};
use sluice_store::Source;

use super::destination_extras::{self as extras, Extras};
pub use super::destination_words::worded;
use crate::form::Form;
use crate::layout::csrf_field;
use crate::session::Session;

/// What was entered, kept to re-show the form with its errors.
#[derive(Default)]
pub struct Entered {
    pub kind: String,
    pub name: String,
    pub sources: Vec<String>,
    pub urls: Vec<(String, String)>,
    /// Editing: the current secret's first characters, if it has one.
    pub secret_hint: Option<String>,
    /// The secret as typed, given back when the form is shown again with
    /// errors: left out, it would be lost without a word, and the
    /// destination saved unsigned on the next submit. Only ever the value
    /// this same request carried; a stored secret is never written here.
    pub secret: String,
    /// Standard Webhooks signing and the CA bundle.
    pub extras: Extras,
    /// Field id → message.
    pub errors: BTreeMap<String, String>,
}

/// Where the form posts and what it says; creation and editing differ.
pub struct Mode<'a> {
    pub action: &'a str,
    pub submit: &'a str,
    pub editing: bool,
}

/// Which form field an admin API message is about, from the field path it
/// starts with (`settings.urls[1].headers.X-A: …` → `headers1`).
pub fn field_of(message: &str) -> String {
    let path = message.split(':').next().unwrap_or("");
    if path == "name" {
        return "name".into();
    }
    if path.starts_with("source_ids") {
        return "sources".into();
    }
    if path == "settings.urls" {
        return "urls".into();
    }
    if path.starts_with("settings.sharedSecret") {
        return "secret".into();
    }
    if path.starts_with("settings.standardWebhooks.rotationOverlapSeconds") {
        return "overlap".into();
    }
    if path.starts_with("settings.standardWebhooks") {
        return "standard_secret".into();
    }
    if path.starts_with("settings.caBundle") {
        return "ca_bundle".into();
    }
    if let Some(rest) = path.strip_prefix("settings.urls[") {
        let i: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let after = &rest[i.len()..];
        let kind = if after.starts_with("].headers") {
            "headers"
        } else {
            "url"
        };
        return format!("{kind}{i}");
    }
    "form".into()
}

/// `Name: value` lines into a headers object.
fn header_lines(field: &str, text: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("{field}: each line must be 'Name: value'"))?;
        out.insert(
            name.trim().to_owned(),
            Value::String(value.trim().to_owned()),
        );
    }
    Ok(out)
}

/// Where a field's error goes in the summary: the order of the form.
fn position(field: &str) -> (u8, usize) {
    let row = |prefix: &str| {
        field
            .strip_prefix(prefix)
            .and_then(|i| i.parse::<usize>().ok())
    };
    match field {
        "name" => (0, 0),
        "sources" => (1, 0),
        "urls" => (2, usize::MAX),
        "secret" => (3, 0),
        "standard_secret" => (4, 0),
        "overlap" => (4, 1),
        "ca_bundle" => (5, 0),
        _ => match (row("url"), row("headers")) {
            (Some(i), _) => (2, 2 * i),
            (_, Some(i)) => (2, 2 * i + 1),
            _ => (6, 0),
        },
    }
}

pub fn render(s: &Session, sources: &[Source], e: &Entered, mode: &Mode) -> Markup {
    let err = |k: &str| e.errors.get(k).map(|m| worded(m));
    let mut summary: Vec<_> = e.errors.iter().collect();
    summary.sort_by_key(|(k, _)| position(k));
    let invalid = |k: &str| e.errors.contains_key(k).then_some("true");
    html! {
        @if !e.errors.is_empty() {
            div.error #errors role="alert" tabindex="-1" {
                p { "The destination was not saved. Please fix:" }
                ul { @for (k, m) in &summary { li { a href={ "#" (k) } { (worded(m)) } } } }
            }
        }
        form.card.setup method="post" action=(mode.action) novalidate {
            (csrf_field(s))
            input type="hidden" name="type" value=(e.kind);
            div.field {
                label for="name" { "Name" }
                input #name name="name" value=(e.name) required maxlength="200" aria-invalid=[invalid("name")] aria-describedby=[invalid("name").map(|_| "name-error")];
                @if let Some(m) = err("name") { p #name-error .field-error { (m) } }
            }
            fieldset #sources tabindex="-1" aria-describedby=[invalid("sources").map(|_| "sources-error")] {
                legend { "1. Sources to connect" }
                @if sources.is_empty() { p { "No sources yet: " a href="/sources" { "create one" } " first, or connect sources later." } }
                @for src in sources {
                    div.check {
                        input type="checkbox" name="source" value=(src.id) id={ "src-" (src.id) } checked[e.sources.contains(&src.id)];
                        label for={ "src-" (src.id) } { (src.name) }
                    }
                }
                @if let Some(m) = err("sources") { p #sources-error .field-error { (m) } }
            }
            fieldset #urls tabindex="-1" {
                legend { "2. Webhook URLs (up to " (MAX_URLS) ")" }
                p.help { "Each a full URL with http:// or https://. Static headers are sent with every request to that URL, one per line as " code { "Name: value" } "." }
                @for i in 0..MAX_URLS.max(e.urls.len()) {
                    @let (url, headers) = e.urls.get(i).cloned().unwrap_or_default();
                    div.url-entry data-url-row=(i) {
                        div.field {
                            label for={ "url" (i) } { "URL " (i + 1) }
                            input id={ "url" (i) } name={ "url" (i) } type="url" inputmode="url" value=(url)
                                placeholder="https://example.com/hook" aria-invalid=[invalid(&format!("url{i}"))] aria-describedby=[invalid(&format!("url{i}")).map(|_| format!("url{i}-error"))];
                            @if let Some(m) = err(&format!("url{i}")) { p.field-error id={ "url" (i) "-error" } { (m) } }
                        }
                        div.field {
                            label for={ "headers" (i) } { "Headers for URL " (i + 1) " (optional)" }
                            textarea id={ "headers" (i) } name={ "headers" (i) } rows="2" placeholder="Authorization: Bearer abc"
                                aria-invalid=[invalid(&format!("headers{i}"))] aria-describedby=[invalid(&format!("headers{i}")).map(|_| format!("headers{i}-error"))] { (headers) }
                            @if let Some(m) = err(&format!("headers{i}")) { p.field-error id={ "headers" (i) "-error" } { (m) } }
                        }
                    }
                }
                @if let Some(m) = err("urls") { p.field-error { (m) } }
                button.secondary #add-url type="button" hidden { "Add another URL" }
            }
            fieldset {
                legend { "3. Shared secret (optional)" }
                @if mode.editing {
                    p.help { @match &e.secret_hint {
                        Some(h) => { "Current secret: " code { (h) } ". Leave the field empty to keep it." }
                        None => { "No secret yet: requests are not signed." }
                    } }
                    @if e.secret_hint.is_some() {
                        div.check {
                            input #remove-secret type="checkbox" name="remove_secret" value="1";
                            label for="remove-secret" { "Remove the shared secret (requests are no longer signed)" }
                        }
                    }
                }
                div.field {
                    label for="secret" { "Shared secret" }
                    input #secret name="secret" type="password" autocomplete="new-password" value=(e.secret) aria-invalid=[invalid("secret")] aria-describedby=(if invalid("secret").is_some() { "secret-help secret-error" } else { "secret-help" });
                    p #secret-help .help { "When set, every request carries X-Signature: the hex HMAC-SHA1 of the body keyed with it. Afterwards only its first characters are shown." }
                    @if let Some(m) = err("secret") { p #secret-error .field-error { (m) } }
                }
            }
            (extras::render(e, mode.editing))
            @if let Some(m) = err("form") { p.field-error { (m) } }
            @if !mode.editing { p.help { "The destination is saved switched off; switch it on from its page." } }
            button type="submit" { (mode.submit) }
        }
    }
}

/// Every `urlN`/`headersN` row the form carries, not just the ones it
/// shows: rows `0..MAX_URLS` at their own index, then any further rows
/// with something in them, in order (a form that sends more rows than the
/// API takes is refused below, never cut short).
fn url_rows(form: &Form) -> Vec<(String, String)> {
    let mut extra: BTreeMap<usize, (String, String)> = BTreeMap::new();
    for (key, value) in &form.fields {
        let (index, is_url) = match (key.strip_prefix("url"), key.strip_prefix("headers")) {
            (Some(i), _) => (i, true),
            (_, Some(i)) => (i, false),
            _ => continue,
        };
        // Only the names the form itself would use (`url5`, not `url05`).
        let Some(i) = index
            .parse::<usize>()
            .ok()
            .filter(|i| i.to_string() == index)
        else {
            continue;
        };
        if i < MAX_URLS || value.trim().is_empty() {
            continue;
        }
        let row = extra.entry(i).or_default();
        let slot = if is_url { &mut row.0 } else { &mut row.1 };
        if slot.is_empty() {
            *slot = value.trim().to_owned();
        }
    }
    let row = |i: usize| {
        (
            form.get(&format!("url{i}")).to_owned(),
            form.get(&format!("headers{i}")).to_owned(),
        )
    };
    (0..MAX_URLS).map(row).chain(extra.into_values()).collect()
}

/// The admin API's message for too many URLs (`settings.urls`).
fn too_many_urls(got: usize) -> String {
    format!("settings.urls: at most {MAX_URLS} webhook URLs are allowed, got {got}")
}

/// The cap of the destination forms: three times the admin API's, since
/// form encoding spells a character of a header or a URL in up to three.
pub const DESTINATION_FORM_BYTES: usize = 3 * sluice_api::admin::extract::MAX_ADMIN_BODY;

/// The form's element id for a form field's name (`url1`, `headers1`,
/// `name`, `secret`; `source` → `sources`).
fn field_id(name: &str) -> String {
    match name {
        "source" => "sources".into(),
        "name" | "secret" | "standard_secret" | "ca_bundle" => name.into(),
        "overlap_hours" => "overlap".into(),
        n if n.starts_with("url") || n.starts_with("headers") => n.into(),
        _ => "form".into(),
    }
}

/// A form cut at its cap, shown again: what came before the cut, the
/// error on the field that was cut, and nothing saved.
pub fn cut_short(form: &Form, editing: bool, rules: &Rules) -> Option<Entered> {
    let o = form.overflow.as_ref()?;
    let (mut e, _, _) = validate(form, editing, rules);
    e.errors.clear();
    e.errors.insert(
        field_id(&o.field),
        format!(
            "Too long: the whole form may be at most {}, and it was cut here. Nothing was saved; shorten this field and save again.",
            o.limit_text()
        ),
    );
    Some(e)
}

/// Reads the form and checks each field with the admin API's functions.
/// Returns what was entered (with any errors), the URL entries, and the
/// `sharedSecret` value to send: `None` when editing and the field was left
/// empty (keep the current secret).
pub fn validate(form: &Form, editing: bool, rules: &Rules) -> (Entered, Vec<Value>, Option<Value>) {
    let mut e = Entered {
        kind: form.get("type").to_owned(),
        name: form.get("name").to_owned(),
        sources: form.all("source"),
        urls: url_rows(form),
        ..Entered::default()
    };
    if let Err(err) = non_empty("name", &e.name) {
        e.errors.insert("name".into(), err.message);
    }
    let mut urls = Vec::new();
    for (i, (url, headers)) in e.urls.iter().enumerate() {
        if url.is_empty() && headers.is_empty() {
            continue;
        }
        let field = format!("settings.urls[{i}]");
        // The URL and the headers are checked apart, so that every error
        // of the row shows: a bad scheme does not hide behind a bad header.
        let url_ok = match parse_entry(&field, &json!({ "url": url }), rules) {
            Ok(_) => true,
            Err(err) => {
                e.errors.insert(field_of(&err.message), err.message);
                false
            }
        };
        let at = format!("{field}.headers");
        let headers = header_lines(&at, headers).and_then(|h| {
            let h = Value::Object(h);
            parse_headers(&at, &h).map(|_| h).map_err(|err| err.message)
        });
        match headers {
            Ok(h) if url_ok => urls.push(json!({"url": url, "headers": h})),
            Ok(_) => {}
            Err(m) => {
                e.errors.insert(format!("headers{i}"), m);
            }
        }
    }
    // The API's own refusal, in its words: a 6th row is never dropped.
    let filled = e
        .urls
        .iter()
        .filter(|(u, h)| !u.is_empty() || !h.is_empty())
        .count();
    if filled > MAX_URLS {
        e.errors.insert("urls".into(), too_many_urls(filled));
    }
    // Said beside any other error, unless a URL row already has one (the
    // URL it names may be the one meant).
    let row_error = e
        .errors
        .keys()
        .any(|k| k.starts_with("url") || k.starts_with("headers"));
    if urls.is_empty() && !row_error {
        e.errors.insert(
            "url0".into(),
            "settings.urls: enter at least one webhook URL".into(),
        );
    }
    // The secret is taken as typed: spaces are part of it.
    let typed = form.raw("secret");
    e.secret = typed.to_owned();
    let secret = if editing && form.checked("remove_secret") {
        Some(Value::Null)
    } else if editing && typed.is_empty() {
        None
    } else {
        Some(Value::String(typed.to_owned()))
    };
    if let Some(Err(err)) = secret.as_ref().map(parse_secret) {
        e.errors.insert("secret".into(), err.message);
    }
    extras::read(form, &mut e);
    (e, urls, secret)
}

#[cfg(test)]
#[path = "destination_form_tests.rs"]
mod tests;
