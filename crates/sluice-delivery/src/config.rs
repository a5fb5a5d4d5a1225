//! Delivery policy knobs, with the defaults docs/delivery.md lists.
//!
//! Every timing is configurable so tests can run the whole retry policy in
//! seconds; production keeps the defaults (5 s answer time, 4 h window).

use std::path::PathBuf;
use std::time::Duration;

use sluice_outbound::{Masker, NetworkPolicy};

use crate::error::DeliveryError;
use crate::policy::RetryPolicy;

/// Rounds of sends a destination's queue holds beyond the ones in flight
/// ([`DeliveryConfig::sized_for_timeout_and_concurrency`]).
pub const QUEUED_ROUNDS: usize = 7;

/// How the delivery engine sends, retries and schedules.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryConfig {
    /// Total time an endpoint gets to answer: connect, headers and body.
    pub timeout: Duration,
    /// How long after the event's arrival retries may still be made (a
    /// first attempt more than a window after arrival, after a replay,
    /// starts a fresh window).
    pub retry_window: Duration,
    /// Delay before the first retry; later retries back off exponentially.
    pub backoff_base: Duration,
    /// Upper bound of the exponential backoff.
    pub backoff_cap: Duration,
    /// Upper bound on a `Retry-After` the engine honours.
    pub max_retry_after: Duration,
    /// Deliveries in flight to one destination at once.
    pub concurrency_per_destination: usize,
    /// Claimed deliveries that may wait for one destination's free slot.
    /// Beyond it, further claims for that destination are left leased and
    /// untouched, so a slow destination cannot fill `max_in_flight`.
    pub max_queued_per_destination: usize,
    /// Deliveries held by this engine at once (queued or sending).
    pub max_in_flight: usize,
    /// Deliveries claimed from the store per round trip.
    pub claim_batch: u32,
    /// How often the store is polled when nothing is known to be due; this
    /// covers work appended by other nodes and expired leases.
    pub poll_interval: Duration,
    /// How long a claimed delivery stays leased; must outlast `timeout` so a
    /// live worker never loses its lease mid-send.
    pub lease: Duration,
    /// How long destination settings are cached before being re-read.
    pub destination_cache_ttl: Duration,
    /// How long shutdown waits for in-flight sends before abandoning them
    /// (abandoned deliveries come back after their lease).
    pub shutdown_grace: Duration,
    /// Bytes of each response body kept in the attempt log; reading stops there.
    pub response_body_cap: usize,
    /// Extra trusted CA certificates (PEM bundle) for private CAs.
    pub extra_ca_file: Option<PathBuf>,
    /// Which addresses may be connected to. The default refuses loopback,
    /// private, link-local and other non-public ranges.
    pub network: NetworkPolicy,
    /// Which static header values are credentials (masked when shown).
    pub masker: Masker,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            retry_window: Duration::from_secs(4 * 60 * 60),
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(10 * 60),
            max_retry_after: Duration::from_secs(10 * 60),
            concurrency_per_destination: 64,
            max_queued_per_destination: 448,
            max_in_flight: 1024,
            claim_batch: 256,
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            destination_cache_ttl: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(10),
            response_body_cap: 4096,
            extra_ca_file: None,
            network: NetworkPolicy::default(),
            masker: Masker::default(),
        }
    }
}

impl DeliveryConfig {
    /// Checks the values fit together; the engine refuses to start otherwise.
    pub fn validate(&self) -> Result<(), DeliveryError> {
        let fail = |msg: &str| Err(DeliveryError::Config(msg.to_owned()));
        if self.timeout.is_zero() {
            return fail("timeout must be positive");
        }
        if self.backoff_base.is_zero() {
            return fail("backoff_base must be positive");
        }
        if self.backoff_cap < self.backoff_base {
            return fail("backoff_cap must be at least backoff_base");
        }
        if self.concurrency_per_destination == 0 {
            return fail("concurrency_per_destination must be at least 1");
        }
        if self.max_in_flight == 0 {
            return fail("max_in_flight must be at least 1");
        }
        if self.claim_batch == 0 {
            return fail("claim_batch must be at least 1");
        }
        if self.poll_interval.is_zero() {
            return fail("poll_interval must be positive");
        }
        if self.lease <= self.longest_hold() {
            return fail(
                "lease must outlast a queued delivery's wait plus its send: \
                 timeout * (2 + max_queued_per_destination / concurrency_per_destination)",
            );
        }
        Ok(())
    }

    /// These settings with the per-destination queue and the lease sized to
    /// the answer timeout and concurrency an operator chose, so that every
    /// positive `timeout` and `concurrency_per_destination` is valid: the
    /// queue holds [`QUEUED_ROUNDS`] rounds of sends (448 at the default 64),
    /// and the lease is at least its default and outlasts
    /// [`Self::longest_hold`] by one more timeout. A longer lease only delays
    /// the pick-up of a dead node's deliveries.
    pub fn sized_for_timeout_and_concurrency(mut self) -> Self {
        let concurrency = self.concurrency_per_destination.max(1);
        self.max_queued_per_destination = concurrency.saturating_mul(QUEUED_ROUNDS);
        let needed = self.longest_hold().saturating_add(self.timeout);
        self.lease = self.lease.max(needed);
        self
    }

    /// The longest a claimed delivery may be held before its send ends: the
    /// sends queued ahead of it in its destination, then its own, plus one
    /// timeout of margin.
    pub fn longest_hold(&self) -> Duration {
        let rounds = self.max_queued_per_destination / self.concurrency_per_destination.max(1);
        let rounds = u32::try_from(rounds).unwrap_or(u32::MAX).saturating_add(2);
        self.timeout.saturating_mul(rounds)
    }

    /// The pure retry policy these settings describe.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            window: self.retry_window,
            backoff_base: self.backoff_base,
            backoff_cap: self.backoff_cap,
            max_retry_after: self.max_retry_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_spec_and_validate() {
        let c = DeliveryConfig::default();
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.retry_window, Duration::from_secs(4 * 3600));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn any_timeout_and_concurrency_an_operator_sets_is_valid_once_sized() {
        for timeout_s in [1, 5, 6, 7, 30, 300] {
            for concurrency in [1, 8, 32, 64, 1000] {
                let c = DeliveryConfig {
                    timeout: Duration::from_secs(timeout_s),
                    concurrency_per_destination: concurrency,
                    ..DeliveryConfig::default()
                }
                .sized_for_timeout_and_concurrency();
                assert!(c.validate().is_ok(), "{timeout_s} s, {concurrency}: {c:?}");
                assert!(c.lease >= Duration::from_secs(60));
                assert_eq!(c.max_queued_per_destination, concurrency * QUEUED_ROUNDS);
            }
        }
    }

    #[test]
    fn sizing_keeps_the_defaults_as_they_are() {
        let c = DeliveryConfig::default();
        assert_eq!(c.clone().sized_for_timeout_and_concurrency(), c);
    }

    #[test]
    fn lease_shorter_than_timeout_is_rejected() {
        let c = DeliveryConfig {
            lease: Duration::from_secs(5),
            ..DeliveryConfig::default()
        };
        assert!(matches!(c.validate(), Err(DeliveryError::Config(_))));
    }

    #[test]
    fn cap_below_base_is_rejected() {
        let c = DeliveryConfig {
            backoff_base: Duration::from_secs(10),
            backoff_cap: Duration::from_secs(1),
            ..DeliveryConfig::default()
        };
        assert!(c.validate().is_err());
    }
}
