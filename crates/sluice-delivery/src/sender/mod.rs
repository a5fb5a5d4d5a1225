//! The HTTP side: one shared client (keep-alive pool, verified TLS, no
//! redirects, no proxies, a resolver that refuses blocked networks), one
//! POST per URL, all URLs of a delivery at once.
//!
//! - `headers`: the request headers of one URL.
//! - [`resolver`]: name resolution filtered by the [`NetworkPolicy`].
//! - `errors`: transport errors → class and a secret-free message.

mod errors;
mod headers;
pub mod resolver;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use reqwest::header::RETRY_AFTER;
use sluice_outbound::mask::mask_url;
use sluice_outbound::{Blocked, NetworkPolicy};
use sluice_store::{Attempt, WebhookUrl};

use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::{
    Class, TransportError, UrlVerdict, classify_error, classify_status, parse_retry_after,
};

pub use headers::{
    ATTEMPT_HEADER, MESSAGE_ID_HEADER, SIGNATURE_HEADER, USER_AGENT, build as build_headers,
};
use resolver::{GuardedResolver, Lookup, SystemLookup};

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
}

/// One URL's attempt: the log row and what the policy makes of it.
#[derive(Debug, Clone)]
pub struct UrlResult {
    pub attempt: Attempt,
    pub verdict: UrlVerdict,
}

/// Sends webhook requests. Cheap to share: the client pools connections.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    timeout: Duration,
    body_cap: usize,
    policy: NetworkPolicy,
}

impl Sender {
    /// Builds the client: standard web PKI roots plus the optional extra CA
    /// bundle, a total per-request timeout, redirects disabled, and the
    /// system resolver behind the network guard.
    pub fn new(config: &DeliveryConfig) -> Result<Self, DeliveryError> {
        Self::with_lookup(config, Arc::new(SystemLookup))
    }

    /// [`Sender::new`] with another name resolver behind the guard (tests
    /// use it to play a DNS server whose answers change).
    pub fn with_lookup(
        config: &DeliveryConfig,
        lookup: Arc<dyn Lookup>,
    ) -> Result<Self, DeliveryError> {
        let resolver = GuardedResolver::new(lookup, config.network.clone());
        let mut builder = reqwest::Client::builder()
            .dns_resolver(Arc::new(resolver))
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(config.concurrency_per_destination)
            .no_proxy()
            .use_rustls_tls();
        if let Some(path) = &config.extra_ca_file {
            let pem = std::fs::read(path).map_err(|source| DeliveryError::CaFile {
                path: path.clone(),
                source,
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                DeliveryError::CaBundle {
                    path: path.clone(),
                    reason: e.to_string(),
                }
            })?;
            if certs.is_empty() {
                return Err(DeliveryError::CaBundle {
                    path: path.clone(),
                    reason: "no certificates found".into(),
                });
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|e| DeliveryError::Client(e.to_string()))?;
        Ok(Self {
            client,
            timeout: config.timeout,
            body_cap: config.response_body_cap,
            policy: config.network.clone(),
        })
    }

    /// Posts `job` to every URL concurrently; results are in URL order.
    pub async fn send_all(&self, urls: &[WebhookUrl], job: &Job) -> Vec<UrlResult> {
        futures::future::join_all(urls.iter().map(|url| self.send_one(url, job))).await
    }

    /// Posts `job` to one URL and never fails: every outcome is a result.
    pub async fn send_one(&self, url: &WebhookUrl, job: &Job) -> UrlResult {
        let at = Utc::now();
        let started = Instant::now();
        let outcome = match self.literal_host(&url.url).and(headers::build(url, job)) {
            Ok(headers) => {
                let request = self.exchange(&url.url, headers, job.body.clone());
                match tokio::time::timeout(self.timeout, request).await {
                    Ok(result) => result,
                    Err(_) => Err(Failure::timeout(self.timeout)),
                }
            }
            Err(failure) => Err(failure),
        };
        let shown_url = mask_url(&url.url);
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
        let verdict = match outcome {
            Ok(answer) => {
                attempt.status = Some(answer.status);
                attempt.response = answer.body;
                let class = classify_status(answer.status);
                let note = if (300..400).contains(&answer.status) {
                    " (redirects are not followed)"
                } else {
                    ""
                };
                UrlVerdict {
                    class,
                    retry_after: answer.retry_after.filter(|_| class == Class::Retryable),
                    summary: format!("{shown_url}: HTTP {}{note}", answer.status),
                }
            }
            Err(failure) => {
                let summary = format!("{shown_url}: {}", failure.message);
                attempt.error = Some(failure.message);
                UrlVerdict {
                    class: classify_error(failure.kind),
                    retry_after: None,
                    summary,
                }
            }
        };
        UrlResult { attempt, verdict }
    }

    /// Refuses a URL whose host is an IP literal in a blocked network:
    /// such hosts never reach the resolver, so they are checked here.
    fn literal_host(&self, url: &str) -> Result<(), Failure> {
        let parsed = reqwest::Url::parse(url).map_err(|_| Failure {
            kind: TransportError::InvalidRequest,
            message: "invalid URL".to_owned(),
        })?;
        match parsed.host() {
            Some(host) => self.policy.check_host(&host).map_err(Failure::blocked),
            None => Ok(()),
        }
    }

    /// The request and a capped read of the response.
    async fn exchange(
        &self,
        url: &str,
        headers: reqwest::header::HeaderMap,
        body: Bytes,
    ) -> Result<Answer, Failure> {
        let mut response = self
            .client
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::from_reqwest(&e, self.timeout))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let mut kept: Vec<u8> = Vec::new();
        while kept.len() < self.body_cap {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.body_cap - kept.len();
                    kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                // The answer must be complete in time; a late body is a timeout.
                Err(e) if e.is_timeout() => return Err(Failure::timeout(self.timeout)),
                // The status arrived; a broken body does not change its meaning.
                Err(_) => break,
            }
        }
        let body = (!kept.is_empty()).then(|| String::from_utf8_lossy(&kept).into_owned());
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }
}

/// A response that arrived in time.
struct Answer {
    status: u16,
    retry_after: Option<Duration>,
    body: Option<String>,
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
