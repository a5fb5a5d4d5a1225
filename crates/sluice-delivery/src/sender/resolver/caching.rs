//! One lookup per host at a time, its outcome reused per [`DnsCache`].
//!
//! Why coalesce: a destination sends up to `concurrency_per_destination`
//! requests at once, each to every URL, and each new connection asks for
//! its host's addresses. Sends that find a lookup of their host under way
//! wait for that one instead of starting their own, so a name whose server
//! hangs costs one pending query, not one per send. The lookup runs in a
//! task of its own: a send that gives up (its answer timeout) does not
//! cancel it for the others, and its outcome is remembered either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use super::cache::{DnsCache, Outcome};
use super::{Answer, Lookup, LookupError, LookupFuture};

/// The longest one lookup may take, whatever the name servers' settings
/// (`timeout` × `attempts` of `/etc/resolv.conf`, per search domain).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

type Pending = Shared<BoxFuture<'static, Outcome>>;

#[derive(Default)]
struct State {
    cache: DnsCache,
    pending: HashMap<String, Pending>,
}

/// `inner` behind a per-host cache, with concurrent lookups of one host
/// shared.
pub struct CachingLookup {
    inner: Arc<dyn Lookup>,
    state: Arc<Mutex<State>>,
    timeout: Duration,
}

impl CachingLookup {
    pub fn new(inner: Arc<dyn Lookup>) -> Self {
        Self::with_timeout(inner, LOOKUP_TIMEOUT)
    }

    fn with_timeout(inner: Arc<dyn Lookup>, timeout: Duration) -> Self {
        CachingLookup {
            inner,
            state: Arc::default(),
            timeout,
        }
    }
}

impl Lookup for CachingLookup {
    fn lookup(&self, host: &str) -> LookupFuture {
        let key = host.trim_end_matches('.').to_ascii_lowercase();
        let mut state = lock(&self.state);
        if let Some(outcome) = state.cache.get(&key, Instant::now()) {
            return Box::pin(std::future::ready(answer(outcome)));
        }
        let pending = match state.pending.get(&key) {
            Some(pending) => pending.clone(),
            None => {
                let pending = self.start(key.clone());
                state.pending.insert(key, pending.clone());
                pending
            }
        };
        drop(state);
        Box::pin(pending.map(answer))
    }
}

impl CachingLookup {
    /// Spawns the lookup of `key`; when it ends, its outcome is remembered
    /// and it stops being pending.
    fn start(&self, key: String) -> Pending {
        let lookup = self.inner.lookup(&key);
        let state = Arc::clone(&self.state);
        let host = key.clone();
        let limit = self.timeout;
        let task = tokio::spawn(async move {
            let (outcome, ttl) = match tokio::time::timeout(limit, lookup).await {
                Ok(Ok(found)) => (Ok(found.addrs.into()), found.ttl),
                Ok(Err(e)) => (Err(e), None),
                Err(_) => (Err(LookupError::TimedOut(host.clone())), None),
            };
            let mut state = lock(&state);
            state
                .cache
                .insert(&host, outcome.clone(), ttl, Instant::now());
            state.pending.remove(&host);
            outcome
        });
        async move {
            task.await.unwrap_or_else(|e| {
                Err(LookupError::Failed {
                    host: key,
                    reason: format!("lookup task ended: {e}"),
                })
            })
        }
        .boxed()
        .shared()
    }
}

fn answer(outcome: Outcome) -> Result<Answer, LookupError> {
    outcome.map(|addrs| Answer::uncached(addrs.to_vec()))
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[path = "caching_tests.rs"]
mod tests;
