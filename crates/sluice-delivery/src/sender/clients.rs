//! HTTP clients: the shared one, and one per distinct destination CA bundle.
//!
//! A destination's `caBundle` adds roots for that destination only, so it
//! gets its own client (its own connection pool). Clients are cached by the
//! bundle's exact text: destinations that share a bundle share a client,
//! and an edited bundle gets a fresh client. Every client has the same
//! guarded resolver, timeouts and no-redirect policy as the shared one, so
//! the network rules apply whatever the bundle. Only CA certificates are
//! trusted (see `sluice_outbound::ca`): a self-signed leaf never becomes a
//! root.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::TransportError;

use super::Failure;
use super::resolver::GuardedResolver;

/// Bundles cached at most; beyond it the cache starts over (a rebuild
/// costs one TLS config, and keeps a churn of edits from growing memory).
const MAX_CACHED: usize = 256;

pub(super) struct Clients {
    shared: reqwest::Client,
    resolver: Arc<GuardedResolver>,
    timeout: Duration,
    pool_per_host: usize,
    /// The operator's process-wide extra roots, trusted by every client.
    global_roots: Vec<reqwest::Certificate>,
    by_bundle: Mutex<HashMap<String, reqwest::Client>>,
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
        let mut clients = Self {
            shared: reqwest::Client::new(),
            resolver: Arc::new(resolver),
            timeout: config.timeout,
            pool_per_host: config.concurrency_per_destination,
            global_roots,
            by_bundle: Mutex::new(HashMap::new()),
        };
        clients.shared = clients
            .build(&[])
            .map_err(|e| DeliveryError::Client(e.to_string()))?;
        Ok(clients)
    }

    /// The client for a destination with `bundle` (none: the shared one).
    pub(super) fn get(&self, bundle: Option<&str>) -> Result<reqwest::Client, Failure> {
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
        let roots = certs
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(e.to_string()))?;
        let client = self.build(&roots).map_err(|e| invalid(e.to_string()))?;
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(bundle.to_owned(), client.clone());
        Ok(client)
    }

    /// Standard web PKI roots, the global extra roots and `extra`; a total
    /// per-request timeout, redirects disabled, no proxies, and the guarded
    /// resolver.
    fn build(&self, extra: &[reqwest::Certificate]) -> reqwest::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .dns_resolver(self.resolver.clone())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(self.pool_per_host)
            .no_proxy()
            .use_rustls_tls();
        for cert in self.global_roots.iter().chain(extra) {
            builder = builder.add_root_certificate(cert.clone());
        }
        builder.build()
    }
}

fn read_ca_file(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, DeliveryError> {
    let pem = std::fs::read(path).map_err(|source| DeliveryError::CaFile {
        path: path.to_path_buf(),
        source,
    })?;
    let certs =
        reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| DeliveryError::CaBundle {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(DeliveryError::CaBundle {
            path: path.to_path_buf(),
            reason: "no certificates found".into(),
        });
    }
    Ok(certs)
}
