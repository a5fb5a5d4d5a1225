//! Ingest with the profile engine: off, on with no definitions (the
//! default), with 10 computed traits, with 20 audiences. Each arm is a fresh
//! server fed the same events; ratios are taken within this one run.

use std::sync::Arc;

use anyhow::Context;
use serde_json::{Value, json};

use super::Sizes;
use crate::load::{Call, Pace, Workload, drive};
use crate::scenarios::{CONNECTIONS, Harness, Plan};

/// What a server gets before its load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    EngineOff,
    NoDefinitions,
    Traits,
    Audiences,
}

/// One arm's figures.
pub struct Rates {
    pub batch: f64,
    /// Single `/v1/track` calls; only measured for the first two arms.
    pub track: Option<f64>,
    pub disk: u64,
}

/// The workloads every arm gets (built once, so every arm sends the same
/// bytes and the events carry one timestamp).
pub struct Loads {
    pub batch: Arc<Workload>,
    pub track: Arc<Workload>,
}

impl Loads {
    pub fn new(sizes: &Sizes) -> Loads {
        Loads {
            track: Arc::new(Workload::people(
                Call::Track,
                "pk",
                sizes.track,
                sizes.people,
            )),
            batch: Arc::new(Workload::people(
                Call::Batch(100),
                "pb",
                sizes.events,
                sizes.people,
            )),
        }
    }

    /// The latest timestamp the events carry.
    pub fn timestamp(&self) -> chrono::DateTime<chrono::Utc> {
        self.batch.timestamp.max(self.track.timestamp)
    }
}

/// Starts a server for `arm`, creates its definitions and sends the loads.
/// The harness is returned running.
pub async fn run_arm(plan: &Plan, arm: Arm, loads: &Loads) -> anyhow::Result<(Harness, Rates)> {
    let mut options = plan.server.clone();
    if arm == Arm::EngineOff {
        options
            .env
            .push(("SLUICE_PERSONAS__ENABLED".into(), "false".into()));
    }
    let h = Harness::start(plan, &options).await?;
    match arm {
        Arm::Traits => {
            create_all(&h, "/computed-traits", "bench trait", super::defs::traits()).await?
        }
        Arm::Audiences => create_all(&h, "/audiences", "", super::defs::audiences()).await?,
        Arm::EngineOff | Arm::NoDefinitions => {}
    }
    // Every event must land: the later phases expect every person.
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit * 3);
    let out = drive(&target, loads.batch.clone()).await?;
    anyhow::ensure!(
        out.failures == 0,
        "batch ingest failed: {:?}",
        out.first_failure
    );
    anyhow::ensure!(
        out.acked_events(&loads.batch) >= loads.batch.requests() * 100,
        "batch ingest stopped at its time limit"
    );
    let batch = out.acked_events(&loads.batch) as f64 / out.elapsed.as_secs_f64();
    let track = if matches!(arm, Arm::EngineOff | Arm::NoDefinitions) {
        let out = drive(&target, loads.track.clone()).await?;
        anyhow::ensure!(
            out.failures == 0,
            "track ingest failed: {:?}",
            out.first_failure
        );
        Some(out.acked_events(&loads.track) as f64 / out.elapsed.as_secs_f64())
    } else {
        None
    };
    let disk = h.sluice.disk_bytes();
    Ok((h, Rates { batch, track, disk }))
}

/// Creates each definition, unconnected (computing and storing is the cost
/// measured here; delivery has its own scenario).
pub(super) async fn create_all(
    h: &Harness,
    path: &str,
    name: &str,
    defs: Vec<Value>,
) -> anyhow::Result<()> {
    for (i, def) in defs.into_iter().enumerate() {
        let body = if name.is_empty() {
            def
        } else {
            json!({"name": format!("{name} {i}"), "definition": def})
        };
        h.sluice
            .admin(reqwest::Method::POST, path, body)
            .await
            .with_context(|| format!("creating {path} #{i}"))?;
    }
    Ok(())
}
