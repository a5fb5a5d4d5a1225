//! HTTP clients: the shared one, and one per distinct destination CA bundle.
//!
//! A destination's `caBundle` adds roots for that destination only, so it
//! gets its own client (its own connection pool). Clients are cached by the
//! bundle's exact text: destinations that share a bundle share a client,
//! and an edited bundle gets a fresh client. Every client has the same
//! guarded resolver, connect timeout and pool settings as the shared one,
//! so the network rules apply whatever the bundle. Only CA certificates are
//! trusted (see `sluice_outbound::ca`): a self-signed leaf never becomes a
//! root.
//!
//! Why hyper's connections under a pool of Sluice's own rather than a
//! higher-level client: a webhook send needs a kept-alive connection,
//! verified TLS and the guarded resolver, and nothing else. Redirects are
//! never followed, no proxy is used and the sender already bounds each
//! exchange with one timeout. A general-purpose client layers redirect
//! tracking, retries and its own timers over its pool, and paid for them on
//! every send: about a third of the delivery workers' time when draining a
//! backlog (BENCHMARKS.md, "Measured choices"). Why not hyper-util's pool
//! either: see `pool`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_rustls::HttpsConnectorBuilder;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::TransportError;

use super::Failure;
use super::pool::{Connector, Pool};
use super::resolver::GuardedResolver;

/// Bundles cached at most; beyond it the cache starts over (a rebuild
/// costs one TLS config, and keeps a churn of edits from growing memory).
const MAX_CACHED: usize = 256;

/// Idle keep-alive connections are closed after this long.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// Idle time before the first TCP keepalive probe, and between probes.
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);

pub(super) struct Clients {
    shared: Arc<Pool>,
    resolver: GuardedResolver,
    timeout: Duration,
    pool_per_host: usize,
    /// The operator's process-wide extra roots, trusted by every client.
    global_roots: Vec<CertificateDer<'static>>,
    by_bundle: Mutex<HashMap<String, Arc<Pool>>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").finish_non_exhaustive()
    }
}

impl Clients {
    pub(super) fn new(
        config: &DeliveryConfig,
        resolver: GuardedResolver,
    ) -> Result<Self, DeliveryError> {
        let global_roots = match &config.extra_ca_file {
            Some(path) => read_ca_file(path)?,
            None => Vec::new(),
        };
        let shared = build(
            &resolver,
            config.timeout,
            config.concurrency_per_destination,
            &global_roots,
        )
        .map_err(|e| DeliveryError::Client(e.to_string()))?;
        Ok(Self {
            shared: Arc::new(shared),
            resolver,
            timeout: config.timeout,
            pool_per_host: config.concurrency_per_destination,
            global_roots,
            by_bundle: Mutex::new(HashMap::new()),
        })
    }

    /// The client for a destination with `bundle` (none: the shared one).
    pub(super) fn get(&self, bundle: Option<&str>) -> Result<Arc<Pool>, Failure> {
        let Some(bundle) = bundle.filter(|b| !b.trim().is_empty()) else {
            return Ok(self.shared.clone());
        };
        let mut cache = self
            .by_bundle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = cache.get(bundle) {
            return Ok(client.clone());
        }
        let invalid = |why: String| Failure {
            kind: TransportError::InvalidRequest,
            message: format!("destination CA bundle unusable: {why}"),
        };
        let certs =
            sluice_outbound::ca::parse_bundle(bundle).map_err(|e| invalid(e.to_string()))?;
        let roots: Vec<_> = self.global_roots.iter().cloned().chain(certs).collect();
        let client = build(&self.resolver, self.timeout, self.pool_per_host, &roots)
            .map(Arc::new)
            .map_err(|e| invalid(e.to_string()))?;
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(bundle.to_owned(), client.clone());
        Ok(client)
    }
}

/// Standard web PKI roots plus `extra`; HTTP/1.1 and HTTP/2 (by ALPN),
/// a connect timeout, keep-alive pooling, and the guarded resolver.
fn build(
    resolver: &GuardedResolver,
    timeout: Duration,
    pool_per_host: usize,
    extra: &[CertificateDer<'static>],
) -> Result<Pool, rustls::Error> {
    let connector = connector(resolver, timeout, extra)?;
    Ok(Pool::new(connector, pool_per_host, POOL_IDLE))
}

/// How every connection is made: the guarded resolver, a connect timeout,
/// TCP keepalive, and TLS with the web PKI roots plus `extra`, offering
/// HTTP/2 and HTTP/1.1 by ALPN.
pub(super) fn connector(
    resolver: &GuardedResolver,
    timeout: Duration,
    extra: &[CertificateDer<'static>],
) -> Result<Connector, rustls::Error> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in extra {
        roots.add(cert.clone())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new_with_resolver(resolver.clone());
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeout));
    // TCP keepalive probes find a pooled connection whose peer vanished
    // without a FIN (a receiver's host rebooted, a NAT forgot the flow).
    http.set_keepalive(Some(TCP_KEEPALIVE));
    http.set_keepalive_interval(Some(TCP_KEEPALIVE));
    http.set_keepalive_retries(Some(3));
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http))
}

/// Every certificate in the operator's PEM file (`--extra-ca-file`).
fn read_ca_file(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, DeliveryError> {
    let pem = std::fs::read(path).map_err(|source| DeliveryError::CaFile {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| DeliveryError::CaBundle {
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no certificates found".into()));
    }
    Ok(certs)
}
