//! The load generator: realistic events, pre-generated request bodies, and a
//! fixed pool of keep-alive HTTP/1.1 connections that send them ([`conn`]:
//! written by hand, so that the generator takes as little as it can of the
//! CPU it shares with the server).
//!
//! Bodies are built before the clock starts so the generator spends its
//! share of the (shared) CPU on sending, not formatting. Every loop is
//! bounded twice: by the number of bodies and by a time limit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use hdrhistogram::Histogram;

mod conn;

use conn::Conn;

/// Which collection call carries the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `/v1/batch` with this many events per request.
    Batch(usize),
    /// One `/v1/track` per event.
    Track,
}

/// A bounded, pre-generated set of request bodies with known messageIds.
pub struct Workload {
    pub call: Call,
    /// The `timestamp` every event carries (whole milliseconds).
    pub timestamp: chrono::DateTime<chrono::Utc>,
    prefix: String,
    bodies: Vec<Bytes>,
}

impl Workload {
    /// `events` events (rounded up to whole requests), ids `<prefix>-<seq>`,
    /// over 50,000 people.
    /// Batches carry a `sentAt`, as real libraries send.
    pub fn new(call: Call, prefix: &str, events: usize) -> Workload {
        Workload::build(call, prefix, events, 50_000, true)
    }

    /// [`Workload::new`] over `people` people: event `seq` is by
    /// `user-<seq % people>` (six digits at least). Batches carry no
    /// `sentAt`, so every stored event keeps [`Workload::timestamp`]: with
    /// one, the server corrects each timestamp for clock skew, which moves
    /// it to the time the bytes arrive, and time windows would then end
    /// wherever the send happened to fall.
    pub fn people(call: Call, prefix: &str, events: usize, people: usize) -> Workload {
        Workload::build(call, prefix, events, people, false)
    }

    fn build(call: Call, prefix: &str, events: usize, people: usize, sent_at: bool) -> Workload {
        let per = match call {
            Call::Batch(n) => n.max(1),
            Call::Track => 1,
        };
        let requests = events.div_ceil(per);
        let at = chrono::Utc::now();
        let at = chrono::DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap_or(at);
        let timestamp = at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let bodies = (0..requests)
            .map(|r| {
                let events = (r * per..(r + 1) * per)
                    .map(|seq| event(prefix, seq, seq % people.max(1), &timestamp));
                Bytes::from(match call {
                    Call::Track => events.collect::<String>(),
                    Call::Batch(_) if sent_at => format!(
                        r#"{{"batch":[{}],"sentAt":"{timestamp}"}}"#,
                        events.collect::<Vec<_>>().join(",")
                    ),
                    Call::Batch(_) => {
                        format!(r#"{{"batch":[{}]}}"#, events.collect::<Vec<_>>().join(","))
                    }
                })
            })
            .collect();
        Workload {
            call,
            timestamp: at,
            prefix: prefix.to_owned(),
            bodies,
        }
    }

    pub fn path(&self) -> &'static str {
        match self.call {
            Call::Batch(_) => "/v1/batch",
            Call::Track => "/v1/track",
        }
    }

    pub fn events_per_request(&self) -> usize {
        match self.call {
            Call::Batch(n) => n.max(1),
            Call::Track => 1,
        }
    }

    pub fn requests(&self) -> usize {
        self.bodies.len()
    }

    /// The messageIds carried by request `index`.
    pub fn ids_of(&self, index: usize) -> impl Iterator<Item = String> + '_ {
        let per = self.events_per_request();
        (index * per..(index + 1) * per).map(|seq| message_id(&self.prefix, seq))
    }

    /// Mean size of one event in the bodies, in bytes.
    pub fn mean_event_bytes(&self) -> usize {
        let total: usize = self.bodies.iter().map(Bytes::len).sum();
        total / (self.bodies.len() * self.events_per_request()).max(1)
    }
}

fn message_id(prefix: &str, seq: usize) -> String {
    format!("{prefix}-{seq:09}")
}

/// One ~400-byte track event, shaped like an e-commerce client's.
fn event(prefix: &str, seq: usize, user: usize, timestamp: &str) -> String {
    let id = message_id(prefix, seq);
    format!(
        r#"{{"type":"track","messageId":"{id}","userId":"user-{user:06}","event":"Order Completed","properties":{{"orderId":"ord-{seq:010}","revenue":129.95,"currency":"USD","coupon":"SPRING24","products":[{{"sku":"sku-48213","name":"Trail Running Shoe","price":129.95,"quantity":1}}]}},"context":{{"library":{{"name":"analytics-go","version":"3.3.0"}},"ip":"203.0.113.42","locale":"en-US"}},"timestamp":"{timestamp}"}}"#
    )
}

/// How requests are released.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    /// Each connection sends its next request as soon as the last is answered.
    Closed,
    /// Request `i` is released at `start + i / rate` (open loop).
    PerSecond(f64),
}

/// Where to send and how.
pub struct Target {
    /// The nodes to load; connection `i` goes to `addrs[i % len]`.
    pub addrs: Vec<SocketAddr>,
    pub authorization: String,
    pub connections: usize,
    pub pace: Pace,
    pub time_limit: Duration,
}

/// What a load run achieved.
pub struct Outcome {
    /// (request index, when its 200 arrived).
    pub acked: Vec<(usize, Instant)>,
    pub failures: usize,
    pub first_failure: Option<String>,
    /// Request latency in microseconds, of acknowledged requests.
    pub latency_us: Histogram<u64>,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn acked_events(&self, workload: &Workload) -> usize {
        self.acked.len() * workload.events_per_request()
    }

    /// Every messageId that was acknowledged, in request order.
    pub fn acked_ids(&self, workload: &Workload) -> Vec<String> {
        let mut indexes: Vec<usize> = self.acked.iter().map(|(i, _)| *i).collect();
        indexes.sort_unstable();
        indexes.iter().flat_map(|i| workload.ids_of(*i)).collect()
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs .. 10 min, 3 significant digits; bounds are constants, so valid.
    Histogram::new_with_bounds(1, 600_000_000, 3)
        .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
}

/// Sends every body of `workload` once over `target.connections`
/// connections, stopping early at `target.time_limit`.
pub async fn drive(target: &Target, workload: Arc<Workload>) -> anyhow::Result<Outcome> {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start + target.time_limit;
    let mut workers = tokio::task::JoinSet::new();
    if target.addrs.is_empty() {
        anyhow::bail!("no node to load");
    }
    for i in 0..target.connections.max(1) {
        let worker = Worker {
            addr: target.addrs[i % target.addrs.len()],
            authorization: target.authorization.clone(),
            pace: target.pace,
            start,
            deadline,
        };
        workers.spawn(worker.run(workload.clone(), next.clone()));
    }
    let mut outcome = Outcome {
        acked: Vec::with_capacity(workload.requests()),
        failures: 0,
        first_failure: None,
        latency_us: histogram(),
        elapsed: Duration::ZERO,
    };
    while let Some(joined) = workers.join_next().await {
        let part = joined.context("load worker panicked")??;
        outcome.acked.extend(part.acked);
        outcome.failures += part.failures;
        outcome.first_failure = outcome.first_failure.or(part.first_failure);
        outcome
            .latency_us
            .add(&part.latency_us)
            .context("merging latency histograms")?;
    }
    outcome.elapsed = start.elapsed();
    Ok(outcome)
}

struct Worker {
    addr: SocketAddr,
    authorization: String,
    pace: Pace,
    start: Instant,
    deadline: Instant,
}

impl Worker {
    async fn connect(&self) -> anyhow::Result<Conn> {
        Conn::connect(self.addr, &self.authorization).await
    }

    async fn run(self, workload: Arc<Workload>, next: Arc<AtomicUsize>) -> anyhow::Result<Outcome> {
        let mut out = Outcome {
            acked: Vec::new(),
            failures: 0,
            first_failure: None,
            latency_us: histogram(),
            elapsed: Duration::ZERO,
        };
        let mut conn = self.connect().await?;
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(body) = workload.bodies.get(index) else {
                break;
            };
            if let Pace::PerSecond(rate) = self.pace {
                let due = self.start + Duration::from_secs_f64(index as f64 / rate);
                tokio::time::sleep_until(due.into()).await;
            }
            if Instant::now() >= self.deadline {
                break;
            }
            if conn.is_closed() {
                conn = self.connect().await?;
            }
            let sent = Instant::now();
            match send(&mut conn, workload.path(), body).await {
                Ok(()) => {
                    let now = Instant::now();
                    let micros = now.duration_since(sent).as_micros();
                    let _ = out
                        .latency_us
                        .record(u64::try_from(micros).unwrap_or(u64::MAX));
                    out.acked.push((index, now));
                }
                Err(e) => {
                    out.failures += 1;
                    out.first_failure.get_or_insert_with(|| format!("{e:#}"));
                }
            }
        }
        Ok(out)
    }
}

/// One request; Ok only for a 200 (the commit happened).
async fn send(conn: &mut Conn, path: &str, body: &[u8]) -> anyhow::Result<()> {
    let answer = conn.post(path, body).await?;
    if answer.status != 200 {
        anyhow::bail!(
            "HTTP {}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_about_400_bytes_and_valid_json() {
        let w = Workload::new(Call::Batch(100), "t", 250);
        assert_eq!(w.requests(), 3);
        assert!(
            (350..=450).contains(&w.mean_event_bytes()),
            "{}",
            w.mean_event_bytes()
        );
        let parsed: serde_json::Value = serde_json::from_slice(&w.bodies[0]).expect("json");
        assert_eq!(parsed["batch"].as_array().map(Vec::len), Some(100));
        assert_eq!(parsed["batch"][1]["messageId"], "t-000000001");
        assert_eq!(w.ids_of(2).next().as_deref(), Some("t-000000200"));
    }

    #[test]
    fn track_bodies_are_single_events() {
        let w = Workload::new(Call::Track, "t", 2);
        let parsed: serde_json::Value = serde_json::from_slice(&w.bodies[1]).expect("json");
        assert_eq!(parsed["messageId"], "t-000000001");
    }
}
