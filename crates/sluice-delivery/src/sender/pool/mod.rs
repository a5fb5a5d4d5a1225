//! Keep-alive connections, each HTTP/1 one driven by the task that sends on
//! it.
//!
//! Why not hyper-util's pooled client: that client runs every connection
//! as a task of its own, so each exchange crosses tasks twice (the request
//! through a channel to the connection's task, the response back through
//! another) and goes through its pool's checkout bookkeeping. Draining a
//! backlog, that layer took about 14 % of the delivery workers' samples
//! (BENCHMARKS.md, "Measured choices"). Here a send takes an idle
//! connection, writes the request and reads the answer by polling the
//! connection itself, then puts it back.
//!
//! - `conn`: one connection, HTTP/1 (driven by its sender) or HTTP/2.
//!
//! # Invariants
//! - **A connection known closed is never written to.** An idle HTTP/1
//!   connection is polled once before reuse: one whose peer hung up (its
//!   FIN read, or an error) ends there and is dropped. A request the
//!   connection refused before writing it (`try_send_request` hands it
//!   back) is sent once more on a fresh connection, as hyper-util does.
//! - **Only a connection whose last answer was read to its end is kept**,
//!   at most `max_idle` per host, for at most `idle_timeout` (checked at
//!   checkout and by a sweep every third of it).
//! - **HTTP/2 when the receiver picks it by ALPN**: one connection per
//!   host, shared by all sends, driven by its own task as hyper requires.
//!   Sends that reach a new host together may each open one before the
//!   first is shared (hyper-util made them wait for a single connect); the
//!   extras close when their sends end.
//! - The connector is the caller's: the guarded resolver, the connect
//!   timeout and TLS are exactly those of every other send.
//!
//! # What the caller bounds
//! Nothing here has a timer of its own: the sender's timeout wraps the whole
//! exchange (connect, request, capped body read). A timed-out exchange drops
//! its connection, which closes it.

mod conn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HOST;
use http::uri::{Authority, Scheme};
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

use super::resolver::GuardedResolver;
use conn::{H1, H2};

/// The connector every connection is made with.
pub(super) type Connector = HttpsConnector<HttpConnector<GuardedResolver>>;

/// Where a connection goes: connections are shared per scheme and host.
type Key = (Scheme, Authority);

/// An answer whose body was read, up to the cap.
pub(super) struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Why an exchange produced no answer.
#[derive(Debug)]
pub(super) enum PoolError {
    /// No connection: resolving (and the network guard), connecting, TLS,
    /// the HTTP handshake.
    Connect(Box<dyn std::error::Error + Send + Sync>),
    /// The connection failed during the exchange.
    Http(hyper::Error),
    /// The target has no scheme or host.
    Target,
}

/// The connections to every host one client reaches.
pub(super) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    connector: Connector,
    max_idle: usize,
    idle_timeout: Duration,
    hosts: Mutex<Hosts>,
}

#[derive(Default)]
struct Hosts {
    idle: HashMap<Key, Vec<H1>>,
    h2: HashMap<Key, H2>,
    /// Whether the sweeping task runs (started with the first idle entry).
    sweeping: bool,
}

impl Pool {
    pub(super) fn new(connector: Connector, max_idle: usize, idle_timeout: Duration) -> Self {
        Pool {
            shared: Arc::new(Shared {
                connector,
                max_idle,
                idle_timeout,
                hosts: Mutex::new(Hosts::default()),
            }),
        }
    }

    /// Sends `request` (its target absolute) and reads at most `cap` bytes
    /// of the answer's body.
    pub(super) async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
        cap: usize,
    ) -> Result<Reply, PoolError> {
        let key = key_of(request.uri()).ok_or(PoolError::Target)?;
        if let Some(h2) = self.shared.h2_for(&key) {
            return Box::pin(self.over_h2(&key, h2, request, cap)).await;
        }
        let (mut h1, reused) = match self.shared.checkout(&key).await {
            Some(h1) => (h1, true),
            None => match self.connect(&key).await? {
                Fresh::H1(h1) => (h1, false),
                Fresh::H2(h2) => return Box::pin(self.over_h2(&key, h2, request, cap)).await,
            },
        };
        let response = match h1.send(h1_form(request, h1.host())).await {
            Ok(response) => response,
            // Refused unwritten by a kept connection: one more try on a
            // fresh one (unless the host has moved to HTTP/2 meanwhile).
            Err((error, Some(request))) if reused => {
                tracing::trace!(%error, "kept connection refused the request; retrying");
                h1 = match self.connect(&key).await? {
                    Fresh::H1(h1) => h1,
                    Fresh::H2(_) => return Err(PoolError::Http(error)),
                };
                h1.send(request)
                    .await
                    .map_err(|(e, _)| PoolError::Http(e))?
            }
            Err((error, _)) => return Err(PoolError::Http(error)),
        };
        let (reply, ended) = h1.read(response, cap).await;
        if ended {
            self.shared.checkin(key, h1);
        }
        Ok(reply)
    }

    async fn over_h2(
        &self,
        key: &Key,
        mut h2: H2,
        request: Request<Full<Bytes>>,
        cap: usize,
    ) -> Result<Reply, PoolError> {
        match h2.exchange(request, cap).await {
            Ok(reply) => Ok(reply),
            Err(e) => {
                if h2.is_closed() {
                    self.shared.forget_h2(key);
                }
                Err(PoolError::Http(e))
            }
        }
    }

    async fn connect(&self, key: &Key) -> Result<Fresh, PoolError> {
        let target = Uri::builder()
            .scheme(key.0.clone())
            .authority(key.1.clone())
            .path_and_query("/")
            .build()
            .map_err(|_| PoolError::Target)?;
        // Boxed, as is the HTTP/2 path: both are rare, and their futures
        // would otherwise make every send's future several times larger.
        let fresh = Box::pin(conn::connect(self.shared.connector.clone(), key, target)).await?;
        if let Fresh::H2(h2) = &fresh {
            self.shared.keep_h2(key.clone(), h2.clone());
        }
        Ok(fresh)
    }
}

/// A new connection, by the protocol the receiver picked.
enum Fresh {
    H1(H1),
    H2(H2),
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Hosts> {
        self.hosts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn h2_for(&self, key: &Key) -> Option<H2> {
        let mut hosts = self.lock();
        let h2 = hosts.h2.get(key)?;
        if h2.is_closed() {
            hosts.h2.remove(key);
            return None;
        }
        Some(h2.clone())
    }

    fn keep_h2(&self, key: Key, h2: H2) {
        self.lock().h2.insert(key, h2);
    }

    fn forget_h2(&self, key: &Key) {
        let mut hosts = self.lock();
        if hosts.h2.get(key).is_some_and(H2::is_closed) {
            hosts.h2.remove(key);
        }
    }

    /// The most recently used idle connection to `key` that is still open.
    async fn checkout(&self, key: &Key) -> Option<H1> {
        loop {
            let mut h1 = self.lock().idle.get_mut(key)?.pop()?;
            if h1.idle_at(Instant::now()) < self.idle_timeout && h1.usable().await {
                return Some(h1);
            }
        }
    }

    /// Keeps `h1` for the next send to `key`, unless the host already has
    /// `max_idle` idle connections (then it is closed).
    fn checkin(self: &Arc<Self>, key: Key, mut h1: H1) {
        h1.mark_idle();
        let mut hosts = self.lock();
        let list = hosts.idle.entry(key).or_default();
        let surplus = if list.len() < self.max_idle {
            list.push(h1);
            None
        } else {
            Some(h1)
        };
        let start = !std::mem::replace(&mut hosts.sweeping, true);
        drop(hosts);
        drop(surplus);
        if start {
            self.start_sweeping();
        }
    }

    /// Closes idle connections past `idle_timeout`, every third of it,
    /// while the pool exists.
    fn start_sweeping(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Shared> = Arc::downgrade(self);
        let every = (self.idle_timeout / 3).max(Duration::from_millis(10));
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(shared) = weak.upgrade() else { return };
                shared.sweep(Instant::now());
            }
        });
    }

    fn sweep(&self, now: Instant) {
        let mut expired = Vec::new();
        let mut hosts = self.lock();
        for list in hosts.idle.values_mut() {
            let (keep, old): (Vec<_>, Vec<_>) = std::mem::take(list)
                .into_iter()
                .partition(|h1| h1.idle_at(now) < self.idle_timeout);
            *list = keep;
            expired.extend(old);
        }
        hosts.idle.retain(|_, list| !list.is_empty());
        hosts.h2.retain(|_, h2| !h2.is_closed());
        drop(hosts);
        drop(expired);
    }
}

fn key_of(uri: &Uri) -> Option<Key> {
    Some((uri.scheme()?.clone(), uri.authority()?.clone()))
}

/// The `Host` header hyper-util's client sends to `key`: the port only
/// when it is not the scheme's default.
fn host_header(key: &Key) -> Option<HeaderValue> {
    let (scheme, authority) = key;
    let host = authority.host();
    let default = if *scheme == Scheme::HTTPS { 443 } else { 80 };
    match authority.port_u16() {
        Some(port) if port != default => HeaderValue::from_str(&format!("{host}:{port}")).ok(),
        _ => HeaderValue::from_str(host).ok(),
    }
}

/// An HTTP/1 request as hyper-util's client sends it: with `host` unless
/// the request names its own, and the target in origin form.
fn h1_form(mut request: Request<Full<Bytes>>, host: Option<&HeaderValue>) -> Request<Full<Bytes>> {
    if let Some(host) = host {
        request
            .headers_mut()
            .entry(HOST)
            .or_insert_with(|| host.clone());
    }
    let target = match request.uri().path_and_query() {
        Some(path) if path.as_str() != "/" => {
            let mut parts = http::uri::Parts::default();
            parts.path_and_query = Some(path.clone());
            Uri::from_parts(parts).unwrap_or_default()
        }
        _ => Uri::default(),
    };
    *request.uri_mut() = target;
    request
}

#[cfg(test)]
mod tests;
