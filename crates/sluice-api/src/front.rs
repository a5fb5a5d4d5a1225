//! What every request passes before its handler: a credential (the admin
//! token or an API token, see [`crate::principal`]) on every path under the
//! admin prefix, then the request counter by matched route and status
//! (which counts the refusals too). The [`crate::principal::Principal`]
//! found goes on the request for the admin router's role check.
//!
//! One tower service rather than two `from_fn` middlewares: a `from_fn`
//! layer clones the whole service stack under it for every request (its
//! `Next` owns one), and in a profile of single `/v1/track` calls those
//! clones of the router's route, CORS and middleware stack took about 4 %
//! of the request CPU (BENCHMARKS.md, "Measured choices"). This one calls the
//! inner service in place, as tower-http's layers do; axum's routes are always
//! ready, and readiness is passed through regardless. Only an admin call,
//! whose credential may need a store read first, takes a clone of the inner
//! service into its future.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::AppState;
use crate::admin;
use crate::metrics::RequestLabels;
use crate::principal::authenticate;

/// Wraps every route (and the fallbacks) in a [`Front`].
#[derive(Clone)]
pub struct FrontLayer {
    app: Arc<AppState>,
}

impl FrontLayer {
    pub fn new(app: Arc<AppState>) -> Self {
        FrontLayer { app }
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front {
            inner,
            app: Arc::clone(&self.app),
        }
    }
}

/// See the module docs.
#[derive(Clone)]
pub struct Front<S> {
    inner: S,
    app: Arc<AppState>,
}

impl<S> Service<Request> for Front<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let path = request
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
        let start = Instant::now();
        let app = Arc::clone(&self.app);
        if !admin::is_admin_path(&request) {
            let handled = self.inner.call(request);
            return Box::pin(async move {
                let response = handled.await?;
                count(&app, path, response.status().as_u16(), start);
                Ok(response)
            });
        }
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let response = match authenticate(&app, request.headers()).await {
                Ok(principal) => {
                    request.extensions_mut().insert(principal);
                    inner.call(request).await?
                }
                Err(refused) => refused.into_response(),
            };
            count(&app, path, response.status().as_u16(), start);
            Ok(response)
        })
    }
}

/// Counts one answered request by route pattern and status, and logs it at
/// debug level.
pub(crate) fn count(app: &AppState, path: String, status: u16, start: Instant) {
    let labels = RequestLabels { path, status };
    app.metrics.requests.get_or_create(&labels).inc();
    tracing::debug!(
        status,
        path = %labels.path,
        elapsed_us = start.elapsed().as_micros() as u64,
        "request"
    );
}
