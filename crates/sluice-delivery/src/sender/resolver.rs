//! Name resolution that refuses blocked addresses, inside the connector.
//!
//! Why here: checking a URL's host when a destination is saved cannot stop a
//! name that resolves to a public address then, and to 127.0.0.1 at send
//! time (DNS rebinding). The HTTP client asks this resolver for the
//! addresses it will connect to, on every new connection, and gets only
//! allowed ones; when none is left the connection fails with [`Blocked`]
//! and no packet is sent. IP-literal hosts never reach a resolver; the
//! sender checks those itself before each request.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;
use sluice_outbound::{Blocked, NetworkPolicy};

/// A future of resolved addresses.
pub type LookupFuture = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// Turns a host name into addresses. The system resolver in production;
/// tests inject their own to play a rebinding DNS server.
pub trait Lookup: Send + Sync + 'static {
    fn lookup(&self, host: &str) -> LookupFuture;
}

/// The operating system's resolver (`getaddrinfo`, via tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> LookupFuture {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A resolver that passes on only the addresses `policy` allows.
#[derive(Clone)]
pub struct GuardedResolver {
    lookup: Arc<dyn Lookup>,
    /// Shared, not copied: the connector clones its resolver per client.
    policy: Arc<NetworkPolicy>,
}

impl GuardedResolver {
    pub fn new(lookup: Arc<dyn Lookup>, policy: NetworkPolicy) -> Self {
        Self {
            lookup,
            policy: Arc::new(policy),
        }
    }

    /// Resolves `host` and keeps the allowed addresses; fails with
    /// [`Blocked`] (for the first refused address) when none is left.
    pub async fn resolve_allowed(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        let all = self
            .lookup
            .lookup(host)
            .await
            .map_err(ResolveError::Lookup)?;
        let mut first_refusal = None;
        let allowed: Vec<IpAddr> = all
            .into_iter()
            .filter(|ip| match self.policy.check(*ip) {
                Ok(()) => true,
                Err(blocked) => {
                    first_refusal.get_or_insert(blocked);
                    false
                }
            })
            .collect();
        match (allowed.is_empty(), first_refusal) {
            (true, Some(blocked)) => Err(ResolveError::Blocked(blocked)),
            (true, None) => Err(ResolveError::Lookup(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no addresses found for {host}"),
            ))),
            (false, _) => Ok(allowed),
        }
    }
}

/// Why a name gave no address to connect to.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}")]
    Blocked(Blocked),
    #[error("DNS lookup failed: {0}")]
    Lookup(io::Error),
}

/// The connector's view: a name in, the allowed socket addresses out (port
/// 0: the connector sets the URL's port).
impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = ResolveError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, ResolveError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ResolveError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let ips = this.resolve_allowed(name.as_str()).await?;
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(addrs.into_iter())
        })
    }
}
