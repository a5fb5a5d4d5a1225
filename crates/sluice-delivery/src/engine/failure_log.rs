//! Delivery failures in the process log, per destination and rate-limited.
//!
//! The attempt log (admin API) keeps every attempt; the process log is for
//! operators watching the service, so it says what failed where without
//! flooding: each failed attempt is a `warn` line, a dead delivery an
//! `error` line, each kind limited per destination by a [`LogBudget`]
//! (the first line after a quiet spell carries `suppressed=N`).
//!
//! Lines name the destination id, the URL's host (never its userinfo, path
//! or query, where webhook tokens often live), the messageId, the attempt
//! number and the error kind. Never a secret, header or body.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::policy::log_budget::LogBudget;
use crate::sender::UrlResult;

/// Lines of each level one destination may write per [`WINDOW`].
const BURST: u32 = 10;
/// The budget's window.
const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(super) struct FailureLog {
    warn: Mutex<LogBudget>,
    dead: Mutex<LogBudget>,
}

impl Default for FailureLog {
    fn default() -> Self {
        Self {
            warn: Mutex::new(LogBudget::new(BURST, WINDOW)),
            dead: Mutex::new(LogBudget::new(BURST, WINDOW)),
        }
    }
}

impl FailureLog {
    /// One URL's failed attempt (nothing for a success).
    pub(super) fn attempt(&self, destination: &str, message_id: &str, result: &UrlResult) {
        let Some(kind) = result.error_kind else {
            return;
        };
        let Some(suppressed) = admit(&self.warn) else {
            return;
        };
        tracing::warn!(
            destination,
            host = %result.host,
            message_id,
            attempt = result.attempt.attempt,
            kind,
            status = result.attempt.status,
            error = result.attempt.error.as_deref(),
            suppressed,
            "delivery attempt failed"
        );
    }

    /// A delivery that will not be tried again.
    pub(super) fn dead(&self, destination: &str, message_id: &str, attempts: u32, kind: &str) {
        let Some(suppressed) = admit(&self.dead) else {
            return;
        };
        tracing::error!(
            destination,
            message_id,
            attempts,
            kind,
            suppressed,
            "delivery dead: no more attempts; replay it from the admin API"
        );
    }
}

fn admit(budget: &Mutex<LogBudget>) -> Option<u64> {
    budget
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .admit(Instant::now())
}

#[cfg(test)]
mod tests {
    use crate::sender::host_of;

    #[test]
    fn host_of_drops_credentials_path_and_query() {
        assert_eq!(
            host_of("https://user:pa55@hooks.example.com:8443/services/T0/B0/s3cr3t?token=x"),
            "hooks.example.com"
        );
        assert_eq!(host_of("http://[::1]:9/x"), "[::1]");
        assert_eq!(host_of("not a url"), "(invalid URL)");
    }
}
