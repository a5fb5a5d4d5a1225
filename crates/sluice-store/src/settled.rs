//! Attempts kept in their delivery's row.
//!
//! Most deliveries are settled by their first round of attempts: the
//! endpoint answers `2xx` at once (or a `4xx` that is not retried). Such a
//! round is written into the delivery's own row, in `settled_attempts`, as
//! a JSON array, in the same update that records the outcome. An attempt
//! row of its own would cost the happy path another row write and two more
//! index entries for a record that is read only when someone opens the
//! delivery. Rounds after the first (a retried or replayed delivery) go to
//! the `attempts` table as before, so a delivery's attempts are its settled
//! round, if any, followed by its rows there, in the order written.
//!
//! [`settled_log`] decides and encodes; [`decode`] reads it back. Both are
//! pure, and both backends store the text as it is.

use std::borrow::Cow;

use chrono::DateTime;
use serde::{Deserialize, Serialize};

use crate::{Attempt, AttemptReport, Outcome, Result, StoreError};

/// One attempt as the row holds it; the delivery id is the row's. The keys
/// are one letter each, since every delivered event carries one of these:
/// `n` attempt round, `t` time (unix milliseconds, as every time column),
/// `u` URL, `s` HTTP status, `e` transport error, `l` latency in
/// milliseconds, `r` the start of the response. Text is borrowed from the
/// report when written and from the row when read, unless JSON escapes make
/// it a copy.
#[derive(Serialize, Deserialize)]
struct Kept<'a> {
    #[serde(rename = "n")]
    attempt: u32,
    #[serde(rename = "t")]
    at: i64,
    #[serde(rename = "u", borrow)]
    url: Cow<'a, str>,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(rename = "e", borrow, default, skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
    #[serde(rename = "l")]
    latency_ms: u64,
    #[serde(rename = "r", borrow, default, skip_serializing_if = "Option::is_none")]
    response: Option<Cow<'a, str>>,
}

/// The text to keep in the delivery's row when `report` can settle it
/// there: attempts that end the delivery (succeeded, dead or discarded). A
/// retry's attempts are not final and go to the `attempts` table. Whether
/// the round is the delivery's first is the store's to check, in the same
/// statement that applies the report.
pub(crate) fn settled_log(report: &AttemptReport) -> Option<String> {
    if report.attempts.is_empty() || matches!(report.outcome, Outcome::Retry { .. }) {
        return None;
    }
    let kept: Vec<Kept<'_>> = report
        .attempts
        .iter()
        .map(|a| Kept {
            attempt: a.attempt,
            at: a.at.timestamp_millis(),
            url: Cow::Borrowed(&a.url),
            status: a.status,
            error: a.error.as_deref().map(Cow::Borrowed),
            latency_ms: a.latency_ms,
            response: a.response.as_deref().map(Cow::Borrowed),
        })
        .collect();
    serde_json::to_string(&kept).ok()
}

/// The attempts `text` holds, for delivery `delivery_id`.
pub(crate) fn decode(delivery_id: i64, text: &str) -> Result<Vec<Attempt>> {
    let kept: Vec<Kept<'_>> = serde_json::from_str(text)
        .map_err(|e| StoreError::corrupt(format!("settled attempts of {delivery_id}: {e}")))?;
    Ok(kept
        .into_iter()
        .map(|k| Attempt {
            delivery_id,
            attempt: k.attempt,
            at: DateTime::from_timestamp_millis(k.at).unwrap_or_default(),
            url: k.url.into_owned(),
            status: k.status,
            error: k.error.map(Cow::into_owned),
            latency_ms: k.latency_ms,
            response: k.response.map(Cow::into_owned),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn attempt(url: &str, status: Option<u16>, response: Option<&str>) -> Attempt {
        Attempt {
            delivery_id: 7,
            attempt: 1,
            at: DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap(),
            url: url.to_owned(),
            status,
            error: status.is_none().then(|| "timed out".to_owned()),
            latency_ms: 12,
            response: response.map(str::to_owned),
        }
    }

    fn report(outcome: Outcome, attempts: Vec<Attempt>) -> AttemptReport {
        AttemptReport {
            delivery_id: 7,
            at: Utc::now(),
            attempts,
            outcome,
        }
    }

    #[test]
    fn a_final_round_reads_back_as_written() {
        let attempts = vec![
            attempt("https://a.example/hook", Some(200), Some("ok \"quoted\"\n")),
            attempt("https://b.example/hook", None, None),
        ];
        let text = settled_log(&report(Outcome::Succeeded, attempts.clone())).unwrap();
        assert_eq!(decode(7, &text).unwrap(), attempts);
    }

    #[test]
    fn a_retry_or_a_report_without_attempts_is_not_kept_in_the_row() {
        let one = vec![attempt("https://a.example/hook", Some(503), None)];
        let retry = Outcome::Retry { at: Utc::now() };
        assert_eq!(settled_log(&report(retry, one.clone())), None);
        assert_eq!(settled_log(&report(Outcome::Succeeded, Vec::new())), None);
        let dead = Outcome::Dead {
            error: "HTTP 410".into(),
        };
        assert!(settled_log(&report(dead, one)).is_some());
    }

    #[test]
    fn text_that_is_not_a_list_of_attempts_is_a_corrupt_error() {
        let e = decode(7, "{\"n\":1}").unwrap_err();
        assert!(e.to_string().contains("settled attempts of 7"), "{e}");
    }
}
