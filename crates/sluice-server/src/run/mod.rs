//! [`run`]: start-up, serving and shutdown, in the order each part needs.
//!
//! - `announce`: what start-up tells its caller (the generated token).
//! - `store`: the store the configuration names.
//! - `settings`: the engines' and the accept loop's settings.
//! - `workers`: the engines and background tasks, and their stop.
//! - `state`: the metrics registry and the API's shared state.

mod announce;
mod settings;
mod state;
mod store;
mod workers;

pub use announce::{Announce, JsonStderrAnnounce, StderrAnnounce};
pub use settings::serve_options;
pub use store::{OpenStore, open_store};

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_api::RouteTable;
use sluice_schema::Tracker;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Config;
use crate::{ServerError, admin_token, bootstrap, serve};
use workers::{Engines, Privacy, Upkeep, Workers};

/// Runs Sluice on `listener` until `shutdown` completes, then stops
/// accepting, finishes in-flight requests (and so their commits), lets
/// delivery wind down, and returns.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    announce: &dyn Announce,
) -> Result<(), ServerError> {
    let opened = open_store(&config).await?;
    let store = opened.shared();
    let rules = settings::outbound_rules(&config)?;
    settings::log_outbound_rules(&rules);
    let token = admin_token::resolve(store.as_ref(), config.admin_token.as_deref()).await?;
    if let Some(generated) = &token.generated {
        announce.admin_token_generated(generated);
    }
    if let Some(path) = &config.bootstrap {
        bootstrap::apply(store.as_ref(), path, &rules).await?;
    }

    // Everything that may fail comes before the engines start: once they
    // have, they are stopped and waited for, or their sends would be cut
    // off half-done.
    let suppressions = Arc::new(sluice_api::suppression::Suppressions::new());
    suppressions.refresh(store.as_ref()).await?;
    let routes = RouteTable::load(store.clone()).await?;
    let metrics_listener = config.metrics.listen.map(serve::bind).transpose()?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut engines = Engines::start(&config, &store, &stop_rx)?;
    let log = match event_log(&config, &store, &suppressions, &mut engines, &stop_rx).await {
        Ok(log) => log,
        Err(e) => {
            let _ = stop_tx.send(true);
            engines.finish().await;
            opened.close().await;
            return Err(e);
        }
    };
    let (registry, metrics, capped) = state::registry(&engines);
    let schema = config
        .schema
        .enabled
        .then(|| Arc::new(Tracker::new(config.schema.max_entries_per_source)));
    let privacy = Privacy::spawn(&config, &store, &suppressions, &engines.delivery, &stop_rx);
    let ready = Arc::new(AtomicBool::new(false));
    let app = state::app_state(
        &config,
        &engines,
        state::Parts {
            store: store.clone(),
            log,
            routes: routes.clone(),
            suppressions,
            admin_token_hash: token.hash,
            registry,
            metrics,
            ready: ready.clone(),
            outbound: rules,
            schema: schema.clone(),
        },
    );
    let capped = (capped, engines.tally.clone());
    let upkeep = Upkeep::spawn(&config, &store, routes, schema, capped, &stop_rx);

    // The dashboard's pages sit next to the APIs; it adds no fallback, so
    // unknown paths keep the API's JSON 404.
    let router = sluice_api::router(app.clone()).merge(sluice_dashboard::router(app.clone()));
    let service = sluice_api::App::new(app.clone(), router);
    let opts = serve_options(&config);
    let metrics_side = match metrics_listener {
        Some(side) => {
            tracing::info!(addr = ?side.local_addr().ok(), "metrics listening");
            Some(serve::spawn_side_listener(
                side,
                sluice_api::App::router_only(sluice_api::metrics_router(app)),
                opts.clone(),
                stop_rx.clone(),
            ))
        }
        None => None,
    };
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        storage = ?config.storage.backend,
        data_dir = %config.data_dir.display(),
        max_connections = opts.max_connections,
        "sluice listening"
    );
    ready.store(true, Ordering::Release);
    serve::serve(listener, service, opts, async move {
        shutdown.await;
        ready.store(false, Ordering::Release);
    })
    .await;

    let _ = stop_tx.send(true);
    Workers {
        metrics_side,
        engines,
        upkeep,
        privacy,
    }
    .finish()
    .await;
    opened.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Where ingest appends: with `[kafka]` on, the topic (and this node's
/// delivery consumer starts on it); otherwise the store.
async fn event_log(
    config: &Config,
    store: &Arc<dyn sluice_store::Store>,
    suppressions: &Arc<sluice_api::suppression::Suppressions>,
    engines: &mut Engines,
    stop: &watch::Receiver<bool>,
) -> Result<Arc<dyn sluice_store::EventLog>, ServerError> {
    let Some((delivery, hooks)) = engines.log_delivery.take() else {
        return Ok(Arc::new(sluice_store::StoreLog(store.clone())));
    };
    #[cfg(feature = "kafka")]
    {
        let started = crate::kafka::start(
            &config.kafka,
            store,
            suppressions,
            (delivery, hooks),
            &engines.delivery,
            config.storage.dedup_window(),
            stop,
        )
        .await?;
        engines.log_feed = Some(started.feed);
        engines.log_counters = Some(started.counters);
        Ok(started.log)
    }
    // Refused by `Config::validate` before this point.
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (config, suppressions, delivery, hooks, stop);
        Err(ServerError::Config(crate::config::ConfigError::Invalid {
            key: "kafka.bootstrap_servers",
            why: "this build has no Kafka support".into(),
        }))
    }
}

/// A future that completes once the watch flips to true (or its sender is gone).
pub(crate) async fn wait_for(mut rx: watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}
