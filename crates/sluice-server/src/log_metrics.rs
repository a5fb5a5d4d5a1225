//! The Kafka shape's consumer on `/metrics`: what a node did with the calls
//! of partitions that came to it from another node (a rebalance, or the
//! `kill -9` of their owner), and what its deduplication memory holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// Counted by the delivery consumer as it reads.
#[derive(Debug, Default)]
pub struct LogCounters {
    /// Calls sent that the partition's last owner had read and not
    /// finished by its last commit: each may have been sent twice.
    pub read_again: AtomicU64,
    /// Calls skipped because the last owner had finished them past its
    /// committed offset.
    pub skipped: AtomicU64,
    /// Calls remembered to drop their clients' retries (a gauge).
    pub dedup_calls: AtomicU64,
    /// The memory those take, in bytes (a gauge).
    pub dedup_bytes: AtomicU64,
    /// How far back, in seconds, the memory reaches in every partition (a
    /// gauge): the window, or less while the memory is full.
    pub dedup_reach_secs: AtomicU64,
}

/// Registers `sluice_kafka_calls_read_again_total`,
/// `sluice_kafka_calls_skipped_total`, `sluice_kafka_dedup_calls`,
/// `sluice_kafka_dedup_memory_bytes` and `sluice_kafka_dedup_reach_seconds`.
pub fn register(registry: &mut Registry, counters: Arc<LogCounters>) {
    registry.register_collector(Box::new(Counters(counters)));
}

#[derive(Debug)]
struct Counters(Arc<LogCounters>);

impl Collector for Counters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = &self.0;
        let counters = [
            (
                "sluice_kafka_calls_read_again",
                "Calls of partitions taken over that their last owner had read and not \
                 finished by its last commit, sent again here: each may have reached its \
                 destinations twice",
                &c.read_again,
            ),
            (
                "sluice_kafka_calls_skipped",
                "Calls of partitions taken over that their last owner had finished past its \
                 committed offset, skipped here",
                &c.skipped,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value.load(Ordering::Relaxed));
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "sluice_kafka_dedup_calls",
                "Calls this node remembers to drop their clients' retries within the \
                 deduplication window",
                &c.dedup_calls,
            ),
            (
                "sluice_kafka_dedup_memory_bytes",
                "Memory those calls take, in bytes",
                &c.dedup_bytes,
            ),
            (
                "sluice_kafka_dedup_reach_seconds",
                "How far back this node's deduplication memory reaches in every partition it \
                 holds: the window, or less while the memory is full",
                &c.dedup_reach_secs,
            ),
        ];
        for (name, help, value) in gauges {
            let level = ConstGauge::new(level(value));
            level.encode(encoder.encode_descriptor(name, help, None, level.metric_type())?)?;
        }
        Ok(())
    }
}

fn level(value: &AtomicU64) -> i64 {
    i64::try_from(value.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
}
