//! The delivery engine's counters on `/metrics`, read at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use sluice_delivery::EngineHandle;

/// Registers `sluice_delivery_handed_back_total`,
/// `sluice_delivery_from_ingest_total` and `sluice_cluster_nodes`.
pub fn register(registry: &mut Registry, engine: EngineHandle) {
    registry.register_collector(Box::new(EngineCounters { engine }));
}

#[derive(Debug)]
struct EngineCounters {
    engine: EngineHandle,
}

impl Collector for EngineCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let handed_back = ConstCounter::new(self.engine.handed_back());
        let metric = encoder.encode_descriptor(
            "sluice_delivery_handed_back",
            "Claimed deliveries handed back unsent because their destination already held \
             as many as it may (each waits 100 ms more); a steady rise means a destination \
             slower than its traffic",
            None,
            handed_back.metric_type(),
        )?;
        handed_back.encode(metric)?;
        let from_ingest = ConstCounter::new(self.engine.from_ingest());
        let metric = encoder.encode_descriptor(
            "sluice_delivery_from_ingest",
            "Deliveries this node's ingest leased to its own engine as it committed them, \
             sent without a claim (a backlog goes through claims instead)",
            None,
            from_ingest.metric_type(),
        )?;
        from_ingest.encode(metric)?;
        let nodes = ConstGauge::new(i64::try_from(self.engine.nodes()).unwrap_or(i64::MAX));
        let metric = encoder.encode_descriptor(
            "sluice_cluster_nodes",
            "Nodes delivering from this store, as this node last counted them; each sends \
             at most its equal share of delivery.concurrency_per_destination",
            None,
            nodes.metric_type(),
        )?;
        nodes.encode(metric)
    }
}
