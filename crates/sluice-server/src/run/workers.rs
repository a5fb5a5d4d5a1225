//! The engines and background tasks `run` starts, and their stop, in the
//! order that lets each finish what the one before handed it.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use sluice_api::RouteTable;
use sluice_api::suppression::Suppressions;
use sluice_delivery::{DeliveryEngine, EngineHandle, Hooks};
use sluice_schema::Tracker;
use sluice_store::Store;
use sluice_store::health::Tally;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{settings, wait_for};
use crate::config::Config;
use crate::{ServerError, alerts, audit_prune, health, membership, privacy, tasks};

/// The delivery engine with its alerts and this node's heartbeat, and the
/// profile engine when Personas is on.
pub(super) struct Engines {
    pub(super) delivery: EngineHandle,
    delivery_task: JoinHandle<()>,
    pub(super) alerting: alerts::Started,
    heartbeat: JoinHandle<()>,
    /// Tells the heartbeat to leave the membership: only once the delivery
    /// engine has finished, or the other nodes would release, and send
    /// again, the deliveries it is still sending.
    leave: watch::Sender<bool>,
    pub(super) profiles: Option<sluice_profiles::EngineHandle>,
    profiles_task: Option<JoinHandle<()>>,
    /// Delivery health counted in memory, and its merge into the store.
    pub(super) tally: Option<Arc<Tally>>,
    health_merge: Option<(JoinHandle<()>, Arc<dyn Store>)>,
    /// The Kafka shape's delivery settings, until its consumer starts.
    pub(super) log_delivery: Option<(sluice_delivery::DeliveryConfig, Hooks)>,
    /// The Kafka shape's delivery consumer.
    pub(super) log_feed: Option<JoinHandle<()>>,
    /// Its counters of partitions taken over.
    pub(super) log_counters: Option<Arc<crate::log_metrics::LogCounters>>,
}

impl Engines {
    pub(super) fn start(
        config: &Config,
        store: &Arc<dyn Store>,
        stop: &watch::Receiver<bool>,
    ) -> Result<Engines, ServerError> {
        let engine_stop = wait_for(stop.clone());
        let delivery = settings::delivery_config(config)?;
        // In the Kafka shape the engine reads the topic; its identify
        // messages go to the database's outbox either way, where this
        // node's delivery engine sends them. Made before anything starts,
        // as it may fail.
        let feed = if config.personas.enabled {
            profile_feed(config, store)?
        } else {
            None
        };
        let alerting = alerts::start(config, &delivery, store.clone(), stop.clone())?;
        let sink = alerting.as_ref().map(|(sink, _, _)| sink.clone());
        let tally = config.delivery.health.then(|| Arc::new(Tally::new()));
        let hooks = Hooks {
            alerts: sink.clone(),
            tally: tally.clone(),
        };
        let log_hooks = Hooks {
            alerts: sink,
            tally: tally.clone(),
        };
        let log_delivery = config
            .kafka
            .enabled()
            .then(|| (delivery.clone(), log_hooks));
        let (engine, delivery_task) =
            DeliveryEngine::start_with(store.clone(), delivery, hooks, engine_stop)?;
        let health_merge = tally.clone().map(|tally| {
            let every = Duration::from_millis(config.delivery.health_flush_ms);
            let task = health::spawn(store.clone(), tally, every, stop.clone());
            (task, store.clone())
        });
        let (leave, leave_rx) = watch::channel(false);
        let heartbeat = membership::spawn(store.clone(), engine.clone(), leave_rx);
        let profiles = config.personas.enabled.then(|| {
            let wake_delivery = engine.clone();
            sluice_profiles::engine::start_with(
                store.clone(),
                feed,
                settings::profile_config(config),
                Arc::new(move || wake_delivery.notify()),
                wait_for(stop.clone()),
            )
        });
        let (profiles, profiles_task) = profiles.unzip();
        Ok(Engines {
            delivery: engine,
            delivery_task,
            alerting,
            heartbeat,
            leave,
            profiles,
            profiles_task,
            tally,
            health_merge,
            log_delivery,
            log_feed: None,
            log_counters: None,
        })
    }
}

/// Where the profile engine reads calls when not from the store: the topic,
/// in the Kafka shape.
fn profile_feed(
    config: &Config,
    store: &Arc<dyn Store>,
) -> Result<Option<Arc<dyn sluice_profiles::engine::EventFeed>>, ServerError> {
    #[cfg(feature = "kafka")]
    if config.kafka.enabled() {
        let client = crate::kafka::client_config(&config.kafka);
        let feed = crate::kafka::TopicFeed::new(&client, store.clone())?;
        return Ok(Some(Arc::new(feed)));
    }
    let _ = (config, store);
    Ok(None)
}

/// The suppression list's sync and the regulation job.
pub(super) struct Privacy {
    sync: JoinHandle<()>,
    job: JoinHandle<()>,
}

impl Privacy {
    pub(super) fn spawn(
        config: &Config,
        store: &Arc<dyn Store>,
        suppressions: &Arc<Suppressions>,
        delivery: &EngineHandle,
        stop: &watch::Receiver<bool>,
    ) -> Privacy {
        let sync = privacy::spawn_sync(store.clone(), suppressions.clone(), stop.clone());
        let wake_delivery = delivery.clone();
        let job = privacy::spawn_job(
            store.clone(),
            privacy::JobConfig {
                poll_interval: Duration::from_millis(config.personas.poll_interval_ms),
                lease_ttl: Duration::from_secs(config.personas.lease_ttl_secs),
                settle: privacy::settle_time(Duration::from_millis(config.storage.timeout_ms)),
            },
            Arc::new(move || wake_delivery.notify()),
            stop.clone(),
        );
        Privacy { sync, job }
    }
}

/// Routing refresh, retention and the pending cap; the audit log's
/// retention; the observed schema's flushes.
pub(super) struct Upkeep {
    tasks: JoinHandle<()>,
    audit_pruner: Option<JoinHandle<()>>,
    schema_flusher: Option<JoinHandle<()>>,
}

impl Upkeep {
    pub(super) fn spawn(
        config: &Config,
        store: &Arc<dyn Store>,
        routes: RouteTable,
        schema: Option<Arc<Tracker>>,
        capped: (Counter, Option<Arc<Tally>>),
        stop: &watch::Receiver<bool>,
    ) -> Upkeep {
        let tasks = tasks::spawn(
            store.clone(),
            routes,
            &config.retention,
            tasks::PendingCap::new(&config.delivery, capped.0, capped.1),
            stop.clone(),
        );
        let audit_pruner = audit_prune::spawn(store.clone(), &config.audit, stop.clone());
        let schema_flusher = schema.map(|tracker| {
            tasks::spawn_schema_flush(store.clone(), tracker, &config.schema, stop.clone())
        });
        Upkeep {
            tasks,
            audit_pruner,
            schema_flusher,
        }
    }
}

/// Everything started, to wait for once the stop signal is sent.
pub(super) struct Workers {
    pub(super) metrics_side: Option<JoinHandle<()>>,
    pub(super) engines: Engines,
    pub(super) upkeep: Upkeep,
    pub(super) privacy: Privacy,
}

impl Engines {
    /// Waits for the engines to finish, then leaves the membership; the
    /// stop signal has been sent.
    pub(super) async fn finish(self) {
        if let Some(feed) = self.log_feed
            && let Err(e) = feed.await
        {
            tracing::error!(error = %e, "event log consumer failed");
        }
        if let Err(e) = self.delivery_task.await {
            tracing::error!(error = %e, "delivery engine task failed");
        }
        // Every send has ended and its outcome is written (or was abandoned
        // at the end of the grace): what this node still leases is for the
        // others to take, so it leaves now.
        let _ = self.leave.send(true);
        if let (Some((merge, store)), Some(tally)) = (self.health_merge, &self.tally) {
            let _ = merge.await;
            // Delivery and ingest have stopped counting: merge the rest.
            health::flush(store.as_ref(), tally).await;
        }
        if let Some(task) = self.profiles_task
            && let Err(e) = task.await
        {
            tracing::error!(error = %e, "profile engine task failed");
        }
        if let Some((_, _, task)) = self.alerting {
            let _ = task.await;
        }
        let _ = self.heartbeat.await;
    }
}

impl Workers {
    /// Waits for each worker to finish (the periodic upkeep is aborted);
    /// the stop signal has been sent.
    pub(super) async fn finish(self) {
        let Workers {
            metrics_side,
            engines,
            upkeep,
            privacy,
        } = self;
        if let Some(side) = metrics_side {
            let _ = side.await;
        }
        engines.finish().await;
        upkeep.tasks.abort();
        if let Some(pruner) = upkeep.audit_pruner {
            pruner.abort();
        }
        if let Some(flusher) = upkeep.schema_flusher {
            // It writes what is pending once more on its way out.
            if let Err(e) = flusher.await {
                tracing::error!(error = %e, "schema flush task failed");
            }
        }
        let _ = privacy.job.await;
        let _ = privacy.sync.await;
    }
}
