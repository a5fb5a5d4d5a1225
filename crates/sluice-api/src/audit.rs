//! Recording changes in the audit log ([`sluice_store::AuditStore`]).
//!
//! Every handler that changes something records it here, with the
//! [`Actor`] that asked, whether the call came through the admin API, the
//! dashboard (which calls the same handlers) or the command line (which
//! calls the admin API). `before` and `after` are the resource as the admin
//! API shows it: write keys, shared secrets, URL credentials and sensitive
//! header values are masked there already, and [`scrub`] drops any field
//! that could still carry a secret.
//!
//! Two ways to write an entry:
//! - in the transaction of the change, where the store takes the entry
//!   ([`in_change`]; users, API tokens and sessions:
//!   [`sluice_store::TeamStore`]);
//! - ahead of the change ([`record`]): an unconfirmed entry is written
//!   first, the change is made, then the entry is confirmed with the state
//!   after it. A change refused with a `4xx` discards its entry; if the
//!   entry cannot be written, the change is not made (`503`). A crash or a
//!   `5xx` between the two leaves the entry unconfirmed, so a change that
//!   committed always has an entry.

use std::future::Future;

use chrono::Utc;
use serde::Serialize;
use serde_json::Value;
use sluice_store::NewAuditEntry;

use crate::AppState;
use crate::error::ApiResult;
use crate::principal::Actor;

/// Field names dropped from `before` and `after` wherever they appear: the
/// only places a credential of ours is ever shown in full.
const DROPPED: &[&str] = &["write_key", "token", "password", "password_hash"];

/// Field names of destination secrets, kept masked as the admin API masks
/// them (the first 4 characters of a long one and `…`).
const MASKED: &[&str] = &["secret", "sharedSecret", "previousSecret"];

/// `value` without the fields of `DROPPED` and with those of `MASKED`
/// masked, at any depth.
pub fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| !DROPPED.contains(&k.as_str()));
            for (k, v) in map.iter_mut() {
                if let (true, Value::String(s)) = (MASKED.contains(&k.as_str()), &*v)
                    && !sluice_outbound::mask::looks_masked(s)
                {
                    *v = Value::String(sluice_outbound::mask::mask_value(s));
                }
            }
            map.values_mut().for_each(scrub);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

/// A view as the text the log keeps, scrubbed.
pub fn json_of(view: &impl Serialize) -> Option<String> {
    let mut value = serde_json::to_value(view).ok()?;
    scrub(&mut value);
    (!value.is_null()).then(|| value.to_string())
}

/// What is changed: the resource kind, its id when known, and the action.
#[derive(Debug, Clone)]
pub struct Target {
    pub resource: &'static str,
    pub action: &'static str,
    pub id: Option<String>,
}

impl Target {
    pub fn new(resource: &'static str, action: &'static str, id: Option<&str>) -> Target {
        Target {
            resource,
            action,
            id: id.map(str::to_owned),
        }
    }
}

/// An entry for `target` by `actor`, confirmed or written ahead.
pub fn entry(
    actor: &Actor,
    target: &Target,
    before: Option<String>,
    after: Option<String>,
    confirmed: bool,
) -> NewAuditEntry {
    NewAuditEntry {
        at: Utc::now(),
        actor_kind: actor.principal.kind().to_owned(),
        actor_id: actor.principal.id().map(str::to_owned),
        actor_name: actor.principal.name().to_owned(),
        via: actor.via.as_str().to_owned(),
        ip: actor.ip.clone(),
        user_agent: actor.user_agent.clone(),
        resource: target.resource.to_owned(),
        resource_id: target.id.clone(),
        action: target.action.to_owned(),
        before,
        after,
        confirmed,
    }
}

/// A confirmed entry for `action` on the `resource` named `id`, which the
/// store writes in the transaction of the change (users, API tokens and
/// sessions: see the module docs).
pub fn in_change(
    actor: &Actor,
    resource: &'static str,
    action: &'static str,
    id: &str,
    before: Option<String>,
    after: Option<String>,
) -> NewAuditEntry {
    entry(
        actor,
        &Target::new(resource, action, Some(id)),
        before,
        after,
        true,
    )
}

/// Appends a confirmed entry for something already done (a sign-in).
pub async fn note(app: &AppState, actor: &Actor, target: Target, after: Option<String>) {
    let e = entry(actor, &target, None, after, true);
    if let Err(err) = app.store.append_audit(e).await {
        tracing::warn!(error = %err, resource = target.resource, "writing an audit entry");
    }
}

/// The outcome of a change as the log records it: the id of what it
/// created or changed (when the target did not know it) and the state
/// after it, as [`json_of`] writes it.
pub struct After {
    pub id: Option<String>,
    pub state: Option<String>,
}

impl After {
    /// The state after a change to the resource its target names.
    pub fn state(state: Option<String>) -> After {
        After { id: None, state }
    }

    /// Nothing after the change (a deletion), whatever it answered.
    pub fn nothing<T>(_: &T) -> After {
        After::state(None)
    }
}

/// Makes `change` with its entry written ahead and confirmed after it (see
/// the module docs). `before` is the resource before the change, as
/// [`json_of`] writes it; `after` reads the outcome from the change's
/// answer.
pub async fn record<T>(
    app: &AppState,
    actor: &Actor,
    target: Target,
    before: Option<String>,
    change: impl Future<Output = ApiResult<T>>,
    after: impl FnOnce(&T) -> After,
) -> ApiResult<T> {
    let id = app
        .store
        .append_audit(entry(actor, &target, before, None, false))
        .await?;
    match change.await {
        Ok(out) => {
            let After { id: made, state } = after(&out);
            if let Err(e) = app.store.confirm_audit(id, made, state).await {
                tracing::warn!(error = %e, entry = id, "confirming an audit entry; it stays unconfirmed");
            }
            Ok(out)
        }
        Err(refused) if refused.status.is_client_error() => {
            if let Err(e) = app.store.discard_audit(id).await {
                tracing::warn!(error = %e, entry = id, "discarding the audit entry of a refused change");
            }
            Err(refused)
        }
        // The change may have committed (its answer failed after): the
        // entry stays, unconfirmed.
        Err(failed) => Err(failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrub_drops_credentials_and_masks_secrets_at_any_depth() {
        let mut v = json!({
            "name": "web", "write_key": "abc",
            "settings": {"sharedSecret": "s3cr…", "standardWebhooks": {"secret": "whsec_0123456789abcdef"}},
            "list": [{"token": "slu_x", "hint": "slu_…"}],
        });
        scrub(&mut v);
        assert_eq!(
            v,
            json!({"name": "web",
                   "settings": {"sharedSecret": "s3cr…", "standardWebhooks": {"secret": "whse…"}},
                   "list": [{"hint": "slu_…"}]})
        );
    }
}
