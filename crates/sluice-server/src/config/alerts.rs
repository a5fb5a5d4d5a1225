//! `[alerts]`: operational alerts on failing destinations (docs/alerts.md).

use serde::{Deserialize, Serialize};
use sluice_delivery::sender::host_of;

/// Off until `urls` is set. The secret is never logged: `Debug` masks it
/// (and shows the URLs' hosts alone, as paths often hold tokens).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertsSettings {
    /// Where alert webhooks are posted (at most 5); empty: alerts off.
    pub urls: Vec<String>,
    /// The Standard Webhooks `whsec_…` secret alerts are signed with;
    /// required when `urls` is set.
    pub secret: Option<String>,
    /// The sliding window the success rate is measured over (300 s).
    pub window_secs: u64,
    /// Below this share of successful attempts in the window, a
    /// destination is failing (0.5).
    pub min_success_rate: f64,
    /// Fewest attempts in the window before the rate counts (10).
    pub min_attempts: u32,
    /// Pending deliveries of one destination above which it is failing;
    /// 0 (default): not checked. At most 100,000: each check reads up to
    /// one more than this many rows per destination.
    pub backlog_limit: u64,
    /// How often windows are re-evaluated and the backlog counted (10 s).
    pub check_interval_ms: u64,
    /// Tries per alert and URL before it is given up (8), the first pause
    /// doubling from `retry_base_ms` (1 s), at most 1 min.
    pub max_tries: u32,
    pub retry_base_ms: u64,
}

impl Default for AlertsSettings {
    fn default() -> Self {
        AlertsSettings {
            urls: Vec::new(),
            secret: None,
            window_secs: 300,
            min_success_rate: 0.5,
            min_attempts: 10,
            backlog_limit: 0,
            check_interval_ms: 10_000,
            max_tries: 8,
            retry_base_ms: 1_000,
        }
    }
}

impl std::fmt::Debug for AlertsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlertsSettings")
            .field(
                "urls",
                &self.urls.iter().map(|u| host_of(u)).collect::<Vec<_>>(),
            )
            .field("secret", &self.secret.as_ref().map(|_| "whsec_****"))
            .field("window_secs", &self.window_secs)
            .field("min_success_rate", &self.min_success_rate)
            .field("min_attempts", &self.min_attempts)
            .field("backlog_limit", &self.backlog_limit)
            .field("check_interval_ms", &self.check_interval_ms)
            .field("max_tries", &self.max_tries)
            .field("retry_base_ms", &self.retry_base_ms)
            .finish()
    }
}

impl AlertsSettings {
    /// Why these settings cannot be used, naming the key (never the secret).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.urls.is_empty() {
            return None;
        }
        if self.urls.len() > 5 {
            return Some(("alerts.urls", "at most 5".into()));
        }
        for url in &self.urls {
            let web = url.starts_with("http://") || url.starts_with("https://");
            if !web || host_of(url) == "(invalid URL)" {
                return Some(("alerts.urls", "each must be an http(s) URL".into()));
            }
        }
        match self.secret.as_deref() {
            None => {
                return Some((
                    "alerts.secret",
                    "is required when alerts.urls is set".into(),
                ));
            }
            Some(s) => {
                if let Err(e) = sluice_signing::standard::secret_key(s) {
                    return Some(("alerts.secret", e.to_string()));
                }
            }
        }
        if !(0.0..=1.0).contains(&self.min_success_rate) {
            return Some(("alerts.min_success_rate", "must be between 0 and 1".into()));
        }
        if self.backlog_limit > 100_000 {
            return Some(("alerts.backlog_limit", "must be at most 100000".into()));
        }
        if self.window_secs == 0 || self.check_interval_ms == 0 || self.max_tries == 0 {
            return Some((
                "alerts",
                "window_secs, check_interval_ms and max_tries must be at least 1".into(),
            ));
        }
        None
    }
}
