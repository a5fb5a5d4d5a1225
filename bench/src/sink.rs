//! The webhook sink: a lean HTTP/1.1 receiver on loopback, on its own
//! single-threaded runtime so the load generator cannot starve it.
//!
//! Each endpoint (`/e/<n>`) has a [`Mode`]. For every request the sink
//! checks `X-Signature` (HMAC-SHA1 of the raw body with the shared secret)
//! and that the body carries the `X-Sluice-Message-Id`, and it counts 2xx
//! answers per (endpoint, messageId): the evidence for "delivered exactly
//! once". It keeps counters, not bodies, so a million receipts stay small.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How an endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 200 to everything.
    Ok,
    /// 503 to a random half of the requests, 200 to the rest.
    Flaky,
    /// 503 to everything.
    Unavailable,
    /// Reads the request and never answers.
    Hang,
}

/// A registered endpoint: its index and URL.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub id: usize,
    pub url: String,
}

/// What one endpoint saw for a set of expected messageIds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Audit {
    pub expected: usize,
    /// Expected ids with exactly one 2xx.
    pub exactly_once: usize,
    pub missing: usize,
    /// Expected ids answered 2xx more than once.
    pub duplicated: usize,
    /// 2xx-answered ids that were never expected.
    pub unexpected: usize,
    pub bad_signatures: u64,
    /// Requests answered with a non-2xx (or left hanging).
    pub refused: u64,
}

impl Audit {
    /// Every expected id exactly once, every request genuine.
    pub fn all_once(&self) -> bool {
        self.exactly_once == self.expected && self.bad_signatures == 0
    }

    /// [`Audit::all_once`], and nothing else answered 2xx either.
    pub fn is_clean(&self) -> bool {
        self.all_once() && self.unexpected == 0
    }
}

#[derive(Default)]
struct EndpointState {
    mode: Option<Mode>,
    /// Receipts keyed by [`person_key`] instead of the messageId: for the
    /// profile engine's identify calls, whose ids the bench cannot know.
    by_person: bool,
    ok: u64,
    refused: u64,
    bad_signatures: u64,
}

#[derive(Default)]
struct State {
    endpoints: Vec<EndpointState>,
    /// (endpoint, messageId) → (2xx answers, time of the first).
    receipts: HashMap<(usize, Box<str>), (u32, Instant)>,
}

struct Shared {
    secret: Vec<u8>,
    state: Mutex<State>,
    gate: watch::Sender<bool>,
}

/// The running sink; stopped (all connections dropped) when dropped.
pub struct Sink {
    runtime: Option<tokio::runtime::Runtime>,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

/// Bodies beyond this are refused; Sluice's payloads are far smaller.
const BODY_CAP: usize = 1 << 20;

/// How long a closed gate holds a request before refusing it with 503:
/// below Sluice's 5 s answer timeout, so a held request is never abandoned
/// by Sluice after the sink counted it.
const GATE_HOLD: Duration = Duration::from_secs(3);

impl Sink {
    pub fn start(secret: &str) -> anyhow::Result<Sink> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sink")
            .enable_all()
            .build()
            .context("starting the sink runtime")?;
        let std_listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding the sink")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let shared = Arc::new(Shared {
            secret: secret.as_bytes().to_vec(),
            state: Mutex::new(State::default()),
            gate: watch::Sender::new(true),
        });
        let accept_shared = shared.clone();
        runtime.spawn(async move {
            match TcpListener::from_std(std_listener) {
                Ok(listener) => accept_loop(listener, accept_shared).await,
                Err(e) => eprintln!("sink: cannot listen: {e}"),
            }
        });
        Ok(Sink {
            runtime: Some(runtime),
            addr,
            shared,
        })
    }

    /// Adds an endpoint answering in `mode`.
    pub fn endpoint(&self, mode: Mode) -> Endpoint {
        let mut state = lock(&self.shared.state);
        state.endpoints.push(EndpointState {
            mode: Some(mode),
            ..EndpointState::default()
        });
        let id = state.endpoints.len() - 1;
        Endpoint {
            id,
            url: format!("http://{}/e/{id}", self.addr),
        }
    }

    /// An endpoint answering 200 whose receipts are keyed by
    /// [`person_key`] (`userId|traits`), so an audit can ask "did each person
    /// get this value exactly once".
    pub fn person_endpoint(&self) -> Endpoint {
        let endpoint = self.endpoint(Mode::Ok);
        if let Some(e) = lock(&self.shared.state).endpoints.get_mut(endpoint.id) {
            e.by_person = true;
        }
        endpoint
    }

    /// While closed, requests are held until it opens again, or refused
    /// with 503 after [`GATE_HOLD`] (Sluice retries them later).
    pub fn set_open(&self, open: bool) {
        self.shared.gate.send_replace(open);
    }

    /// 2xx answers given by `endpoint` so far.
    pub fn ok_count(&self, endpoint: &Endpoint) -> u64 {
        lock(&self.shared.state)
            .endpoints
            .get(endpoint.id)
            .map_or(0, |e| e.ok)
    }

    /// Waits until every endpoint in `endpoints` answered `target` 2xx, or
    /// `timeout` passes. Returns when the last one got there, if they did.
    pub async fn wait_ok(
        &self,
        endpoints: &[Endpoint],
        target: u64,
        timeout: Duration,
    ) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if endpoints.iter().all(|e| self.ok_count(e) >= target) {
                return Some(Instant::now());
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits until `endpoint` answered 2xx for every id in `ids`, or
    /// `timeout` passes. Returns when the last one got there, if they did.
    pub async fn wait_ids(
        &self,
        endpoint: &Endpoint,
        ids: &[String],
        timeout: Duration,
    ) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        let mut next = 0;
        loop {
            {
                let state = lock(&self.shared.state);
                while let Some(id) = ids.get(next) {
                    if !state
                        .receipts
                        .contains_key(&(endpoint.id, Box::from(id.as_str())))
                    {
                        break;
                    }
                    next += 1;
                }
            }
            if next == ids.len() {
                return Some(Instant::now());
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The time of the first 2xx for each id at `endpoint`.
    pub fn first_ok(&self, endpoint: &Endpoint, ids: &[String]) -> Vec<Option<Instant>> {
        let state = lock(&self.shared.state);
        ids.iter()
            .map(|id| {
                state
                    .receipts
                    .get(&(endpoint.id, Box::from(id.as_str())))
                    .map(|(_, at)| *at)
            })
            .collect()
    }

    /// Compares what `endpoint` answered 2xx with the `expected` ids.
    pub fn audit(&self, endpoint: &Endpoint, expected: &[String]) -> Audit {
        let state = lock(&self.shared.state);
        let mut audit = Audit {
            expected: expected.len(),
            ..Audit::default()
        };
        if let Some(e) = state.endpoints.get(endpoint.id) {
            audit.bad_signatures = e.bad_signatures;
            audit.refused = e.refused;
        }
        for id in expected {
            match state.receipts.get(&(endpoint.id, Box::from(id.as_str()))) {
                None => audit.missing += 1,
                Some((1, _)) => audit.exactly_once += 1,
                Some(_) => audit.duplicated += 1,
            }
        }
        let seen = state.receipts.keys().filter(|(e, _)| *e == endpoint.id);
        audit.unexpected = seen.count().saturating_sub(expected.len() - audit.missing);
        audit
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Locks, shrugging off poisoning: counters stay meaningful after a panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(shared.clone(), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn reply(status: StatusCode) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    Ok(response)
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(id) = req
        .uri()
        .path()
        .strip_prefix("/e/")
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return reply(StatusCode::NOT_FOUND);
    };
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let signature = header("x-signature");
    let message_id = header("x-sluice-message-id");
    let Ok(body) = Limited::new(req.into_body(), BODY_CAP).collect().await else {
        return reply(StatusCode::PAYLOAD_TOO_LARGE);
    };
    let body = body.to_bytes();
    let mut gate = shared.gate.subscribe();
    let opened = tokio::time::timeout(GATE_HOLD, gate.wait_for(|open| *open))
        .await
        .is_ok();

    let (mode, by_person) = lock(&shared.state)
        .endpoints
        .get(id)
        .map_or((None, false), |e| (e.mode, e.by_person));
    let refuse = match mode {
        None => return reply(StatusCode::NOT_FOUND),
        Some(_) if !opened => true,
        Some(Mode::Ok) => false,
        Some(Mode::Flaky) => rand::random::<bool>(),
        Some(Mode::Unavailable | Mode::Hang) => true,
    };
    if refuse {
        if let Some(endpoint) = lock(&shared.state).endpoints.get_mut(id) {
            endpoint.refused += 1;
        }
        if mode == Some(Mode::Hang) {
            std::future::pending::<()>().await;
        }
        return reply(StatusCode::SERVICE_UNAVAILABLE);
    }

    let genuine = signature.is_some_and(|s| sluice_signing::verify(&shared.secret, &body, &s))
        && message_id
            .as_deref()
            .is_some_and(|m| carries_message_id(&body, m));
    let now = Instant::now();
    let mut state = lock(&shared.state);
    if let Some(endpoint) = state.endpoints.get_mut(id) {
        endpoint.ok += 1;
        endpoint.bad_signatures += u64::from(!genuine);
    }
    let key = if by_person {
        (id, Box::from(person_key(&body)))
    } else {
        (id, Box::from(message_id.unwrap_or_default()))
    };
    state.receipts.entry(key).or_insert((0, now)).0 += 1;
    drop(state);
    reply(StatusCode::OK)
}

/// `userId|traits` of an identify body (traits as compact JSON), e.g.
/// `user-000001|{"buyers":true}`.
pub fn person_key(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let user = v["userId"].as_str().unwrap_or_default();
    format!("{user}|{}", v["traits"])
}

/// Whether the JSON body names `message_id` as its `messageId` (the body is
/// rendered by Sluice without spaces, per `JSON.stringify`).
fn carries_message_id(body: &[u8], message_id: &str) -> bool {
    let needle = format!("\"messageId\":\"{message_id}\"");
    body.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_message_id_in_a_compact_body() {
        let body = br#"{"version":1,"type":"track","messageId":"m-1","userId":"u"}"#;
        assert!(carries_message_id(body, "m-1"));
        assert!(!carries_message_id(body, "m-2"));
    }
}
