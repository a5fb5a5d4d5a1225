//! The per-connection service: hands each request to the application and
//! keeps the connection's bookkeeping.
//!
//! It passes the peer address on to the application, marks the connection busy
//! while the request is handled, and says `Connection: close` on a response
//! when the request body was not read to its end (an early refusal) or the
//! server is draining: hyper would otherwise close such a connection after
//! the response without warning, and the client's next request on it would
//! fail.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, Request, Response};
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;

use super::conns::{ConnState, Phase};

#[derive(Clone)]
pub struct ConnService {
    pub app: sluice_api::App,
    pub peer: SocketAddr,
    pub state: Arc<ConnState>,
    pub draining: Arc<AtomicBool>,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.state.set(Phase::Busy);
        let (parts, body) = req.into_parts();
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
