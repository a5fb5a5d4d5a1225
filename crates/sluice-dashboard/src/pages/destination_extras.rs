//! The destination form's opt-in settings, as the catalog lists them:
//! Standard Webhooks signing (with rotation) and a private CA bundle. The
//! admin API's own parsing decides (`webhook_settings::extras`); this
//! module only turns the fields into its JSON and back.
//!
//! - Standard Webhooks: a checkbox, a secret and an overlap in hours. An
//!   empty secret keeps the current one, or when signing is being switched
//!   on has Sluice generate one, shown once on the page that answers the
//!   form. A secret other than the current one rotates: the old one keeps
//!   signing for the overlap (default 24 hours).
//! - CA bundle: PEM text; empty means none.

use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use sluice_api::admin::destinations::DestinationView;
use sluice_api::admin::webhook_settings::extras::{
    DEFAULT_ROTATION_OVERLAP_SECS, GENERATE, MAX_ROTATION_OVERLAP_SECS, parse_ca_bundle,
};

use super::destination_form::{Entered, worded};
use crate::form::Form;
use crate::layout::page;
use crate::session::Session;

/// The opt-ins as entered.
#[derive(Default, Clone)]
pub struct Extras {
    pub standard: bool,
    /// As typed, given back only to the request that carried it.
    pub standard_secret: String,
    pub overlap_hours: String,
    /// Editing: the current secret as shown (`whsec_abcd…`) and a running
    /// rotation's end, if signing is on.
    pub standard_hint: Option<String>,
    pub ca_bundle: String,
}

/// Reads the opt-ins, with an error per field for what can be checked
/// without the stored settings.
pub fn read(form: &Form, e: &mut Entered) {
    e.extras.standard = form.checked("standard");
    e.extras.standard_secret = form.raw("standard_secret").trim().to_owned();
    e.extras.overlap_hours = form.get("overlap_hours").to_owned();
    // Browsers send a textarea's line breaks as CRLF; PEM is kept with LF.
    e.extras.ca_bundle = form.raw("ca_bundle").trim().replace("\r\n", "\n");
    if !e.extras.overlap_hours.is_empty() && overlap_secs(&e.extras.overlap_hours).is_none() {
        e.errors.insert(
            "overlap".into(),
            format!(
                "Old secret keeps signing for: a whole number of hours from 0 to {}",
                MAX_ROTATION_OVERLAP_SECS / 3600
            ),
        );
    }
    if let Err(err) = parse_ca_bundle(&Value::String(e.extras.ca_bundle.clone())) {
        e.errors.insert("ca_bundle".into(), err.message);
    }
}

fn overlap_secs(hours: &str) -> Option<i64> {
    hours
        .parse::<i64>()
        .ok()
        .and_then(|h| h.checked_mul(3600))
        .filter(|s| (0..=MAX_ROTATION_OVERLAP_SECS).contains(s))
}

/// Adds `standardWebhooks` and `caBundle` to `settings`. `signing_now`:
/// whether the destination signs with Standard Webhooks already.
pub fn apply(x: &Extras, signing_now: bool, settings: &mut Map<String, Value>) {
    let standard = if x.standard {
        let mut obj = Map::new();
        if !x.standard_secret.is_empty() {
            obj.insert("secret".into(), json!(x.standard_secret));
        } else if !signing_now {
            obj.insert("secret".into(), json!(GENERATE));
        }
        let overlap = overlap_secs(&x.overlap_hours).unwrap_or(DEFAULT_ROTATION_OVERLAP_SECS);
        obj.insert("rotationOverlapSeconds".into(), json!(overlap));
        Value::Object(obj)
    } else {
        Value::Null
    };
    settings.insert("standardWebhooks".into(), standard);
    let ca = if x.ca_bundle.is_empty() {
        Value::Null
    } else {
        json!(x.ca_bundle)
    };
    settings.insert("caBundle".into(), ca);
}

/// The opt-ins' fieldsets.
pub fn render(e: &Entered, editing: bool) -> Markup {
    let x = &e.extras;
    let err = |k: &str| e.errors.get(k).map(|m| worded(m));
    let invalid = |k: &str| e.errors.contains_key(k).then_some("true");
    let described = |k: &str, help: &str| match invalid(k) {
        Some(_) => format!("{help} {k}-error"),
        None => help.to_owned(),
    };
    html! {
        fieldset #standard-webhooks {
            legend { "4. Standard Webhooks signing (optional)" }
            div.check {
                input #standard type="checkbox" name="standard" value="1" checked[x.standard];
                label for="standard" { "Sign with Standard Webhooks" }
            }
            p.help { "Requests then also carry webhook-id, webhook-timestamp and webhook-signature, which the Standard Webhooks libraries verify." }
            @if let Some(h) = &x.standard_hint { p.help #standard-hint { "Current secret: " code { (h) } } }
            div.field {
                label for="standard_secret" { "Standard Webhooks secret" }
                input #standard_secret name="standard_secret" type="password" autocomplete="new-password" value=(x.standard_secret)
                    placeholder="whsec_…" aria-invalid=[invalid("standard_secret")] aria-describedby=(described("standard_secret", "standard-secret-help"));
                p.help #standard-secret-help {
                    @if editing && x.standard_hint.is_some() { "Leave empty to keep the current secret. A new one rotates: " }
                    @else { "Leave empty to have Sluice generate one, shown once after saving. Changing it later rotates: " }
                    "the old secret keeps signing beside the new one for the hours below."
                }
                @if let Some(m) = err("standard_secret") { p #standard_secret-error .field-error { (m) } }
            }
            div.field {
                label for="overlap" { "Old secret keeps signing for (hours)" }
                input #overlap name="overlap_hours" inputmode="numeric" value=(x.overlap_hours) placeholder=(DEFAULT_ROTATION_OVERLAP_SECS / 3600)
                    aria-invalid=[invalid("overlap")] aria-describedby=[invalid("overlap").map(|_| "overlap-error")];
                @if let Some(m) = err("overlap") { p #overlap-error .field-error { (m) } }
            }
        }
        fieldset {
            legend { "5. Private CA bundle (optional)" }
            div.field {
                label for="ca_bundle" { "CA certificates (PEM)" }
                textarea #ca_bundle name="ca_bundle" rows="4" placeholder="-----BEGIN CERTIFICATE-----"
                    aria-invalid=[invalid("ca_bundle")] aria-describedby=(described("ca_bundle", "ca-help")) { (x.ca_bundle) }
                p.help #ca-help { "Trusted for this destination's https URLs beside the system's roots, for receivers behind a private CA. Empty: the system's roots only." }
                @if let Some(m) = err("ca_bundle") { p #ca_bundle-error .field-error { (m) } }
            }
        }
    }
}

/// Whether saving `x` has Sluice generate a Standard Webhooks secret.
pub fn generates(x: &Extras, signing_now: bool) -> bool {
    x.standard && x.standard_secret.is_empty() && !signing_now
}

/// The one page that shows a generated Standard Webhooks secret in full.
pub fn secret_once(s: &Session, view: &DestinationView, next: &str) -> Response {
    let secret = view
        .settings
        .standard_webhooks
        .as_ref()
        .map_or("", |sw| sw.secret.as_str());
    let body = html! {
        div.notice role="status" {
            p { strong { "Copy the Standard Webhooks secret now: it is shown only once." } " Give it to the receiver, which verifies webhook-signature with it." }
        }
        dl.facts {
            dt { "Destination" } dd { (view.name) }
            dt { "Standard Webhooks secret" }
            dd.copyable {
                code #standard-secret { (secret) }
                button.copy type="button" data-copy="standard-secret" hidden { "Copy secret" }
            }
        }
        p { a.button href=(next) { "Continue to the destination" } }
    };
    page(Some(s), "Destination saved", "destinations", body).into_response()
}
