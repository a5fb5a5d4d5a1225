//! A real local webhook endpoint for black-box tests.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::reply::Reply;
use crate::tls;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: HeaderMap,
    /// `HTTP/1.1`, or `HTTP/2` when the client took the offer of a
    /// [`Receiver::start_tls_h2`] receiver.
    pub version: http::Version,
    /// The raw body bytes, exactly as received.
    pub body: Bytes,
    pub arrived: Instant,
}

impl RecordedRequest {
    /// A header's value as text, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A scripted HTTP or HTTPS endpoint on `127.0.0.1`, stopped when dropped.
pub struct Receiver {
    addr: SocketAddr,
    tls: bool,
    cert_pem: Option<String>,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

struct Shared {
    requests: Mutex<Vec<RecordedRequest>>,
    script: Mutex<(VecDeque<Reply>, Reply)>,
    /// `(header, value, reply)`: answers that take precedence.
    by_header: Mutex<Vec<(String, String, Reply)>>,
    count: watch::Sender<usize>,
    tls_failures: AtomicUsize,
}

impl Receiver {
    /// Starts a plain HTTP receiver on an ephemeral port; it answers 200.
    pub async fn start() -> Receiver {
        Self::spawn(None).await
    }

    /// Starts an HTTPS receiver with a freshly generated self-signed
    /// certificate, which verifying clients must reject.
    pub async fn start_tls() -> Receiver {
        Self::spawn(Some(tls::self_signed())).await
    }

    /// Starts an HTTPS receiver whose certificate a freshly generated
    /// private CA issued; [`Receiver::cert_pem`] is that CA's certificate.
    pub async fn start_tls_private_ca() -> Receiver {
        Self::spawn(Some(tls::private_ca())).await
    }

    /// [`Receiver::start_tls_private_ca`] offering HTTP/2 by ALPN; it
    /// serves HTTP/2 to clients that accept, HTTP/1.1 to the others.
    pub async fn start_tls_h2() -> Receiver {
        Self::spawn(Some(tls::private_ca_offering_h2())).await
    }

    async fn spawn(tls: Option<tls::SelfSigned>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let addr = listener.local_addr().expect("receiver address");
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            script: Mutex::new((VecDeque::new(), Reply::default())),
            by_header: Mutex::new(Vec::new()),
            count: watch::Sender::new(0),
            tls_failures: AtomicUsize::new(0),
        });
        let (acceptor, cert_pem) = match tls {
            Some(t) => (Some(t.acceptor), Some(t.cert_pem)),
            None => (None, None),
        };
        let server = tokio::spawn(accept_loop(listener, acceptor.clone(), shared.clone()));
        Receiver {
            addr,
            tls: acceptor.is_some(),
            cert_pem,
            shared,
            server,
        }
    }

    /// The endpoint URL, `http(s)://127.0.0.1:<port>/hook`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/hook", self.addr)
    }

    /// The certificate (PEM) a client must trust to reach a TLS receiver:
    /// its own self-signed one, or its private CA.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// TLS handshakes that failed (for example, the client rejected the certificate).
    pub fn tls_failures(&self) -> usize {
        self.shared.tls_failures.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` requests arrived and returns them all.
    ///
    /// # Panics
    /// When fewer than `n` arrive within `timeout`.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        match self.try_wait_for(n, timeout).await {
            Some(got) => got,
            None => panic!(
                "expected {n} requests at {} within {timeout:?}, got {}",
                self.url(),
                self.requests().len()
            ),
        }
    }

    /// Every request so far once at least `n` arrived, or `None` when fewer
    /// arrive within `timeout`.
    pub async fn try_wait_for(&self, n: usize, timeout: Duration) -> Option<Vec<RecordedRequest>> {
        let mut count = self.shared.count.subscribe();
        let arrived = tokio::time::timeout(timeout, count.wait_for(|c| *c >= n)).await;
        matches!(arrived, Ok(Ok(_))).then(|| self.requests())
    }

    /// The answer used once the queue is empty.
    pub fn set_default(&self, reply: Reply) {
        lock(&self.shared.script).1 = reply;
    }

    /// Queues an answer for the next request that finds the queue non-empty.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.script).0.push_back(reply);
    }

    /// Answers every request whose `header` is `value` with `reply`, ahead
    /// of the queue and the default.
    pub fn reply_when(&self, header: &str, value: &str, reply: Reply) {
        lock(&self.shared.by_header).push((header.to_owned(), value.to_owned(), reply));
    }

    /// From now on, records requests and never answers them.
    pub fn hang(&self) {
        self.set_default(Reply::hang());
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection.
        self.server.abort();
    }
}

/// Locks, shrugging off poisoning: a panicking test thread must not hide
/// the requests from the assertion that reports it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn accept_loop(listener: TcpListener, tls: Option<TlsAcceptor>, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let shared = shared.clone();
        let tls = tls.clone();
        connections.spawn(async move {
            match tls {
                None => serve(stream, shared).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) if stream.get_ref().1.alpn_protocol() == Some(b"h2") => {
                        serve_h2(stream, shared).await;
                    }
                    Ok(stream) => serve(stream, shared).await,
                    Err(_) => {
                        shared.tls_failures.fetch_add(1, Ordering::SeqCst);
                    }
                },
            }
        });
    }
}

async fn serve<S>(stream: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(req, shared.clone()));
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn serve_h2<S>(stream: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(req, shared.clone()));
    let _ = http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        headers: parts.headers,
        version: parts.version,
        body,
        arrived: Instant::now(),
    };
    let chosen = lock(&shared.by_header)
        .iter()
        .find(|(name, value, _)| recorded.header(name) == Some(value.as_str()))
        .map(|(.., reply)| reply.clone());
    let n = {
        let mut requests = lock(&shared.requests);
        requests.push(recorded);
        requests.len()
    };
    shared.count.send_replace(n);
    let reply = chosen.unwrap_or_else(|| {
        let mut script = lock(&shared.script);
        let (queue, default) = &mut *script;
        queue.pop_front().unwrap_or_else(|| default.clone())
    });
    if reply.hang {
        std::future::pending::<()>().await;
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}
