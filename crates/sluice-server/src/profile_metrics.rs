//! The profile engine's counters on `/metrics`, read at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use sluice_profiles::EngineHandle;

/// Registers `sluice_profile_evaluations_total` and
/// `sluice_profile_definitions`.
pub fn register(registry: &mut Registry, engine: EngineHandle) {
    registry.register_collector(Box::new(ProfileCounters { engine }));
}

struct ProfileCounters {
    engine: EngineHandle,
}

impl std::fmt::Debug for ProfileCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProfileCounters")
    }
}

impl Collector for ProfileCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let evaluations = ConstCounter::new(self.engine.evaluations());
        let metric = encoder.encode_descriptor(
            "sluice_profile_evaluations",
            "Computed traits and audiences evaluated for one person; an event counts only \
             the definitions reading its name or the traits it sets",
            None,
            evaluations.metric_type(),
        )?;
        evaluations.encode(metric)?;
        let definitions =
            ConstGauge::new(i64::try_from(self.engine.definitions()).unwrap_or(i64::MAX));
        let metric = encoder.encode_descriptor(
            "sluice_profile_definitions",
            "Live computed traits and audiences, as the profile engine last read them",
            None,
            definitions.metric_type(),
        )?;
        definitions.encode(metric)?;
        let partitions =
            ConstGauge::new(i64::try_from(self.engine.partitions()).unwrap_or(i64::MAX));
        let metric = encoder.encode_descriptor(
            "sluice_profile_partitions",
            "Profile engine partitions this node holds (its share of the people)",
            None,
            partitions.metric_type(),
        )?;
        partitions.encode(metric)
    }
}
