//! Sources and destinations declared in a file, applied at start-up so a
//! deployment can be configured as code.
//!
//! Applying is idempotent: each declared record is created when its id is
//! missing and otherwise updated to the declared values. Records not in the
//! file are left alone. Secrets can come from environment variables
//! (`write_key_env`, `shared_secret_env`, `standard_webhooks.secret_env`) so
//! the file itself holds none.
//!
//! Destinations take the admin API's opt-ins too: `standard_webhooks`
//! (a `whsec_…` secret and the rotation overlap) and `ca_bundle` /
//! `ca_bundle_file` (a PEM bundle of CA certificates). A declared
//! Standard Webhooks secret is parsed against the stored settings, so an
//! unchanged secret keeps a running rotation and a changed one starts a
//! rotation with the declared overlap, exactly as a `PATCH` would. A
//! `"generate"` secret is refused: the file is applied at every start, and a
//! secret generated there would change at each one and be shown to nobody.

use std::path::Path;

use serde::Deserialize;
use sluice_api::admin::webhook_settings;
use sluice_store::{DestinationPatch, NewDestination, NewSource, SourcePatch, Store, keys};

#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("bootstrap file {path}: {why}")]
    File { path: String, why: String },
    #[error("bootstrap: {0}")]
    Invalid(String),
    #[error("bootstrap: {0}")]
    Store(#[from] sluice_store::StoreError),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    sources: Vec<SourceDecl>,
    #[serde(default)]
    destinations: Vec<DestinationDecl>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceDecl {
    id: String,
    name: String,
    #[serde(default = "yes")]
    enabled: bool,
    write_key: Option<String>,
    write_key_env: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DestinationDecl {
    id: String,
    name: String,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    sources: Vec<String>,
    #[serde(default)]
    urls: Vec<UrlDecl>,
    shared_secret: Option<String>,
    shared_secret_env: Option<String>,
    standard_webhooks: Option<StandardWebhooksDecl>,
    ca_bundle: Option<String>,
    ca_bundle_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StandardWebhooksDecl {
    secret: Option<String>,
    secret_env: Option<String>,
    rotation_overlap_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UrlDecl {
    url: String,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn secret(
    inline: Option<String>,
    env: Option<&str>,
    what: &str,
) -> Result<Option<String>, BootstrapError> {
    match (inline, env) {
        (Some(_), Some(_)) => Err(BootstrapError::Invalid(format!(
            "{what}: give the value or the _env variable, not both"
        ))),
        (Some(v), None) => Ok(Some(v)),
        (None, Some(var)) => std::env::var(var).map(Some).map_err(|_| {
            BootstrapError::Invalid(format!("{what}: environment variable {var} is not set"))
        }),
        (None, None) => Ok(None),
    }
}

/// Reads and applies the bootstrap file.
pub async fn apply(
    store: &dyn Store,
    path: &Path,
    rules: &webhook_settings::Rules,
) -> Result<(), BootstrapError> {
    let text = std::fs::read_to_string(path).map_err(|e| BootstrapError::File {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    let file: File = toml::from_str(&text).map_err(|e| BootstrapError::File {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    for s in file.sources {
        apply_source(store, s).await?;
    }
    for d in file.destinations {
        apply_destination(store, d, rules).await?;
    }
    Ok(())
}

/// A declared name, held to the admin API's rules for names.
fn declared_name(what: &str, name: &str) -> Result<String, BootstrapError> {
    sluice_api::admin::extract::non_empty("name", name)
        .map_err(|e| BootstrapError::Invalid(format!("{what}: {}", e.message)))
}

async fn apply_source(store: &dyn Store, s: SourceDecl) -> Result<(), BootstrapError> {
    let what = format!("source {}", s.id);
    let key = secret(s.write_key, s.write_key_env.as_deref(), &what)?.ok_or_else(|| {
        BootstrapError::Invalid(format!("{what}: needs write_key or write_key_env"))
    })?;
    if key.len() < 16 {
        return Err(BootstrapError::Invalid(format!(
            "{what}: write key must be at least 16 characters"
        )));
    }
    let name = declared_name(&what, &s.name)?;
    let (hash, hint) = (keys::hash_secret(&key), keys::hint(&key));
    if store.get_source(&s.id).await?.is_some() {
        let patch = SourcePatch {
            name: Some(name),
            enabled: Some(s.enabled),
            write_key: Some((hash, hint)),
        };
        store.update_source(&s.id, patch).await?;
    } else {
        let new = NewSource {
            id: s.id,
            name,
            enabled: s.enabled,
            write_key_hash: hash,
            write_key_hint: hint,
        };
        store.create_source(new).await?;
    }
    Ok(())
}

async fn apply_destination(
    store: &dyn Store,
    d: DestinationDecl,
    rules: &webhook_settings::Rules,
) -> Result<(), BootstrapError> {
    let what = format!("destination {}", d.id);
    let name = declared_name(&what, &d.name)?;
    // The admin API's validation applies to declared settings too.
    let urls: Vec<serde_json::Value> = d
        .urls
        .into_iter()
        .map(|u| serde_json::json!({"url": u.url, "headers": u.headers}))
        .collect();
    let shared = secret(d.shared_secret, d.shared_secret_env.as_deref(), &what)?;
    let standard = match d.standard_webhooks {
        None => serde_json::Value::Null,
        Some(sw) => {
            let field = format!("{what}: standard_webhooks.secret");
            let value = secret(sw.secret, sw.secret_env.as_deref(), &field)?
                .ok_or_else(|| BootstrapError::Invalid(format!("{field}: is required")))?;
            if value == webhook_settings::extras::GENERATE {
                return Err(BootstrapError::Invalid(format!(
                    "{field}: \"generate\" is not allowed here (the file is applied at every start); give a 'whsec_…' secret"
                )));
            }
            serde_json::json!({"secret": value, "rotationOverlapSeconds": sw.rotation_overlap_seconds})
        }
    };
    let ca_bundle = match (d.ca_bundle, d.ca_bundle_file) {
        (Some(_), Some(_)) => {
            return Err(BootstrapError::Invalid(format!(
                "{what}: give ca_bundle or ca_bundle_file, not both"
            )));
        }
        (Some(pem), None) => Some(pem),
        (None, Some(file)) => Some(std::fs::read_to_string(&file).map_err(|e| {
            BootstrapError::Invalid(format!("{what}: ca_bundle_file {}: {e}", file.display()))
        })?),
        (None, None) => None,
    };
    let declared = serde_json::json!({
        "urls": urls,
        "sharedSecret": shared,
        "standardWebhooks": standard,
        "caBundle": ca_bundle,
    });
    let stored = store.get_destination(&d.id).await?;
    let settings = webhook_settings::parse(&declared, stored.as_ref().map(|s| &s.settings), rules)
        .map_err(|e| BootstrapError::Invalid(format!("{what}: {}", e.message)))?;
    let mut sources = d.sources;
    sources.sort();
    sources.dedup();
    if stored.is_some() {
        let patch = DestinationPatch {
            name: Some(name),
            enabled: Some(d.enabled),
            settings: Some(settings),
            source_ids: Some(sources),
        };
        store.update_destination(&d.id, patch).await?;
    } else {
        let new = NewDestination {
            id: d.id,
            name,
            kind: sluice_api::routes::WEBHOOKS.to_owned(),
            enabled: d.enabled,
            settings,
            source_ids: sources,
        };
        store.create_destination(new).await?;
    }
    Ok(())
}
