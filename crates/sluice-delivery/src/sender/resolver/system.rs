//! The system's name resolution, asynchronously: hickory-resolver with the
//! name servers, search list and options of `/etc/resolv.conf`, answering
//! from `/etc/hosts` first, `localhost` as loopback and `.invalid` as
//! NXDOMAIN without a query (RFC 6761). A lookup is a few UDP exchanges
//! driven by the runtime; no thread waits on it.
//!
//! What differs from `getaddrinfo`: `/etc/nsswitch.conf` is not read (no
//! mDNS, LDAP or other NSS modules), which webhook hosts do not use.

use std::net::IpAddr;
use std::time::Instant;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{LookupIpStrategy, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;

use super::cache::{FAILURE_TTL, SUCCESS_TTL_CAP};
use super::{Answer, Lookup, LookupError, LookupFuture};

/// Host names resolved as the system is configured to.
#[derive(Clone)]
pub struct SystemLookup {
    resolver: TokioResolver,
}

impl std::fmt::Debug for SystemLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemLookup").finish_non_exhaustive()
    }
}

impl SystemLookup {
    /// Reads `/etc/resolv.conf`. Without a usable one, names resolve from
    /// `/etc/hosts` (and `localhost`) only, with a warning: no name server
    /// is assumed, so no query goes where the operator did not say.
    pub fn new() -> Result<Self, NetError> {
        let mut builder = TokioResolver::builder_tokio().unwrap_or_else(|e| {
            tracing::warn!(
                error = %e,
                "no usable /etc/resolv.conf: webhook hosts resolve from /etc/hosts only"
            );
            TokioResolver::builder_with_config(
                ResolverConfig::default(),
                TokioRuntimeProvider::default(),
            )
        });
        tune(builder.options_mut());
        Ok(SystemLookup {
            resolver: builder.build()?,
        })
    }
}

/// Options over what `/etc/resolv.conf` said: A and AAAA asked together
/// (A first, as most receivers are reached over IPv4), `/etc/hosts`
/// consulted, and hickory's own cache held to the same bounds as ours.
fn tune(opts: &mut ResolverOpts) {
    opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    opts.use_hosts_file = ResolveHosts::Always;
    opts.positive_max_ttl = Some(SUCCESS_TTL_CAP);
    opts.negative_max_ttl = Some(FAILURE_TTL);
}

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> LookupFuture {
        let resolver = self.resolver.clone();
        let host = host.to_owned();
        Box::pin(async move {
            match resolver.lookup_ip(host.as_str()).await {
                Ok(found) => {
                    let addrs: Vec<IpAddr> = found.iter().collect();
                    let ttl = found
                        .valid_until()
                        .saturating_duration_since(Instant::now());
                    if addrs.is_empty() {
                        return Err(LookupError::NoAddresses(host));
                    }
                    Ok(Answer {
                        addrs,
                        ttl: Some(ttl),
                    })
                }
                Err(e) => Err(classify(&host, &e)),
            }
        })
    }
}

/// A short reason for the attempt log.
fn classify(host: &str, e: &NetError) -> LookupError {
    if e.is_nx_domain() {
        LookupError::NoSuchHost(host.to_owned())
    } else if e.is_no_records_found() {
        LookupError::NoAddresses(host.to_owned())
    } else if matches!(e, NetError::Timeout) {
        LookupError::TimedOut(host.to_owned())
    } else {
        LookupError::Failed {
            host: host.to_owned(),
            reason: e.to_string(),
        }
    }
}

#[cfg(test)]
#[path = "system_tests.rs"]
mod tests;
