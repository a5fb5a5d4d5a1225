//! One connection: HTTP/1, polled by whichever send holds it, or HTTP/2,
//! driven by a task of its own and shared.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper::client::conn::{http1, http2};
use hyper_rustls::MaybeHttpsStream;
use hyper_util::client::legacy::connect::Connection;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tower_service::Service;

use super::{Connector, Fresh, Key, PoolError, Reply, host_header};

type Io = MaybeHttpsStream<TokioIo<TcpStream>>;

/// Connects to `target` (the host of `key`) with the pool's connector and
/// speaks the protocol the receiver picked by ALPN.
pub(super) async fn connect(
    mut connector: Connector,
    key: &Key,
    target: Uri,
) -> Result<Fresh, PoolError> {
    poll_fn(|cx| connector.poll_ready(cx))
        .await
        .map_err(PoolError::Connect)?;
    let io = connector.call(target).await.map_err(PoolError::Connect)?;
    if io.connected().is_negotiated_h2() {
        let (send, conn) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(io)
            .await
            .map_err(|e| PoolError::Connect(Box::new(e)))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "HTTP/2 connection ended");
            }
        });
        return Ok(Fresh::H2(H2 { send }));
    }
    // A failed handshake sent no request: it counts as a connect error.
    let (send, conn) = http1::handshake(io)
        .await
        .map_err(|e| PoolError::Connect(Box::new(e)))?;
    Ok(Fresh::H1(H1 {
        send,
        conn: Box::pin(conn),
        closed: false,
        host: host_header(key),
        idle_since: Instant::now(),
    }))
}

/// An HTTP/1 connection. Nothing polls it but the send that holds it: the
/// request is written and the answer read inside that send's own polls.
pub(super) struct H1 {
    send: http1::SendRequest<Full<Bytes>>,
    /// Boxed: its state is some 1.8 KB, and an `H1` moves in and out of
    /// the idle list at every send.
    conn: Pin<Box<http1::Connection<Io, Full<Bytes>>>>,
    /// The connection future has finished: the peer closed it, or it failed.
    closed: bool,
    /// The `Host` header for its requests.
    host: Option<HeaderValue>,
    idle_since: Instant,
}

impl H1 {
    pub(super) fn host(&self) -> Option<&HeaderValue> {
        self.host.as_ref()
    }

    pub(super) fn idle_at(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.idle_since)
    }

    pub(super) fn mark_idle(&mut self) {
        self.idle_since = Instant::now();
    }

    /// Polls the connection once: false when it has ended (the peer hung
    /// up while it sat idle) or cannot take a request now.
    pub(super) async fn usable(&mut self) -> bool {
        poll_fn(|cx| {
            if !self.closed && self.conn.as_mut().poll(cx).is_ready() {
                self.closed = true;
            }
            Poll::Ready(!self.closed && matches!(self.send.poll_ready(cx), Poll::Ready(Ok(()))))
        })
        .await
    }

    /// Writes `request` and waits for the answer's head. On failure, the
    /// request comes back when the connection refused it unwritten.
    pub(super) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, (hyper::Error, Option<Request<Full<Bytes>>>)> {
        let sent = self.send.try_send_request(request);
        self.drive(sent).await.map_err(|mut e| {
            let request = e.take_message();
            (e.into_error(), request)
        })
    }

    /// Reads the answer's body, at most `cap` bytes of it. The flag says
    /// whether the body was read to its end and the connection is still
    /// open: only then can it carry another request.
    pub(super) async fn read(&mut self, response: Response<Incoming>, cap: usize) -> (Reply, bool) {
        let (parts, mut body) = response.into_parts();
        let mut kept = Capped::new(cap);
        let mut ended = body.is_end_stream();
        while !ended && !kept.full() {
            match self.drive(body.frame()).await {
                Some(Ok(frame)) => {
                    if let Some(chunk) = frame.data_ref() {
                        kept.push(chunk);
                    }
                    ended = body.is_end_stream();
                }
                None => ended = true,
                // The status arrived; a broken body does not change its
                // meaning, but the connection is not kept.
                Some(Err(_)) => break,
            }
        }
        let reply = Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: kept.bytes,
        };
        (reply, ended && !self.closed)
    }

    /// Awaits `fut` while polling the connection that feeds it.
    async fn drive<F: Future>(&mut self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            // The connection first: what it reads is then ready for `fut`
            // in the same poll. Once it has ended, whatever `fut` waits on
            // was answered or dropped with it.
            if !self.closed && self.conn.as_mut().poll(cx).is_ready() {
                self.closed = true;
            }
            fut.as_mut().poll(cx)
        })
        .await
    }
}

/// An HTTP/2 connection's sender; clones share the connection.
#[derive(Clone)]
pub(super) struct H2 {
    send: http2::SendRequest<Full<Bytes>>,
}

impl H2 {
    pub(super) fn is_closed(&self) -> bool {
        self.send.is_closed()
    }

    /// Sends `request` (its target absolute) and reads at most `cap` bytes
    /// of the answer's body.
    pub(super) async fn exchange(
        &mut self,
        request: Request<Full<Bytes>>,
        cap: usize,
    ) -> Result<Reply, hyper::Error> {
        self.send.ready().await?;
        let (parts, mut body) = self.send.send_request(request).await?.into_parts();
        let mut kept = Capped::new(cap);
        while !kept.full() {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(chunk) = frame.data_ref() {
                        kept.push(chunk);
                    }
                }
                None | Some(Err(_)) => break,
            }
        }
        Ok(Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: kept.bytes,
        })
    }
}

/// The first `cap` bytes of a body.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Capped {
            bytes: Vec::new(),
            cap,
        }
    }

    fn full(&self) -> bool {
        self.bytes.len() >= self.cap
    }

    fn push(&mut self, chunk: &Bytes) {
        let room = self.cap.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}
