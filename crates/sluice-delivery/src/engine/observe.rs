//! What the engine tells alerting ([`crate::alerts`]): every attempt's
//! success or failure and every dead delivery, handed over without waiting.

use std::time::Duration;

use sluice_store::{AttemptReport, Destination, DueDelivery, Outcome};

use super::deliver;
use super::failure_log::FailureLog;

use crate::alerts::{AlertSink, Observation};

/// [`deliver::hold_back`], telling alerting when the delivery died (no
/// attempt was made, so only its death matters).
pub(super) fn hold_back(
    alerts: Option<&AlertSink>,
    dest: &Destination,
    due: &DueDelivery,
    wait: Duration,
    window: Duration,
    log: &FailureLog,
) -> AttemptReport {
    let report = deliver::hold_back(due, wait, window, log);
    if let (Some(alerts), Outcome::Dead { error }) = (alerts, &report.outcome) {
        let dead = Observation::Dead {
            message_id: due.message_id.clone(),
            error: error.clone(),
        };
        alerts.observe(&dest.id, &dest.name, dead);
    }
    report
}

/// An attempt's report. One without requests made (an invalid payload)
/// counts only as a dead delivery.
pub(super) fn attempt(
    alerts: Option<&AlertSink>,
    dest: &Destination,
    message_id: Option<String>,
    report: &AttemptReport,
) {
    let (Some(alerts), Some(message_id)) = (alerts, message_id) else {
        return;
    };
    if !report.attempts.is_empty() {
        let ok = matches!(report.outcome, Outcome::Succeeded);
        alerts.observe(&dest.id, &dest.name, Observation::Attempt(ok));
    }
    if let Outcome::Dead { error } = &report.outcome {
        let dead = Observation::Dead {
            message_id,
            error: error.clone(),
        };
        alerts.observe(&dest.id, &dest.name, dead);
    }
}
