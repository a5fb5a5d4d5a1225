//! A node killed in the middle of its sends: the node left takes over its
//! deliveries once the killed one drops out of the membership, with the
//! default heartbeat and time-to-live, long before the killed node's
//! leases would end, and no acknowledged event is lost.
//!
//! The kill comes just after the node's heartbeat (read from the `nodes`
//! table): it is then counted for a whole time-to-live after the kill, and
//! the other node releases its leases at its first beat after that, which
//! comes `HEARTBEAT - lag` later, `lag` being how long before the killed
//! node's beat the other one beat. The slowest case (`lag` near 0) is
//! therefore the measured time plus `lag`, and that is held to the budget
//! too, whatever the phase of the two nodes' beats in a run.
//!
//! The killed node runs on a runtime of its own, shut down at once: its
//! tasks stop at their next await without any clean-up (the membership row
//! stays, no lease is given back), and its sockets close, so the database
//! ends its sessions and the receiver sees its connections drop, as after
//! `kill -9`. Needs `SLUICE_TEST_POSTGRES_URL`.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use sluice_server::membership::{HEARTBEAT, TTL};
use sluice_testkit::{Receiver, Reply};
use tokio::runtime::Runtime;

use crate::postgres::{pg_config, unique_schema};
use crate::support::{Quiet, TestServer, eventually, metric};

/// The most a killed node's deliveries may wait for another node.
const BUDGET: Duration = Duration::from_secs(10);

/// Allowance for the test's own scheduling on a loaded machine.
const MARGIN: Duration = Duration::from_millis(500);

/// A node on a runtime of its own; dropping it (or [`Doomed::kill`]) stops
/// every task of the node where it stands.
struct Doomed {
    runtime: Option<Runtime>,
}

impl Doomed {
    /// Starts a node on `config`; returns it and a client of it.
    async fn start(config: sluice_server::Config) -> (Doomed, TestServer) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = sluice_server::run(config, listener, std::future::pending(), &Quiet).await;
        });
        let client = TestServer::client_of(format!("http://{addr}"));
        eventually(30, || async {
            let ready = client.http.get(client.url("/ready")).send().await;
            ready.is_ok_and(|r| r.status() == 200).then_some(())
        })
        .await;
        (
            Doomed {
                runtime: Some(runtime),
            },
            client,
        )
    }

    /// Stops the node at once, as `kill -9` would.
    fn kill(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Doomed {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The membership table, read directly.
struct Beats {
    client: tokio_postgres::Client,
    schema: String,
}

impl Beats {
    async fn connect(schema: &str) -> Beats {
        Beats {
            client: crate::postgres::test_database().await,
            schema: schema.to_owned(),
        }
    }

    /// The id of the one node in the membership, if there is exactly one.
    async fn only_node(&self) -> Option<String> {
        let sql = format!("SELECT id FROM \"{}\".nodes", self.schema);
        let rows = self.client.query(&sql, &[]).await.ok()?;
        match rows.as_slice() {
            [row] => Some(row.get(0)),
            _ => None,
        }
    }

    /// The id of a node other than `node` (there are two).
    async fn other_than(&self, node: &str) -> String {
        self.other_than_if_any(node).await.expect("a second node")
    }

    /// The id of a node other than `node`, once one has beaten.
    async fn other_than_if_any(&self, node: &str) -> Option<String> {
        let sql = format!("SELECT id FROM \"{}\".nodes WHERE id <> $1", self.schema);
        let row = self.client.query_opt(&sql, &[&node]).await.ok()??;
        Some(row.get(0))
    }

    /// The time of `node`'s last heartbeat (unix milliseconds).
    async fn beat_of(&self, node: &str) -> i64 {
        let sql = format!(
            "SELECT heartbeat_at FROM \"{}\".nodes WHERE id = $1",
            self.schema
        );
        self.client.query_one(&sql, &[&node]).await.unwrap().get(0)
    }
}

/// Node A alone, holding ten sends that `rx` leaves hanging.
struct Holding {
    doomed: Doomed,
    db: Beats,
    a_id: String,
    src: String,
    ids: Vec<String>,
}

impl Holding {
    async fn start(dir: &std::path::Path, schema: &str, rx: &Receiver, name: &str) -> Holding {
        rx.hang();
        // Node A waits up to two minutes for an answer, so its sends are
        // still in flight, and its leases (sized to outlast that) far from
        // ending, when it is killed.
        let mut config = pg_config(dir, schema);
        config.delivery.timeout_ms = 120_000;
        let (doomed, a) = Doomed::start(config).await;
        let db = Beats::connect(schema).await;
        // A is alone: the one row of the membership is its own.
        let a_id = eventually(15, || db.only_node()).await;
        let (src, key) = a.source(name).await;
        a.webhook(&src, json!([rx.url()]), Some("takeover-secret"))
            .await;
        let ids: Vec<String> = (0..10).map(|i| format!("{name}-{i}")).collect();
        let batch = json!({"batch": ids.iter()
            .map(|id| json!({"type": "track", "userId": "u", "event": "e", "messageId": id}))
            .collect::<Vec<_>>()});
        let (status, body) = a.collect("/v1/batch", Some(&key), batch.to_string()).await;
        assert_eq!(status, 200, "{body}");
        // Every delivery is leased to A and held by the receiver.
        rx.wait_for(ids.len(), Duration::from_secs(30)).await;
        Holding {
            doomed,
            db,
            a_id,
            src,
            ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_deliveries_are_delivered_by_the_other_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let rx = Receiver::start().await;
    let Holding {
        doomed,
        db,
        a_id,
        src,
        ids,
    } = Holding::start(dir.path(), &schema, &rx, "takeover").await;

    // Node B joins with the defaults and counts A: it has seen A alive.
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    eventually(15, || async {
        (metric(&b.metrics().await, "sluice_cluster_nodes") == 2.0).then_some(())
    })
    .await;
    assert_eq!(rx.requests().len(), ids.len(), "B took no leased delivery");
    rx.set_default(Reply::status(200));

    let beat = db.beat_of(&a_id).await;
    let a_beat = eventually(5, || async {
        let now = db.beat_of(&a_id).await;
        (now != beat).then_some(now)
    })
    .await;
    let killed = Instant::now();
    doomed.kill();
    let b_id = db.other_than(&a_id).await;
    let period = i64::try_from(HEARTBEAT.as_millis()).unwrap();
    let lag = (a_beat - db.beat_of(&b_id).await).rem_euclid(period);
    let lag = Duration::from_millis(u64::try_from(lag).unwrap());
    let after_kill = |id: &str| -> Vec<Instant> {
        rx.requests()
            .iter()
            .filter(|r| r.arrived > killed && r.header("x-sluice-message-id") == Some(id))
            .map(|r| r.arrived)
            .collect()
    };
    let last = eventually(30, || async {
        let firsts: Option<Vec<Instant>> = ids
            .iter()
            .map(|id| after_kill(id).first().copied())
            .collect();
        firsts?.into_iter().max()
    })
    .await;
    let takeover = last.duration_since(killed);
    let slowest = takeover + lag;
    eprintln!(
        "takeover: the killed node's deliveries were sent again {takeover:?} after the kill; \
         {slowest:?} with the slowest phase of the heartbeats (time-to-live {TTL:?}, \
         heartbeat {HEARTBEAT:?})"
    );
    assert!(
        takeover <= BUDGET + MARGIN && slowest <= BUDGET + MARGIN,
        "the killed node's deliveries took {takeover:?} to be sent again, \
         {slowest:?} with the slowest phase (budget {BUDGET:?})"
    );

    // Each was sent once by B, answered 200 and recorded as delivered; the
    // events A acknowledged are all stored.
    for id in &ids {
        let row = eventually(10, || async {
            let path = format!("/deliveries?message_id={id}");
            let (_, body) = b.admin(Method::GET, &path, None).await;
            let row = body["data"].as_array()?.first()?.clone();
            (row["state"] != json!("pending")).then_some(row)
        })
        .await;
        assert_eq!(row["state"], json!("succeeded"), "{row}");
        assert_eq!(after_kill(id).len(), 1, "{id} sent once after the kill");
    }
    let stored = b.events(&src).await;
    for id in &ids {
        assert!(
            stored.iter().any(|e| e["message_id"] == json!(id)),
            "{id} acknowledged and stored"
        );
    }
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_node_restarted_after_its_ttl_sends_what_it_held_within_ten_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let rx = Receiver::start().await;
    let Holding {
        doomed,
        db,
        a_id,
        ids,
        ..
    } = Holding::start(dir.path(), &schema, &rx, "restart").await;
    doomed.kill();
    rx.set_default(Reply::status(200));

    // The node comes back once its row is silent, as under a supervisor
    // that waits before restarting: it has a new id, and no node that
    // counted the old one is left to release its leases.
    // Timed from when it answers `/ready`: it has beaten by then, and
    // what it did before (opening the store, checking the schema) varies
    // with the machine's load.
    tokio::time::sleep(TTL + 2 * HEARTBEAT).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let started = Instant::now();
    // A new id: the restarted node cannot know its old one's leases.
    eventually(15, || db.other_than_if_any(&a_id)).await;
    let resent = |id: &str| {
        rx.requests()
            .iter()
            .filter(|r| r.arrived > started && r.header("x-sluice-message-id") == Some(id))
            .map(|r| r.arrived)
            .next()
    };
    let last = eventually(70, || async {
        let firsts: Option<Vec<Instant>> = ids.iter().map(|id| resent(id)).collect();
        firsts?.into_iter().max()
    })
    .await;
    let waited = last.duration_since(started);
    eprintln!("restart: the old node's deliveries were sent {waited:?} after it was ready");
    assert!(
        waited <= BUDGET + MARGIN,
        "the old node's deliveries waited {waited:?} after the restart (budget {BUDGET:?})"
    );
    b.stop().await;
}
