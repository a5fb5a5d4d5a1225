//! `sluice deliveries` (the attempt log) and `sluice replay` (dead
//! deliveries back to pending).

use chrono::{DateTime, NaiveDate, Utc};
use clap::Args;
use reqwest::Method;
use serde_json::{Value, json};

use super::resources::{Format, path_segment, show};
use crate::client::{Api, Connection};
use crate::error::CliError;
use crate::output::{Column, field, print_json};

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  sluice deliveries --destination dst_qdHXbhTVG8DHLrMy --state dead --table"
)]
pub struct DeliveriesArgs {
    /// Only this destination's deliveries.
    #[arg(long, value_name = "ID")]
    pub destination: Option<String>,
    /// pending, succeeded, dead, discarded or filtered (the API's states).
    #[arg(long, value_parser = ["pending", "succeeded", "dead", "discarded", "filtered"])]
    pub state: Option<String>,
    /// Only deliveries of this messageId.
    #[arg(long, value_name = "M")]
    pub message_id: Option<String>,
    /// At most this many, newest first.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    #[command(flatten)]
    pub format: Format,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sluice replay --destination dst_qdHXbhTVG8DHLrMy\n  \
    sluice replay --destination dst_qdHXbhTVG8DHLrMy --since 2h\n  \
    sluice replay --destination dst_qdHXbhTVG8DHLrMy --message-id m-42")]
pub struct ReplayArgs {
    #[arg(long, value_name = "ID")]
    pub destination: String,
    /// Only deliveries that died at or after T: an ISO 8601 time
    /// (2026-11-22T16:00:00Z), a date (2026-11-22, UTC), or an age such as
    /// 30m, 2h, 1d.
    #[arg(long, value_name = "T", value_parser = parse_since)]
    pub since: Option<DateTime<Utc>>,
    /// Only deliveries of this messageId.
    #[arg(long, value_name = "M")]
    pub message_id: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

const COLUMNS: &[Column] = &[
    Column {
        header: "ID",
        cell: |r| field(r, "id"),
    },
    Column {
        header: "DESTINATION",
        cell: |r| field(r, "destination_id"),
    },
    Column {
        header: "MESSAGE ID",
        cell: |r| field(r, "message_id"),
    },
    Column {
        header: "STATE",
        cell: |r| field(r, "state"),
    },
    Column {
        header: "ATTEMPTS",
        cell: |r| field(r, "attempts"),
    },
    Column {
        header: "UPDATED",
        cell: |r| field(r, "updated_at"),
    },
    Column {
        header: "LAST ERROR",
        cell: |r| field(r, "last_error"),
    },
];

pub async fn deliveries(args: DeliveriesArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let rows = list(&api, &args, args.limit).await?;
    show(&Value::Array(rows), args.format.table, COLUMNS);
    Ok(())
}

/// Pages backwards through the attempt log until `limit` rows or the end.
async fn list(api: &Api, args: &DeliveriesArgs, limit: u32) -> Result<Vec<Value>, CliError> {
    let base = match &args.destination {
        Some(id) => format!("/destinations/{}/deliveries", path_segment(id)?),
        None => "/deliveries".to_owned(),
    };
    let mut query = Vec::new();
    if let Some(state) = &args.state {
        query.push(format!("state={state}"));
    }
    if let Some(m) = &args.message_id {
        query.push(format!("message_id={}", encode(m)));
    }
    let mut rows = Vec::new();
    let mut before: Option<i64> = None;
    while (rows.len() as u32) < limit {
        let page = (limit - rows.len() as u32).min(500);
        let mut q = query.clone();
        q.push(format!("limit={page}"));
        if let Some(b) = before {
            q.push(format!("before={b}"));
        }
        let answer = api
            .admin(Method::GET, &format!("{base}?{}", q.join("&")), None)
            .await?;
        if let Some(Value::Array(data)) = answer.get("data") {
            rows.extend(data.iter().cloned());
        }
        let next = answer.get("next_before").and_then(Value::as_i64);
        if let (Some(n), Some(b)) = (next, before)
            && n >= b
        {
            return Err(CliError::NotSluice(format!(
                "{}: paging did not move back (next_before {n} after {b})",
                crate::client::masked(api.base())
            )));
        }
        before = next;
        if before.is_none() {
            break;
        }
    }
    Ok(rows)
}

pub async fn replay(args: ReplayArgs) -> Result<(), CliError> {
    let api = Api::new(&args.conn)?;
    let dst = path_segment(&args.destination)?.to_owned();
    let replayed = match args.since {
        // The server replays a destination's dead deliveries in one call.
        None => {
            let body = match &args.message_id {
                Some(m) => json!({"message_id": m}),
                None => json!({}),
            };
            let answer = api
                .admin(
                    Method::POST,
                    &format!("/destinations/{dst}/replay"),
                    Some(&body),
                )
                .await?;
            answer.get("replayed").and_then(Value::as_u64).unwrap_or(0)
        }
        // The server has no time filter: list the dead ones, keep those that
        // died since T (a dead delivery's `updated_at` is when it died), and
        // replay them one by one. One that is no longer dead (replayed by
        // someone else meanwhile) answers 409 and is not counted.
        Some(since) => {
            let list_args = DeliveriesArgs {
                destination: Some(dst),
                state: Some("dead".into()),
                message_id: args.message_id.clone(),
                limit: u32::MAX,
                format: Format { table: false },
                conn: args.conn.clone(),
            };
            let dead = list(&api, &list_args, u32::MAX).await?;
            let mut replayed = 0;
            for row in dead.iter().filter(|r| died_since(r, since)) {
                let Some(id) = row.get("id").and_then(Value::as_i64) else {
                    continue;
                };
                match api
                    .admin(Method::POST, &format!("/deliveries/{id}/replay"), None)
                    .await
                {
                    Ok(answer) => {
                        replayed += answer.get("replayed").and_then(Value::as_u64).unwrap_or(0)
                    }
                    Err(CliError::Api { status: 409, .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            replayed
        }
    };
    print_json(&json!({ "replayed": replayed }));
    Ok(())
}

fn died_since(row: &Value, since: DateTime<Utc>) -> bool {
    row.get("updated_at")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .is_some_and(|t| t >= since)
}

/// Percent-encodes a query value (messageIds are free text).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `--since`: an RFC 3339 time, a UTC date, or an age (`90s`, `30m`, `2h`, `7d`).
pub fn parse_since(s: &str) -> Result<DateTime<Utc>, String> {
    parse_since_at(s, Utc::now())
}

fn parse_since_at(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = digits.parse().map_err(|_| bad_since(s))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad_since(s)),
    };
    n.checked_mul(seconds)
        .and_then(chrono::TimeDelta::try_seconds)
        .and_then(|age| now.checked_sub_signed(age))
        .ok_or_else(|| bad_since(s))
}

fn bad_since(s: &str) -> String {
    format!("'{s}' is not a time (2026-11-22T16:00:00Z, 2026-11-22) or an age (30m, 2h, 1d)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_times_dates_and_ages() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s| parse_since_at(s, now).map(|t| t.to_rfc3339());
        assert_eq!(at("2h").unwrap(), "2026-11-22T10:00:00+00:00");
        assert_eq!(at("1d").unwrap(), "2026-11-21T12:00:00+00:00");
        assert_eq!(at("2026-11-20").unwrap(), "2026-11-20T00:00:00+00:00");
        assert_eq!(
            at("2026-11-22T13:00:00+02:00").unwrap(),
            "2026-11-22T11:00:00+00:00"
        );
        assert!(at("yesterday").is_err());
        assert!(at("5w").is_err());
        assert!(at("h").is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode("m 1&x=é"), "m%201%26x%3D%C3%A9");
    }
}
