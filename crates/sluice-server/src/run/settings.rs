//! The engines' and the accept loop's settings, read from the
//! configuration.

use std::time::Duration;

use sluice_api::admin::webhook_settings;
use sluice_delivery::DeliveryConfig;

use crate::config::{self, Config};
use crate::{ServerError, rlimit, serve};

pub(super) fn delivery_config(config: &Config) -> Result<DeliveryConfig, ServerError> {
    let d = &config.delivery;
    Ok(DeliveryConfig {
        timeout: Duration::from_millis(d.timeout_ms),
        retry_window: Duration::from_secs(d.retry_window_secs),
        backoff_base: Duration::from_millis(d.backoff_base_ms),
        backoff_cap: Duration::from_millis(d.backoff_cap_ms),
        concurrency_per_destination: d.concurrency_per_destination,
        extra_ca_file: d.extra_ca_file.clone(),
        network: outbound_rules(config)?.network,
        masker: config.masker(),
        ..DeliveryConfig::default()
    }
    .sized_for_timeout_and_concurrency())
}

/// The network guard and credential masking, from `delivery.*`.
pub(super) fn outbound_rules(config: &Config) -> Result<webhook_settings::Rules, ServerError> {
    let network = config
        .network_policy()
        .map_err(|e| config::ConfigError::Invalid {
            key: "delivery.allow_networks",
            why: e.to_string(),
        })?;
    Ok(webhook_settings::Rules {
        network,
        masker: config.masker(),
    })
}

/// Logs what the network guard lets delivery reach beyond the public
/// internet: a warning when it is off.
pub(super) fn log_outbound_rules(rules: &webhook_settings::Rules) {
    if rules.network.allows_everything() {
        tracing::warn!(
            "delivery.allow_networks allows every address: the SSRF guard is off, and \
             destinations can reach loopback, private networks and cloud metadata"
        );
    } else if !rules.network.allowed().is_empty() {
        let allowed: Vec<String> = rules
            .network
            .allowed()
            .iter()
            .map(ToString::to_string)
            .collect();
        tracing::info!(allowed = %allowed.join(","), "delivery may reach these non-public networks");
    }
}

pub(super) fn profile_config(config: &Config) -> sluice_profiles::EngineConfig {
    let p = &config.personas;
    sluice_profiles::EngineConfig {
        poll_interval: Duration::from_millis(p.poll_interval_ms),
        lease_ttl: Duration::from_secs(p.lease_ttl_secs),
        batch: p.batch_events.max(1),
        defer_to_ingest: p.defer_to_ingest,
        schedule_ahead: Duration::from_secs(p.schedule_ahead_secs),
        space_id: p.space_id.clone(),
        ..sluice_profiles::EngineConfig::default()
    }
}

/// The accept loop's limits, with the connection cap lowered below the
/// process's open-file limit.
pub fn serve_options(config: &Config) -> serve::ServeOptions {
    let h = &config.http;
    let soft = rlimit::nofile().map(|(soft, _)| soft);
    let max_connections = rlimit::effective_max_connections(h.max_connections, soft);
    if max_connections < h.max_connections {
        tracing::warn!(
            configured = h.max_connections,
            used = max_connections,
            open_file_limit = soft,
            "http.max_connections lowered to stay below the open-file limit"
        );
    }
    serve::ServeOptions {
        head_timeout: Duration::from_millis(h.head_timeout_ms),
        keep_alive_idle: Duration::from_millis(h.keep_alive_idle_ms),
        max_connections,
        max_head_bytes: h.max_head_bytes,
        shutdown_grace: Duration::from_millis(h.shutdown_grace_ms),
    }
}
