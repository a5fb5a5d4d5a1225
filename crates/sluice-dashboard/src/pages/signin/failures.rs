//! Failed sign-ins in the audit log: who was tried (the username, or the
//! admin token), from where, with which browser, and why it failed, never
//! the password or token typed. How many are written one by one is bounded
//! ([`crate::signin_log`]); the entries are written off the request, so a
//! flood of guesses never waits on the store.

use std::net::IpAddr;

use chrono::Utc;
use serde_json::{Map, Value, json};
use sluice_store::{NewAuditEntry, Store};
use std::sync::Arc;

use crate::Dash;
use crate::signin_log::{Summary, Verdict};

/// What the audit log names a failed sign-in's actor by.
pub const ANONYMOUS: &str = "anonymous";

/// One failed sign-in.
pub struct Failure {
    pub ip: IpAddr,
    pub user_agent: Option<String>,
    /// The username typed, as sign-in looks it up (lower-cased); `None`
    /// for the admin token's form.
    pub username: Option<String>,
    /// The user it names, when one does.
    pub user_id: Option<String>,
    /// `wrong username or password`, `invalid admin token` or `throttled`.
    pub reason: &'static str,
}

/// The name a failed sign-in is recorded under: the username when it is
/// one (1 to 64 of the characters usernames have), else a placeholder, so
/// that a password typed into the username field is not written down.
pub fn shown_username(typed: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_@+".contains(c);
    match typed {
        "" => "(no username)".to_owned(),
        t if t.chars().count() <= sluice_api::admin::team::MAX_USERNAME
            && t.chars().all(allowed) =>
        {
            t.to_owned()
        }
        _ => "(not a username)".to_owned(),
    }
}

fn entry(
    ip: Option<IpAddr>,
    user_agent: Option<String>,
    name: String,
    id: Option<String>,
    action: &str,
    after: Value,
) -> NewAuditEntry {
    NewAuditEntry {
        at: Utc::now(),
        actor_kind: ANONYMOUS.to_owned(),
        actor_id: id,
        actor_name: name,
        via: "dashboard".to_owned(),
        ip: ip.map(|i| i.to_string()),
        user_agent,
        resource: "session".to_owned(),
        resource_id: None,
        action: action.to_owned(),
        before: None,
        after: Some(after.to_string()),
        confirmed: true,
    }
}

fn summary_entry(s: &Summary) -> NewAuditEntry {
    let addresses: Map<String, Value> = s
        .addresses
        .iter()
        .map(|(ip, n)| (ip.to_string(), json!(n)))
        .collect();
    let after = json!({"suppressed": s.total, "addresses": addresses, "more_addresses": s.more});
    entry(
        None,
        None,
        "(many)".to_owned(),
        None,
        "sign-in-failed-summary",
        after,
    )
}

fn write(store: Arc<dyn Store>, entries: Vec<NewAuditEntry>) {
    if entries.is_empty() {
        return;
    }
    tokio::spawn(async move {
        for e in entries {
            if let Err(err) = store.append_audit(e).await {
                tracing::warn!(error = %err, "writing a failed sign-in to the audit log");
            }
        }
    });
}

/// Records a failed sign-in, within the bounds.
pub fn record(dash: &Dash, f: Failure) {
    let now = Utc::now().timestamp();
    let (verdict, summary) = dash.signin_log(|log| (log.failure(f.ip, now), log.overdue(now)));
    let mut entries = Vec::new();
    if let Verdict::Write { suppressed } = verdict {
        let method = if f.username.is_some() {
            "password"
        } else {
            "admin_token"
        };
        let name = match &f.username {
            Some(typed) => shown_username(typed),
            None => sluice_api::principal::ADMIN_TOKEN_NAME.to_owned(),
        };
        let mut after = json!({"method": method, "username": name, "reason": f.reason});
        if suppressed > 0 {
            after["suppressed"] = json!(suppressed);
        }
        entries.push(entry(
            Some(f.ip),
            f.user_agent,
            name,
            f.user_id,
            "sign-in-failed",
            after,
        ));
    }
    entries.extend(summary.as_ref().map(summary_entry));
    write(dash.app.store.clone(), entries);
}

/// For a successful sign-in from `ip`: the count of its failures not yet
/// written, which its entry carries (`suppressed_failures`), as JSON.
pub fn on_success(dash: &Dash, ip: IpAddr) -> Option<String> {
    let now = Utc::now().timestamp();
    let (carried, summary) = dash.signin_log(|log| (log.take(ip), log.overdue(now)));
    write(
        dash.app.store.clone(),
        summary.as_ref().map(summary_entry).into_iter().collect(),
    );
    (carried > 0).then(|| json!({"suppressed_failures": carried}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_username_is_written_down_never_other_text() {
        assert_eq!(shown_username("alice@example.com"), "alice@example.com");
        assert_eq!(shown_username(""), "(no username)");
        assert_eq!(shown_username("hunter2 with spaces!"), "(not a username)");
        assert_eq!(shown_username(&"a".repeat(65)), "(not a username)");
        assert_eq!(shown_username("p@ss:w0rd"), "(not a username)");
    }
}
