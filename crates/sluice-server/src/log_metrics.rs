//! The Kafka shape's hand-over counters on `/metrics`: what a node did with
//! the calls of partitions that came to it from another node (a rebalance,
//! or the `kill -9` of their owner).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
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
}

/// Registers `sluice_kafka_calls_read_again_total` and
/// `sluice_kafka_calls_skipped_total`.
pub fn register(registry: &mut Registry, counters: Arc<LogCounters>) {
    registry.register_collector(Box::new(Counters(counters)));
}

#[derive(Debug)]
struct Counters(Arc<LogCounters>);

impl Collector for Counters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let read_again = ConstCounter::new(self.0.read_again.load(Ordering::Relaxed));
        let metric = encoder.encode_descriptor(
            "sluice_kafka_calls_read_again",
            "Calls of partitions taken over that their last owner had read and not \
             finished by its last commit, sent again here: each may have reached its \
             destinations twice",
            None,
            read_again.metric_type(),
        )?;
        read_again.encode(metric)?;
        let skipped = ConstCounter::new(self.0.skipped.load(Ordering::Relaxed));
        let metric = encoder.encode_descriptor(
            "sluice_kafka_calls_skipped",
            "Calls of partitions taken over that their last owner had finished past its \
             committed offset, skipped here",
            None,
            skipped.metric_type(),
        )?;
        skipped.encode(metric)
    }
}
