//! The Kafka shape (docs/kafka.md): ingest appends accepted calls to a
//! Kafka topic, and this node's delivery consumer reads its share of the
//! topic's partitions and sends them.
//!
//! - `log`: [`KafkaLog`], the [`EventLog`] ingest appends to, which also
//!   answers the debugger from the topic's newest records.
//! - `feed`: the delivery consumer, and which offsets it commits.
//! - `dedup`: its deduplication of client retries, saved with its commits.
//! - `tally` and `usage`: its usage counts, stored with its commits, each
//!   call counted once.
//! - `profiles`: the profile engine's reads of the topic.
//!
//! PostgreSQL stays the home of configuration and of retry state: a call
//! every destination accepts on its first attempt writes no row there
//! (`sluice_delivery::FirstAttempts`).

mod dedup;
mod feed;
mod log;
mod profiles;
mod tally;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use sluice_api::suppression::Suppressions;
use sluice_delivery::{DeliveryConfig, EngineHandle, FirstAttempts, Hooks};
use sluice_log::kafka::{
    KafkaConfig, LogConsumer, LogProducer, LogTail, Protocol, Sasl, Security, ensure_topic,
};
use sluice_store::{EventLog, Store};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::ServerError;
use crate::config::KafkaSettings;
use crate::log_metrics::LogCounters;
pub use log::KafkaLog;
pub(crate) use profiles::TopicFeed;

/// The Kafka shape running on this node.
pub(crate) struct Started {
    /// What ingest appends to.
    pub log: Arc<dyn EventLog>,
    /// The delivery consumer; it ends after shutdown, once it has
    /// committed what it finished.
    pub feed: JoinHandle<()>,
    /// What the consumer did with the calls of partitions it took over.
    pub counters: Arc<LogCounters>,
}

/// Runs `work` to its end from a callback of the Kafka client, which cannot
/// await (its rebalance callback), blocking this worker thread while the
/// runtime's other threads carry on. `None` where there are none (a
/// current-thread runtime): the work is not done.
fn finish_here<F: std::future::Future>(work: F) -> Option<F::Output> {
    let handle = tokio::runtime::Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)?;
    Some(tokio::task::block_in_place(|| handle.block_on(work)))
}

/// The client settings of `settings`, naming this node to the brokers.
pub(crate) fn client_config(settings: &KafkaSettings) -> KafkaConfig {
    let mut config = KafkaConfig::new(settings.bootstrap_servers.clone(), settings.topic.clone());
    config.ack_timeout = Duration::from_millis(settings.ack_timeout_ms);
    config.security = Security {
        // Checked by `Config::validate`.
        protocol: Protocol::parse(&settings.security_protocol).unwrap_or_default(),
        ca_location: settings.ssl_ca_location.clone(),
        certificate_location: settings.ssl_certificate_location.clone(),
        key_location: settings.ssl_key_location.clone(),
        sasl: settings.sasl().then(|| Sasl {
            mechanism: settings.sasl_mechanism.clone(),
            username: settings.sasl_username.clone().unwrap_or_default(),
            password: settings.sasl_password.clone().unwrap_or_default(),
        }),
    };
    config
}

/// Whether every broker named is on this machine.
fn loopback_only(bootstrap: &str) -> bool {
    bootstrap.split(',').all(|server| {
        let host = server
            .trim()
            .rsplit_once(':')
            .map_or(server.trim(), |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// Creates the topic when it is missing, then starts the producer ingest
/// appends through and the delivery consumer, which drops the calls of
/// users suppressed after ingest accepted them.
pub(crate) async fn start(
    settings: &KafkaSettings,
    store: &Arc<dyn Store>,
    suppressions: &Arc<Suppressions>,
    (delivery, hooks): (DeliveryConfig, Hooks),
    engine: &EngineHandle,
    dedup: Option<Duration>,
    stop: &watch::Receiver<bool>,
) -> Result<Started, ServerError> {
    let config = client_config(settings);
    let retention = Duration::from_secs(settings.retention_hours.saturating_mul(3_600));
    ensure_topic(
        &config,
        settings.partitions,
        settings.replication,
        retention,
    )
    .await?;
    let producer = LogProducer::new(&config)?;
    let tail = LogTail::new(&config)?;
    let marks = feed::Marks::default();
    let counters = Arc::new(LogCounters::default());
    let dedup = dedup.map(|window| {
        dedup::Dedup::new(dedup::DedupSettings {
            window,
            topic: settings.topic.clone(),
            partitions: settings.partitions,
            max_calls: settings.dedup_max_calls,
            store: store.clone(),
            counters: counters.clone(),
        })
    });
    let usage = Arc::new(usage::Usage::new(store.clone(), settings.topic.clone()));
    let consumer = LogConsumer::new(
        &config,
        &settings.delivery_group,
        Some(feed::revoked_positions(
            &marks,
            dedup.as_ref().map(dedup::Dedup::keys),
            usage.clone(),
        )),
    )?;
    let grace = delivery.shutdown_grace;
    let room = delivery.max_in_flight;
    let first = Arc::new(FirstAttempts::new(store.clone(), delivery, hooks, engine)?);
    let feed = tokio::spawn(feed::run(
        consumer,
        marks,
        feed::Senders {
            first,
            suppressions: suppressions.clone(),
            usage,
            counters: counters.clone(),
        },
        feed::Limits { room, grace, dedup },
        stop.clone(),
    ));
    tracing::info!(
        brokers = %settings.bootstrap_servers,
        topic = %settings.topic,
        group = %settings.delivery_group,
        security = %settings.security_protocol.to_ascii_lowercase(),
        "event log in Kafka"
    );
    if !settings.tls() && !loopback_only(&settings.bootstrap_servers) {
        tracing::warn!(
            brokers = %settings.bootstrap_servers,
            "the event log's brokers are reached without TLS: calls cross the network in \
             the clear (kafka.security_protocol, docs/kafka.md)"
        );
    }
    Ok(Started {
        log: Arc::new(KafkaLog::new(producer, tail)),
        feed,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::loopback_only;

    #[test]
    fn only_brokers_on_this_machine_count_as_loopback() {
        assert!(loopback_only("127.0.0.1:29092"));
        assert!(loopback_only("localhost:9092, [::1]:9092"));
        assert!(!loopback_only("127.0.0.1:9092,kafka-1.internal:9092"));
        assert!(!loopback_only("10.0.0.5:9092"));
    }
}
