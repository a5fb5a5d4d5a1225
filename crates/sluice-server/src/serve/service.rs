//! The per-connection service: hands each request to the application and
//! keeps the connection's bookkeeping.
//!
//! It passes the peer address on to the application, marks the connection busy
//! while the request is handled, and says `Connection: close` on a response
//! when the request body was not read to its end (an early refusal) or the
//! server is draining: hyper would otherwise close such a connection after
//! the response without warning, and the client's next request on it would
//! fail.
//!
//! It also holds the request head to `http.max_head_bytes`. hyper refuses a
//! head that outgrows its read buffer while still incomplete, but a head
//! that arrives whole in one read may be larger than the buffer's nominal
//! size; so the head as parsed (request line and header fields) is measured
//! here too, and one over the limit is answered `431` like hyper's own.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, Request, Response, StatusCode};
use axum::response::IntoResponse;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;

use sluice_api::ApiError;

use super::conns::{ConnState, Phase};

#[derive(Clone)]
pub struct ConnService {
    pub app: sluice_api::App,
    pub peer: SocketAddr,
    pub state: Arc<ConnState>,
    pub draining: Arc<AtomicBool>,
    /// `http.max_head_bytes`.
    pub max_head: usize,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.state.set(Phase::Busy);
        let (parts, body) = req.into_parts();
        if head_len(&parts) > self.max_head {
            self.state.set(Phase::Idle);
            let mut res = ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                "the request head is too large or has too many headers",
            )
            .into_response();
            res.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            return Box::pin(std::future::ready(Ok(res)));
        }
        let finished = Arc::new(AtomicBool::new(body.is_end_stream()));
        let body = Body::new(Tracked {
            inner: body,
            finished: finished.clone(),
        });
        let req = Request::from_parts(parts, body);
        let app = self.app.clone();
        let peer = self.peer;
        let state = self.state.clone();
        let draining = self.draining.clone();
        Box::pin(async move {
            let mut res = app.handle(req, peer).await;
            if !finished.load(Ordering::Acquire) || draining.load(Ordering::Acquire) {
                res.headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            state.set(Phase::Idle);
            Ok(res)
        })
    }
}

/// The size of a parsed request head: its request line and header fields
/// as written without optional whitespace, so at most the size received.
fn head_len(parts: &axum::http::request::Parts) -> usize {
    let uri = &parts.uri;
    let target = uri.scheme_str().map_or(0, |s| s.len() + 3)
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.path_and_query().map_or(1, |p| p.as_str().len());
    let line = parts.method.as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let fields: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + ": ".len() + value.len() + "\r\n".len())
        .sum();
    line + fields + "\r\n".len()
}

/// A request body that records whether it was read to its end.
struct Tracked {
    inner: Incoming,
    finished: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.finished.store(true, Ordering::Release);
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
