//! Serving HTTP/1.1 connections ourselves, with the limits a public service
//! needs against clients that send slowly or not at all.
//!
//! - [`settings`]: the `[http]` and `[metrics]` configuration sections.
//! - [`conns`]: connection phases and the connection cap.
//! - [`io`]: phase tracking on reads; hyper's own refusals in the JSON shape.
//! - [`service`]: per-request bookkeeping (`ConnectInfo`, `Connection: close`).
//! - `listen`: [`bind`], a listener whose accept queue holds a burst of
//!   new connections.
//!
//! One task accepts; each connection runs in a task of its own beside a
//! watchdog that closes it when its request head takes longer than the head
//! timeout, when it stays idle longer than the keep-alive timeout, or when
//! the cap needs its place. The body deadline lives where bodies are read
//! (`sluice_api::body`). Accept errors (out of descriptors) are logged at
//! most once a minute and make the loop pause, never spin.
//!
//! Shutdown: stop accepting, close every connection not in a request, let
//! requests in progress finish (and so their commits) for up to the grace
//! period, then close whatever is left. A request cut off by the grace
//! period was never answered, so no acknowledged event is lost.

pub mod conns;
pub mod io;
mod listen;
pub mod service;
pub mod settings;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use sluice_api::App;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::conns::{Phase, Registration, Tracker};
use self::io::ShapedIo;
pub use self::listen::{ACCEPT_BACKLOG, bind};
use self::service::ConnService;

/// What the accept loop needs from the configuration.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub head_timeout: Duration,
    pub keep_alive_idle: Duration,
    pub max_connections: usize,
    pub max_head_bytes: usize,
    pub shutdown_grace: Duration,
}

/// The answer to a connection that finds every place taken by a request in
/// progress.
fn refusal() -> Vec<u8> {
    let body =
        r#"{"success":false,"code":"over_capacity","message":"too many connections; retry later"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` until `shutdown` completes, then drains as
/// described in the module documentation.
pub async fn serve(
    listener: TcpListener,
    app: App,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) {
    let tracker = Tracker::new(opts.max_connections);
    let draining = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .max_buf_size(opts.max_head_bytes)
        .header_read_timeout(None);
    let builder = Arc::new(builder);
    let opts = Arc::new(opts);
    let mut tasks = JoinSet::new();
    let mut errors = ErrorLog::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    match tracker.admit() {
                        Some(reg) => {
                            let conn = Connection {
                                app: app.clone(),
                                builder: builder.clone(),
                                opts: opts.clone(),
                                draining: draining.clone(),
                                stop: stop_rx.clone(),
                            };
                            tasks.spawn(conn.run(stream, peer, reg));
                        }
                        None => {
                            tasks.spawn(refuse(stream));
                        }
                    }
                }
                Err(e) => {
                    errors.record(&e);
                    // Out of descriptors: free one if some client is idle,
                    // and pause rather than spin on the same error.
                    tracker.evict_one();
                    tokio::select! {
                        _ = &mut shutdown => break,
                        _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                    }
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    draining.store(true, Ordering::Release);
    let _ = stop_tx.send(true);
    let open = tracker.open_count();
    tracing::info!(
        connections = open,
        grace_ms = opts.shutdown_grace.as_millis() as u64,
        "shutting down: no new connections; finishing requests in progress"
    );
    let drained = tokio::time::timeout(opts.shutdown_grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "shutdown grace period over: closing the connections still open"
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// Serves `app` (metrics) on a listener of its own with the same limits.
pub fn spawn_side_listener(
    listener: TcpListener,
    app: App,
    opts: ServeOptions,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(serve(listener, app, opts, crate::wait_for(stop)))
}

async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&refusal())).await;
}

struct Connection {
    app: App,
    builder: Arc<http1::Builder>,
    opts: Arc<ServeOptions>,
    draining: Arc<AtomicBool>,
    stop: watch::Receiver<bool>,
}

impl Connection {
    async fn run(mut self, stream: TcpStream, peer: SocketAddr, reg: Registration) {
        let state = reg.state.clone();
        let io = TokioIo::new(ShapedIo::new(stream, state.clone()));
        let service = ConnService {
            app: self.app.clone(),
            peer,
            state: state.clone(),
            draining: self.draining.clone(),
            max_head: self.opts.max_head_bytes,
        };
        let conn = self.builder.serve_connection(io, service);
        let mut conn = std::pin::pin!(conn);
        let head_ms = self.opts.head_timeout.as_millis() as u64;
        let idle_ms = self.opts.keep_alive_idle.as_millis() as u64;
        let tick = (self.opts.head_timeout.min(self.opts.keep_alive_idle) / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(1));
        let mut stopping = *self.stop.borrow();
        let mut watchdog = tokio::time::interval_at(tokio::time::Instant::now() + tick, tick);
        loop {
            if stopping && state.phase() != Phase::Busy {
                break;
            }
            tokio::select! {
                done = conn.as_mut() => {
                    if let Err(e) = done {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    break;
                }
                _ = state.evict.notified() => {
                    if state.phase() != Phase::Busy {
                        tracing::debug!(%peer, "closing an idle connection to make room");
                        break;
                    }
                }
                _ = watchdog.tick() => {
                    let age = state.age_ms();
                    match state.phase() {
                        Phase::Head if age >= head_ms => {
                            tracing::debug!(%peer, "request head timed out");
                            break;
                        }
                        Phase::Idle if age >= idle_ms => break,
                        _ => {}
                    }
                }
                changed = self.stop.changed(), if !stopping => {
                    if changed.is_err() || *self.stop.borrow() {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
        drop(reg);
    }
}

/// Accept errors, logged once a minute at most with how many were not.
#[derive(Default)]
struct ErrorLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl ErrorLog {
    fn record(&mut self, e: &std::io::Error) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(60))
        {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(
            error = %e,
            suppressed = self.suppressed,
            "accepting a connection failed (out of file descriptors?); pausing accepts briefly"
        );
        self.last = Some(now);
        self.suppressed = 0;
    }
}
