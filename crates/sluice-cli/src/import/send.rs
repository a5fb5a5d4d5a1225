//! Sending one batch until every line in it is either acknowledged or
//! rejected.
//!
//! What an answer means:
//! - `200`: the whole batch is committed.
//! - `400`: **nothing** was stored: the server refuses a request whole when
//!   any item is invalid. When the message names the item (`batch[i]: …`),
//!   that item is rejected and the rest is sent again (the items before `i`
//!   passed every check; those after are unknown). When it does not (body or
//!   count over a limit configured below the defaults), the batch is split
//!   in halves. A one-item batch refused is a rejected line. So a batch with
//!   `k` bad lines costs about `k + 1` requests, and every good line lands.
//! - `5xx` or no answer: retried with backoff; after `retries`, fatal.
//! - any other status (`401` wrong key, `404` not a Sluice): fatal.

use std::time::Duration;

use reqwest::StatusCode;

use super::batch::{Item, blamed_item, body};
use super::{Rejected, Settings};
use crate::client::{Answer, Api, api_error};
use crate::error::CliError;

/// What became of a batch's lines. After a split, part of a batch may be
/// acknowledged before another part fails: `failed` is then set, and what
/// was acknowledged must still be recorded.
#[derive(Debug, Default)]
pub struct Sent {
    pub acked: Vec<Item>,
    pub rejected: Vec<Rejected>,
    pub failed: Option<CliError>,
}

pub async fn send(api: &Api, settings: &Settings, items: Vec<Item>) -> Sent {
    let mut sent = Sent::default();
    let mut work = vec![items];
    while let Some(mut group) = work.pop() {
        if group.is_empty() {
            continue;
        }
        let answer = match post_with_retries(api, settings, &group).await {
            Ok(answer) => answer,
            Err(e) => {
                sent.failed = Some(e);
                return sent;
            }
        };
        if answer.status.is_success() {
            // Only Sluice's own acknowledgement marks lines done: a 2xx
            // from anything else would lose them for good at the rerun.
            if answer.body.get("success") != Some(&serde_json::Value::Bool(true)) {
                sent.failed = Some(CliError::NotSluice(format!(
                    "{} answered HTTP {} without {{\"success\": true}}",
                    crate::client::masked(api.base()),
                    answer.status.as_u16()
                )));
                return sent;
            }
            sent.acked.append(&mut group);
            continue;
        }
        if answer.status != StatusCode::BAD_REQUEST {
            sent.failed = Some(api_error(answer));
            return sent;
        }
        let (code, message) = code_and_message(&answer);
        let (rejected, retry) = after_refusal(group, code, message);
        sent.rejected.extend(rejected);
        work.extend(retry);
    }
    sent
}

/// What to do after a `400` for `group` (nothing of it was stored): the
/// line to reject, if the answer identifies one, and the groups to send
/// again, pushed in reverse so the earlier lines go first.
pub fn after_refusal(
    mut group: Vec<Item>,
    code: String,
    message: String,
) -> (Option<Rejected>, Vec<Vec<Item>>) {
    match blamed_item(&message) {
        Some((i, why)) if i < group.len() => {
            let item = group.remove(i);
            let rejected = Rejected::from_server(item, code, why.to_owned());
            (Some(rejected), vec![group])
        }
        _ if group.len() == 1 => {
            let item = group.remove(0);
            (Some(Rejected::from_server(item, code, message)), vec![])
        }
        _ => {
            let second = group.split_off(group.len() / 2);
            (None, vec![second, group])
        }
    }
}

fn code_and_message(answer: &Answer) -> (String, String) {
    let field = |name| {
        answer
            .body
            .get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (field("code"), field("message"))
}

/// Posts `items`, retrying 5xx answers and transport failures with
/// exponential backoff (0.5 s doubling, at most 30 s).
///
/// A transport failure after the request was sent may hide a commit, so a
/// retry can store a batch twice; its lines keep their `messageId`s.
async fn post_with_retries(
    api: &Api,
    settings: &Settings,
    items: &[Item],
) -> Result<Answer, CliError> {
    let payload = body(items);
    let mut delay = Duration::from_millis(500);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = api.batch(&settings.write_key, payload.clone()).await;
        let retryable = match &result {
            Ok(answer) => answer.status.is_server_error(),
            // Something that is not Sluice will not become Sluice.
            Err(CliError::NotSluice(_)) => false,
            Err(_) => true,
        };
        if !retryable || attempt > settings.retries {
            return match result {
                Ok(answer) if answer.status.is_server_error() => Err(api_error(answer)),
                other => other,
            };
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::batch::LineRef;

    fn group(n: u64) -> Vec<Item> {
        (1..=n)
            .map(|line| Item {
                at: LineRef { input: 0, line },
                text: "{}".into(),
            })
            .collect()
    }

    fn lines(groups: &[Vec<Item>]) -> Vec<Vec<u64>> {
        groups
            .iter()
            .map(|g| g.iter().map(|i| i.at.line).collect())
            .collect()
    }

    #[test]
    fn a_blamed_item_is_rejected_and_the_rest_sent_again_together() {
        let (rejected, retry) = after_refusal(
            group(4),
            "missing_field".into(),
            "batch[2]: track requires 'event'".into(),
        );
        let rejected = rejected.unwrap();
        assert_eq!(rejected.at.line, 3);
        assert_eq!(rejected.message, "track requires 'event'");
        assert_eq!(lines(&retry), [vec![1, 2, 4]]);
    }

    #[test]
    fn an_unattributed_refusal_splits_the_batch_in_halves() {
        let msg = || "request body exceeds 2000 bytes".to_owned();
        let (rejected, retry) = after_refusal(group(5), "body_too_large".into(), msg());
        assert!(rejected.is_none());
        assert_eq!(lines(&retry), [vec![3, 4, 5], vec![1, 2]]);
        // An index outside the group is not trusted either.
        let (rejected, retry) = after_refusal(group(2), "x".into(), "batch[9]: ?".into());
        assert!(rejected.is_none());
        assert_eq!(retry.len(), 2);
    }

    #[test]
    fn a_single_refused_line_is_rejected_with_the_whole_message() {
        let (rejected, retry) = after_refusal(group(1), "body_too_large".into(), "too big".into());
        assert_eq!(rejected.unwrap().message, "too big");
        assert!(retry.is_empty());
    }
}
