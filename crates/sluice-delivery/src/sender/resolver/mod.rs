//! Name resolution that refuses blocked addresses, inside the connector.
//!
//! Why here: checking a URL's host when a destination is saved cannot stop a
//! name that resolves to a public address then, and to 127.0.0.1 at send
//! time (DNS rebinding). The HTTP client asks this resolver for the
//! addresses it will connect to, on every new connection, and gets only
//! allowed ones; when none is left the connection fails with [`Blocked`]
//! and no packet is sent. IP-literal hosts never reach a resolver; the
//! sender checks those itself before each request.
//!
//! Why not the operating system's resolver: `getaddrinfo` blocks a thread
//! per lookup. Run on tokio's shared blocking pool, a few destinations
//! whose names do not resolve (or whose name servers hang) filled that pool
//! with lookups, up to its 512 threads, and the store's reads, which run on
//! the same pool, waited behind them: a healthy neighbour's deliveries fell
//! to a few dozen a second. Lookups here are asynchronous ([`SystemLookup`],
//! hickory-resolver reading `/etc/resolv.conf` and `/etc/hosts`), hold no
//! thread, and one lookup per host answers every concurrent send; outcomes
//! are reused briefly ([`CachingLookup`]).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::dns::Name;
use sluice_outbound::{Blocked, NetworkPolicy};

mod cache;
mod caching;
mod system;

pub use cache::{DnsCache, FAILURE_TTL, SUCCESS_TTL_CAP};
pub use caching::CachingLookup;
pub use system::SystemLookup;

/// What a name resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub addrs: Vec<IpAddr>,
    /// How long the answer may be reused (its records' TTL), if known.
    pub ttl: Option<Duration>,
}

impl Answer {
    /// Addresses without a TTL: used once, never reused.
    pub fn uncached(addrs: Vec<IpAddr>) -> Self {
        Answer { addrs, ttl: None }
    }
}

/// Why a name gave no addresses. Short and secret-free (a host name is
/// shown in the attempt log's URL anyway): it lands in the attempt log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// NXDOMAIN: the name does not exist (always, for `.invalid`).
    #[error("no such host {0} (NXDOMAIN)")]
    NoSuchHost(String),
    /// The name exists but has no A or AAAA record.
    #[error("{0} has no address records")]
    NoAddresses(String),
    /// The name servers did not answer in time.
    #[error("no answer for {0} from the name servers in time")]
    TimedOut(String),
    /// Anything else: a server failure, an unusable name, no name server.
    #[error("resolving {host} failed: {reason}")]
    Failed { host: String, reason: String },
}

/// A future of resolved addresses.
pub type LookupFuture = Pin<Box<dyn Future<Output = Result<Answer, LookupError>> + Send>>;

/// Turns a host name into addresses. The system's configuration, resolved
/// asynchronously ([`SystemLookup`]) behind a cache ([`CachingLookup`]) in
/// production; tests inject their own to play a rebinding DNS server.
pub trait Lookup: Send + Sync + 'static {
    fn lookup(&self, host: &str) -> LookupFuture;
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
            .map_err(ResolveError::Lookup)?
            .addrs;
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
            (true, None) => Err(ResolveError::Lookup(LookupError::NoAddresses(
                host.to_owned(),
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
    #[error("DNS lookup failed, request not sent: {0}")]
    Lookup(LookupError),
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
