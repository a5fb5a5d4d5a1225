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

/// What became of a batch's lines.
#[derive(Debug, Default)]
pub struct Sent {
    pub acked: Vec<Item>,
    pub rejected: Vec<Rejected>,
}

pub async fn send(api: &Api, settings: &Settings, items: Vec<Item>) -> Result<Sent, CliError> {
    let mut sent = Sent::default();
    let mut work = vec![items];
    while let Some(mut group) = work.pop() {
        if group.is_empty() {
            continue;
        }
        let answer = post_with_retries(api, settings, &group).await?;
        if answer.status.is_success() {
            sent.acked.append(&mut group);
            continue;
        }
        if answer.status != StatusCode::BAD_REQUEST {
            return Err(api_error(answer));
        }
        let (code, message) = code_and_message(&answer);
        match blamed_item(&message) {
            Some((i, why)) if i < group.len() => {
                let item = group.remove(i);
                sent.rejected
                    .push(Rejected::from_server(item, code, why.to_owned()));
                work.push(group);
            }
            _ if group.len() == 1 => {
                let item = group.remove(0);
                sent.rejected
                    .push(Rejected::from_server(item, code, message));
            }
            _ => {
                let second = group.split_off(group.len() / 2);
                work.push(second);
                work.push(group);
            }
        }
    }
    Ok(sent)
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
