//! The HTTP side: one shared client (plus one per destination CA bundle; keep-alive pool, verified TLS, no
//! redirects, no proxies, a resolver that refuses blocked networks), one
//! POST per URL, all URLs of a delivery at once.
//!
//! - `clients`: the shared client and per-destination-CA clients.
//! - `headers`: the request headers of one URL.
//! - [`resolver`]: name resolution filtered by the [`NetworkPolicy`].
//! - `errors`: transport errors → class and a secret-free message.
//! - `pool`: kept-alive connections, polled by the send that holds them.
//! - `urls`: webhook URLs parsed once, with their logged forms.

mod clients;
mod errors;
mod headers;
mod pool;
pub mod resolver;
mod urls;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use http::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::Full;
use sluice_outbound::{Blocked, Masker, NetworkPolicy, redact};
use sluice_store::{Attempt, Destination, WebhookSettings, WebhookUrl};

use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::{
    Class, TransportError, UrlVerdict, classify_error, classify_status, parse_retry_after,
};

use clients::Clients;
pub use headers::{
    ATTEMPT_HEADER, MESSAGE_ID_HEADER, SIGNATURE_HEADER, USER_AGENT, WEBHOOK_ID_HEADER,
    WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, build as build_headers,
};
use pool::Pool;
use resolver::{CachingLookup, GuardedResolver, Lookup, SystemLookup};
use urls::UrlCache;

/// One delivery attempt's request, the same for every URL of the destination.
#[derive(Debug, Clone)]
pub struct Job {
    pub delivery_id: i64,
    /// This attempt's number, 1-based (`X-Sluice-Attempt`).
    pub attempt: u32,
    pub message_id: String,
    /// The exact bytes sent and signed.
    pub body: Bytes,
    /// `X-Signature`, when the destination has a shared secret.
    pub signature: Option<String>,
    /// Standard Webhooks headers, when the destination opted in.
    pub standard: Option<StandardHeaders>,
    /// The destination the attempt is for: its signing secrets are hidden
    /// in a stored response should a receiver echo them (looked at only when
    /// a response body is kept). URL credentials and sensitive static
    /// headers come from the URL.
    pub destination: Option<Arc<Destination>>,
}

/// The three Standard Webhooks header values of one attempt.
#[derive(Debug, Clone)]
pub struct StandardHeaders {
    /// `webhook-id`: stable across retries of one delivery.
    pub id: String,
    /// `webhook-timestamp`: this attempt's time, Unix seconds.
    pub timestamp: i64,
    /// `webhook-signature`: one `v1,` entry per active secret.
    pub signature: String,
}

/// One URL's attempt: the log row and what the policy makes of it.
#[derive(Debug, Clone)]
pub struct UrlResult {
    pub attempt: Attempt,
    pub verdict: UrlVerdict,
    /// The URL's host alone, for the process log.
    pub host: String,
    /// What went wrong, for the process log (`None` on success): an HTTP
    /// status class (`http_5xx`…) or a transport error (`timeout`, `tls`…).
    pub error_kind: Option<&'static str>,
}

/// The host of `url` alone: no scheme, userinfo, port, path or query
/// (webhook tokens often live in the path).
pub fn host_of(url: &str) -> String {
    parsed_host(url::Url::parse(url).ok().as_ref())
}

/// [`host_of`] of a URL already parsed (`None`: it did not parse).
fn parsed_host(url: Option<&url::Url>) -> String {
    url.and_then(url::Url::host_str)
        .map_or_else(|| "(invalid URL)".to_owned(), str::to_owned)
}

/// Sends webhook requests. One per engine, shared behind an `Arc`: its
/// clients pool connections, and its URL cache is filled once.
#[derive(Debug)]
pub struct Sender {
    clients: Clients,
    urls: UrlCache,
    timeout: Duration,
    body_cap: usize,
    policy: NetworkPolicy,
    masker: Masker,
}

impl Sender {
    /// Builds the client: standard web PKI roots plus the optional extra CA
    /// bundle, a total per-request timeout, redirects disabled, and the
    /// system's name resolution (asynchronous, cached per host) behind the
    /// network guard.
    pub fn new(config: &DeliveryConfig) -> Result<Self, DeliveryError> {
        let system = SystemLookup::new().map_err(|e| DeliveryError::Client(e.to_string()))?;
        Self::with_lookup(config, Arc::new(CachingLookup::new(Arc::new(system))))
    }

    /// [`Sender::new`] with another name resolver behind the guard, used as
    /// given (tests use it to play a DNS server whose answers change).
    pub fn with_lookup(
        config: &DeliveryConfig,
        lookup: Arc<dyn Lookup>,
    ) -> Result<Self, DeliveryError> {
        let resolver = GuardedResolver::new(lookup, config.network.clone());
        Ok(Self {
            clients: Clients::new(config, resolver)?,
            urls: UrlCache::default(),
            timeout: config.timeout,
            body_cap: config.response_body_cap,
            policy: config.network.clone(),
            masker: config.masker.clone(),
        })
    }

    /// Posts `job` to every URL concurrently; results are in URL order.
    pub async fn send_all(&self, urls: &[WebhookUrl], job: &Job) -> Vec<UrlResult> {
        self.send_all_trusting(urls, None, job).await
    }

    /// [`Sender::send_all`] for a destination whose `ca_bundle` adds
    /// trusted roots for its URLs only.
    pub async fn send_all_trusting(
        &self,
        urls: &[WebhookUrl],
        ca_bundle: Option<&str>,
        job: &Job,
    ) -> Vec<UrlResult> {
        let client = self.clients.get(ca_bundle);
        if let [url] = urls {
            // The common case, without the join's bookkeeping.
            return vec![self.send_via(client, url, job).await];
        }
        futures::future::join_all(
            urls.iter()
                .map(|url| self.send_via(client.clone(), url, job)),
        )
        .await
    }

    /// Posts `job` to one URL and never fails: every outcome is a result.
    pub async fn send_one(&self, url: &WebhookUrl, job: &Job) -> UrlResult {
        self.send_via(self.clients.get(None), url, job).await
    }

    async fn send_via(
        &self,
        client: Result<Arc<Pool>, Failure>,
        url: &WebhookUrl,
        job: &Job,
    ) -> UrlResult {
        let at = Utc::now();
        let started = Instant::now();
        // Parsed once per URL text: the guard, the request, the log and the
        // host use it.
        let parsed = self.urls.get(&url.url);
        let ready = client.and_then(|client| {
            let target = self.literal_host(&parsed)?;
            let mut headers = headers::build(url, job)?;
            if let Some(auth) = &parsed.authorization
                && !headers.contains_key(AUTHORIZATION)
            {
                headers.insert(AUTHORIZATION, auth.clone());
            }
            Ok((client, target, headers))
        });
        let outcome = match ready {
            Ok((client, target, headers)) => {
                let request = self.exchange(&client, target, headers, job.body.clone());
                match tokio::time::timeout(self.timeout, request).await {
                    Ok(result) => result,
                    Err(_) => Err(Failure::timeout(self.timeout)),
                }
            }
            Err(failure) => Err(failure),
        };
        let shown_url = parsed.shown.clone();
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut attempt = Attempt {
            delivery_id: job.delivery_id,
            attempt: job.attempt,
            at,
            url: shown_url.clone(),
            status: None,
            error: None,
            latency_ms,
            response: None,
        };
        let mut error_kind = None;
        let verdict = match outcome {
            Ok(answer) => {
                attempt.status = Some(answer.status);
                attempt.response = answer
                    .body
                    .map(|body| self.hide_secrets(body, answer.cut, url, &parsed, job));
                let class = classify_status(answer.status);
                // Read only when no URL succeeded (the dead reason).
                let summary = if class == Class::Success {
                    String::new()
                } else {
                    let note = if (300..400).contains(&answer.status) {
                        " (redirects are not followed)"
                    } else {
                        ""
                    };
                    format!("{shown_url}: HTTP {}{note}", answer.status)
                };
                if class != Class::Success {
                    error_kind = Some(match answer.status {
                        500.. => "http_5xx",
                        400..=499 => "http_4xx",
                        _ => "http_other",
                    });
                }
                UrlVerdict {
                    class,
                    retry_after: answer.retry_after.filter(|_| class == Class::Retryable),
                    summary,
                }
            }
            Err(failure) => {
                error_kind = Some(failure.kind.label());
                let summary = format!("{shown_url}: {}", failure.message);
                attempt.error = Some(failure.message);
                UrlVerdict {
                    class: classify_error(failure.kind),
                    retry_after: None,
                    summary,
                }
            }
        };
        UrlResult {
            attempt,
            verdict,
            host: parsed.host.clone(),
            error_kind,
        }
    }

    /// Refuses a URL whose host is an IP literal in a blocked network:
    /// such hosts never reach the resolver, so they are checked here.
    /// Returns the request target.
    fn literal_host(&self, parsed: &urls::ParsedUrl) -> Result<Uri, Failure> {
        let invalid = || Failure {
            kind: TransportError::InvalidRequest,
            message: "invalid URL".to_owned(),
        };
        let url = parsed.url.as_ref().ok_or_else(invalid)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Failure {
                kind: TransportError::InvalidRequest,
                message: "URL scheme is not http or https".to_owned(),
            });
        }
        if let Some(host) = url.host() {
            self.policy.check_host(&host).map_err(Failure::blocked)?;
        }
        parsed.target.clone().ok_or_else(invalid)
    }

    /// The request and a capped read of the response.
    async fn exchange(
        &self,
        client: &Pool,
        target: Uri,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<Answer, Failure> {
        headers
            .entry(ACCEPT)
            .or_insert(HeaderValue::from_static("*/*"));
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = target;
        *request.headers_mut() = headers;
        let reply = client
            .exchange(request, self.body_cap)
            .await
            .map_err(|e| Failure::from_pool(&e, self.timeout))?;
        let status = reply.status;
        let retry_after = reply
            .headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let kept = reply.body;
        let cut = kept.len() >= self.body_cap;
        let body = (!kept.is_empty()).then(|| String::from_utf8_lossy(&kept).into_owned());
        Ok(Answer {
            status,
            retry_after,
            body,
            cut,
        })
    }

    /// The response snippet as the attempt log keeps it: every secret the
    /// receiver may have echoed (URL credentials, sensitive static header
    /// values, the destination's signing secrets) replaced by `****`.
    fn hide_secrets(
        &self,
        body: String,
        cut: bool,
        url: &WebhookUrl,
        parsed: &urls::ParsedUrl,
        job: &Job,
    ) -> String {
        let secrets: Vec<&str> = parsed
            .secrets
            .iter()
            .map(String::as_str)
            .chain(redact::sensitive_header_values(&self.masker, &url.headers))
            .chain(
                job.destination
                    .iter()
                    .flat_map(|d| signing_secrets(&d.settings)),
            )
            .collect();
        match redact::redact(&body, &secrets, cut) {
            Cow::Borrowed(_) => body,
            Cow::Owned(hidden) => hidden,
        }
    }
}

/// A destination's signing secrets: the shared secret, and each Standard
/// Webhooks secret whole and without its `whsec_` prefix (the base64 key a
/// receiver's code works with).
fn signing_secrets(settings: &WebhookSettings) -> impl Iterator<Item = &str> {
    let standard = settings.standard_webhooks.iter().flat_map(|s| {
        std::iter::once(&s.secret)
            .chain(s.previous_secret.as_ref())
            .flat_map(|secret| {
                std::iter::once(secret.as_str()).chain(secret.strip_prefix("whsec_"))
            })
    });
    settings
        .shared_secret
        .as_deref()
        .into_iter()
        .chain(standard)
}

/// A response that arrived in time.
struct Answer {
    status: u16,
    retry_after: Option<Duration>,
    body: Option<String>,
    /// The body went on past what was kept (`response_body_cap`).
    cut: bool,
}

impl Failure {
    fn blocked(blocked: Blocked) -> Self {
        Failure {
            kind: TransportError::Blocked,
            message: format!("blocked, request not sent: {blocked}"),
        }
    }
}

/// Why no usable response arrived.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: TransportError,
    /// Short and secret-free: it lands in the attempt log.
    pub message: String,
}
