//! `sluice tail`: follows a source's events as they are stored.
//!
//! The debugger endpoint lists a source's events newest first and pages
//! backwards with `before`. Following needs no other cursor: each poll reads
//! the newest page, and pages further back only while the whole page is
//! newer than the last event printed, so a burst between two polls is never
//! skipped. Events print oldest first, as stored after enrichment (what
//! webhooks receive).
//!
//! With several nodes on one PostgreSQL database, an event's `seq` is taken
//! before its transaction commits, so an event can become visible after a
//! newer one was already printed; `tail` does not go back for it (see
//! docs/cli.md).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use clap::Args;
use reqwest::Method;
use serde_json::Value;

use crate::admin::resources::path_segment;
use crate::client::{Api, Connection};
use crate::error::CliError;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sluice tail --source src_4ywHJu7atksI0JlN\n  \
    sluice tail --source src_4ywHJu7atksI0JlN --lines 0 | jq -r .messageId")]
pub struct TailArgs {
    #[arg(long, value_name = "ID")]
    pub source: String,
    /// How many already stored events to print before following.
    #[arg(long, short = 'n', default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=500))]
    pub lines: u32,
    /// Milliseconds between polls.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(50..))]
    pub interval_ms: u64,
    #[command(flatten)]
    pub conn: Connection,
}

const PAGE: u32 = 500;

pub async fn tail(args: TailArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let path = format!("/sources/{}/events", path_segment(&args.source)?);
    let pretty = std::io::stdout().is_terminal();
    // The first read fixes where following starts, and shows `--lines`.
    let first = page(&api, &path, args.lines.max(1), None).await?;
    let mut last_seq = first.first().and_then(seq).unwrap_or(0);
    let shown = first.len().min(args.lines as usize);
    print(first[..shown].iter().rev(), pretty)?;
    let mut unavailable = false;
    loop {
        tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
        let fresh = match newer_than(&api, &path, last_seq).await {
            Ok(fresh) => fresh,
            // A restart or a 503 is waited out; a 4xx (source deleted,
            // token revoked) ends the command.
            Err(e) if transient(&e) => {
                if !unavailable {
                    eprintln!("tail: {e}; retrying");
                }
                unavailable = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        if std::mem::take(&mut unavailable) {
            eprintln!("tail: reconnected");
        }
        if let Some(newest) = fresh.first().and_then(seq) {
            last_seq = newest;
        }
        print(fresh.iter().rev(), pretty)?;
    }
}

fn transient(e: &CliError) -> bool {
    match e {
        CliError::Transport(_) => true,
        CliError::Api { status, .. } => *status >= 500,
        _ => false,
    }
}

/// Events with a seq above `last`, newest first.
async fn newer_than(api: &Api, path: &str, last: i64) -> Result<Vec<Value>, CliError> {
    let mut fresh = Vec::new();
    let mut before = None;
    loop {
        let rows = page(api, path, PAGE, before).await?;
        let full = rows.len() == PAGE as usize;
        let mut reached_last = false;
        for row in rows {
            match seq(&row) {
                Some(s) if s > last => {
                    before = Some(s);
                    fresh.push(row);
                }
                _ => {
                    reached_last = true;
                    break;
                }
            }
        }
        if reached_last || !full {
            return Ok(fresh);
        }
    }
}

async fn page(
    api: &Api,
    path: &str,
    limit: u32,
    before: Option<i64>,
) -> Result<Vec<Value>, CliError> {
    let query = match before {
        Some(b) => format!("{path}?limit={limit}&before={b}"),
        None => format!("{path}?limit={limit}"),
    };
    let mut answer = api.admin(Method::GET, &query, None).await?;
    Ok(match answer.get_mut("data").map(Value::take) {
        Some(Value::Array(rows)) => rows,
        _ => Vec::new(),
    })
}

fn seq(row: &Value) -> Option<i64> {
    row.get("seq").and_then(Value::as_i64)
}

/// One stored message per line, or indented on a terminal. A closed pipe
/// (`sluice tail | head`) ends the command quietly.
fn print<'a>(rows: impl Iterator<Item = &'a Value>, pretty: bool) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    for row in rows {
        let event = row.get("event").unwrap_or(row);
        let text = if pretty {
            serde_json::to_string_pretty(event)
        } else {
            serde_json::to_string(event)
        }
        .unwrap_or_default();
        writeln!(out, "{text}").map_err(|_| CliError::StdoutClosed)?;
    }
    out.flush().map_err(|_| CliError::StdoutClosed)
}
