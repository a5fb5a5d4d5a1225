//! The service on PostgreSQL, two nodes sharing one database: what one node
//! accepts is delivered once, and what one node configures the other serves.
//! Needs `SLUICE_TEST_POSTGRES_URL` (scripts/postgres-test-server.sh start).

use std::time::Duration;

use serde_json::json;
use sluice_server::config::StorageBackend;
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

pub(crate) fn pg_config(dir: &std::path::Path, schema: &str) -> sluice_server::Config {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("SLUICE_TEST_POSTGRES_URL is not set: run scripts/postgres-test-server.sh start")
    });
    let mut config = test_config(dir);
    config.storage.backend = StorageBackend::Postgres;
    config.storage.postgres_url = Some(url);
    config.storage.postgres_schema = Some(schema.to_owned());
    config
}

/// A client of the test database, for reading a schema's tables directly.
pub(crate) async fn test_database() -> tokio_postgres::Client {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL").unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connecting to the test database");
    tokio::spawn(connection);
    client
}

/// Two nodes started on `config`, once each counts both (their heartbeats
/// have crossed).
pub(crate) async fn two_nodes(
    config: impl Fn() -> sluice_server::Config,
) -> (TestServer, TestServer) {
    let a = TestServer::start_with(config()).await;
    let b = TestServer::start_with(config()).await;
    both_count_two(&a, &b).await;
    (a, b)
}

/// Waits until each of `a` and `b` counts both (their heartbeats crossed).
async fn both_count_two(a: &TestServer, b: &TestServer) {
    for node in [a, b] {
        eventually(15, || async {
            let metrics = node.metrics().await;
            (crate::support::metric(&metrics, "sluice_cluster_nodes") == 2.0).then_some(())
        })
        .await;
    }
}

/// A source on `node` with a webhook to a new receiver that answers 200
/// after `delay`: the source's id and write key, and the receiver.
async fn slow_webhook(node: &TestServer, delay: Duration) -> (String, String, Receiver) {
    let (src, key) = node.source("shared").await;
    let rx = Receiver::start().await;
    rx.set_default(sluice_testkit::Reply::status(200).delay(delay));
    node.webhook(&src, json!([rx.url()]), None).await;
    (src, key, rx)
}

/// A schema name of its own for one test's nodes.
pub(crate) fn unique_schema() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("sluice_it_{}_{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_sources_and_deliver_each_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;

    let (src, key) = a.source("shared").await;
    let rx = Receiver::start().await;
    a.webhook(&src, json!([rx.url()]), Some("pg-secret-123"))
        .await;

    // Node B learns of the source and its destination within its routing
    // refresh. Routing happens at ingest, so B is ready once a probe it
    // accepted reaches the receiver (a delivery handed to B's engine has
    // no row until its outcome, so the delivery log is no earlier sign).
    let call = |id: String| json!({"userId": "u", "event": "e", "messageId": id}).to_string();
    let probed = || {
        rx.requests().iter().any(|r| {
            r.header("x-sluice-message-id")
                .is_some_and(|m| m.starts_with("probe-"))
        })
    };
    let mut probe = 0;
    eventually(15, || {
        probe += 1;
        let id = format!("probe-{probe}");
        let (b, key, call, probed) = (&b, &key, &call, &probed);
        async move {
            if b.collect("/v1/track", Some(key), call(id)).await.0 != 200 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            probed().then_some(())
        }
    })
    .await;
    for i in 0..50 {
        let node = if i % 2 == 0 { &a } else { &b };
        assert_eq!(
            node.collect("/v1/track", Some(&key), call(format!("pg-{i}")))
                .await
                .0,
            200
        );
    }
    // Both nodes run delivery workers; leases mean each event is sent once.
    let ours = || -> Vec<sluice_testkit::RecordedRequest> {
        rx.requests()
            .into_iter()
            .filter(|r| {
                r.header("x-sluice-message-id")
                    .is_some_and(|m| m.starts_with("pg-"))
            })
            .collect()
    };
    eventually(20, || async { (ours().len() >= 50).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = ours();
    let mut ids: Vec<&str> = got
        .iter()
        .filter_map(|r| r.header("x-sluice-message-id"))
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50, "every event delivered");
    assert_eq!(got.len(), 50, "and none twice");
    assert!(got.iter().all(|r| r.header("x-signature")
        == Some(sluice_signing::sign(b"pg-secret-123", &r.body).as_str())));
    let stored = b.events(&src).await;
    let ours_stored = stored
        .iter()
        .filter(|e| {
            e["message_id"]
                .as_str()
                .is_some_and(|m| m.starts_with("pg-"))
        })
        .count();
    assert_eq!(ours_stored, 50, "both nodes read the same store");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_set_on_one_node_blocks_on_the_other_and_schema_merges() {
    let dir = tempfile::tempdir().unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_it_rules_{}_{nanos}", std::process::id());
    let fast = |dir: &std::path::Path| {
        let mut c = pg_config(dir, &schema);
        c.schema.flush_interval_ms = 50;
        c
    };
    let a = TestServer::start_with(fast(dir.path())).await;
    let b = TestServer::start_with(fast(dir.path())).await;
    let (src, key) = a.source("shared").await;
    let call =
        |event: &str, id: &str| json!({"userId": "u", "event": event, "messageId": id}).to_string();
    // B serves the source once its routing table has it.
    eventually(10, || async {
        (b.collect("/v1/track", Some(&key), call("Warm Up", "warm"))
            .await
            .0
            == 200)
            .then_some(())
    })
    .await;

    let (status, body) = a
        .put_rules(&src, json!({"blocked_events": ["Debug Ping"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    // B blocks within its refresh interval (500 ms): a probe sent a few
    // seconds at most after the change is stored marked as blocked.
    let mut n = 0;
    eventually(3, || {
        n += 1;
        let id = format!("ping-{n}");
        let (b, key, src) = (&b, &key, &src);
        let body = call("Debug Ping", &id);
        async move {
            assert_eq!(b.collect("/v1/track", Some(key), body).await.0, 200);
            let events = b.events(src).await;
            let e = events.iter().find(|e| e["message_id"] == json!(id))?;
            (e["blocked_by"] == json!("blocked_events")).then_some(())
        }
    })
    .await;

    // Both nodes observe; the schema is one, in the shared database.
    assert_eq!(
        a.collect("/v1/track", Some(&key), call("Warm Up", "warm-a"))
            .await
            .0,
        200
    );
    eventually(10, || async {
        let (_, page) = a
            .admin(
                reqwest::Method::GET,
                &format!("/sources/{src}/schema?kind=track"),
                None,
            )
            .await;
        let warm = page["data"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == json!("Warm Up"))?
            .clone();
        (warm["volume_24h"].as_u64()? >= 2).then_some(())
    })
    .await;
    a.stop().await;
    b.stop().await;
}

/// Computed traits on two nodes: one node computes at a time (the lease),
/// each change arrives once, and the other node takes over when the first
/// stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_compute_each_trait_change_once_and_hand_over() {
    let dir = tempfile::tempdir().unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_it_p_{}_{nanos}", std::process::id());
    let config = || {
        let mut c = pg_config(dir.path(), &schema);
        c.personas.poll_interval_ms = 20;
        c.personas.lease_ttl_secs = 2;
        c
    };
    let a = TestServer::start_with(config()).await;
    let b = TestServer::start_with(config()).await;
    let (_src, key) = a.source("app").await;
    let (quiet, _) = a.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = a.webhook(&quiet, json!([rx.url()]), None).await;
    let (status, body) = a
        .admin(
            reqwest::Method::POST,
            "/computed-traits",
            Some(json!({"name": "Clicks", "destination_ids": [dest],
                        "definition": {"kind": "counter", "event": "Click"}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Routing of the new source reaches node B within its refresh interval.
    eventually(15, || async {
        let call = json!({"userId": "probe", "event": "Probe"}).to_string();
        (b.collect("/v1/track", Some(&key), call).await.0 == 200).then_some(())
    })
    .await;
    for i in 0..20 {
        let node = if i % 2 == 0 { &a } else { &b };
        let call = json!({"userId": format!("u{}", i % 5), "event": "Click"}).to_string();
        assert_eq!(node.collect("/v1/track", Some(&key), call).await.0, 200);
    }
    let seen = |rx: &Receiver| -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = rx
            .requests()
            .iter()
            .filter_map(|r| {
                let b: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
                Some((
                    b["userId"].as_str()?.to_owned(),
                    b["traits"]["clicks"].as_i64()?,
                ))
            })
            .collect();
        v.sort();
        v
    };
    eventually(20, || async {
        (seen(&rx).iter().filter(|(_, n)| *n == 4).count() == 5).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = seen(&rx);
    let mut unique = got.clone();
    unique.dedup();
    assert_eq!(got, unique, "no change sent twice");
    // Changes of one person inside one engine step are coalesced, so some
    // intermediate counts may be skipped; the final count arrives once each.
    assert_eq!(got.iter().filter(|(_, n)| *n == 4).count(), 5);

    // Node A stops; node B carries on.
    a.stop().await;
    let call = json!({"userId": "u0", "event": "Click"}).to_string();
    assert_eq!(b.collect("/v1/track", Some(&key), call).await.0, 200);
    eventually(20, || async {
        seen(&rx).contains(&("u0".to_string(), 5)).then_some(())
    })
    .await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_a_node_accepts_are_sent_by_it_without_a_claim() {
    let dir = tempfile::tempdir().unwrap();
    let node = TestServer::start_with(pg_config(dir.path(), &unique_schema())).await;
    crate::webhooks::calls_go_from_ingest_to_the_engine(&node).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_key_created_on_one_node_is_good_on_the_other_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let call = json!({"userId": "u", "event": "e"}).to_string();
    // Several sources, each used on B the moment A answers: B's routing
    // refresh (every 500 ms) cannot have run for most of them.
    for i in 0..5 {
        let (_, key) = a.source(&format!("new-{i}")).await;
        let (status, body) = b.collect("/v1/track", Some(&key), call.clone()).await;
        assert_eq!(
            status, 200,
            "key of source {i} refused by the other node: {body}"
        );
    }
    let (status, body) = b
        .collect("/v1/track", Some("not-a-key-of-anyone"), call.clone())
        .await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_one_destinations_concurrency_limit() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let config = || {
        let mut config = pg_config(dir.path(), &schema);
        config.delivery.concurrency_per_destination = 4;
        config.delivery.timeout_ms = 5_000;
        config
    };
    let (a, b) = two_nodes(config).await;
    // Every request is answered after 1.5 s: until then each holds a slot.
    let (_, key, rx) = slow_webhook(&a, Duration::from_millis(1_500)).await;
    let call = |i: usize| json!({"userId": "u", "event": "e", "messageId": format!("c-{i}")});
    eventually(15, || async {
        (b.collect("/v1/track", Some(&key), call(1000).to_string())
            .await
            .0
            == 200)
            .then_some(())
    })
    .await;
    for i in 0..40 {
        let node = if i % 2 == 0 { &a } else { &b };
        let (status, _) = node
            .collect("/v1/track", Some(&key), call(i).to_string())
            .await;
        assert_eq!(status, 200);
    }
    let got = rx.wait_for(8, Duration::from_secs(30)).await;
    let first = got.iter().map(|r| r.arrived).min().expect("requests");
    // No slot comes back before the first answer, 1.5 s after the first
    // request: whatever arrived before then was sent at once.
    let at_once = got
        .iter()
        .filter(|r| r.arrived.duration_since(first) < Duration::from_millis(1_400))
        .count();
    assert!(
        at_once <= 4,
        "{at_once} requests in flight at once; the deployment's limit is 4"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_signed_out_on_one_node_is_refused_by_the_other() {
    use crate::dashboard::session_cookie;
    use crate::dashboard_sessions::{accepted, sign_out};
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let cookie = session_cookie(&a).await;
    assert!(accepted(&b, &cookie).await, "one key signs for both nodes");
    sign_out(&a, &cookie).await;
    assert!(!accepted(&b, &cookie).await);
    a.stop().await;
    b.stop().await;
}

/// A client that missed node A's answer resends its batch through node B:
/// the check is in the shared database, so each message arrives once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_resent_through_another_node_is_delivered_once() {
    let dir = tempfile::tempdir().unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_dd_{}_{nanos}", std::process::id());
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let (src, key) = a.source("shared").await;
    let rx = Receiver::start().await;
    a.webhook(&src, json!([rx.url()]), None).await;
    let batch = json!({"batch": (0..3)
        .map(|i| json!({"type": "track", "userId": "u", "event": "e",
                        "messageId": format!("pg-dup-{i}")}))
        .collect::<Vec<_>>()})
    .to_string();
    assert_eq!(
        a.collect("/v1/batch", Some(&key), batch.clone()).await.0,
        200
    );
    // Node B knows the write key within its routing refresh.
    eventually(15, || async {
        (b.collect("/v1/batch", Some(&key), batch.clone()).await.0 == 200).then_some(())
    })
    .await;
    let ours = || {
        rx.requests()
            .iter()
            .filter(|r| {
                r.header("x-sluice-message-id")
                    .is_some_and(|m| m.starts_with("pg-dup-"))
            })
            .count()
    };
    eventually(15, || async { (ours() >= 3).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(ours(), 3, "each message delivered once");
    assert_eq!(a.events(&src).await.len(), 3, "stored once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stopping_cleanly_finishes_its_sends_and_no_other_node_repeats_them() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let config = || {
        let mut config = pg_config(dir.path(), &schema);
        config.delivery.timeout_ms = 5_000;
        config
    };
    let (a, b) = two_nodes(config).await;
    // Answered 2 s after it arrives: node A is still sending when it stops.
    let (_, key, rx) = slow_webhook(&a, Duration::from_secs(2)).await;
    let call = json!({"userId": "u", "event": "e", "messageId": "in-flight"}).to_string();
    assert_eq!(a.collect("/v1/track", Some(&key), call).await.0, 200);
    rx.wait_for(1, Duration::from_secs(10)).await;

    // A finishes the send (within its shutdown grace) before it leaves;
    // B, beating every second, would release and resend it had A left
    // while the send was in flight.
    a.stop().await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let got = rx.requests();
    assert_eq!(got.len(), 1, "sent {} times", got.len());
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_cut_short_by_a_clean_stop_is_sent_by_the_other_node() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let config = || {
        let mut config = pg_config(dir.path(), &schema);
        config.delivery.timeout_ms = 60_000;
        config
    };
    // A runs alone when the call comes, so A sends it, handed at ingest or
    // claimed. The send is never answered while A runs: its shutdown grace
    // (10 s) ends with the send still open, and the delivery stays A's.
    let a = TestServer::start_with(config()).await;
    let (_, key, rx) = slow_webhook(&a, Duration::from_secs(600)).await;
    let call = json!({"userId": "u", "event": "e", "messageId": "cut-short"}).to_string();
    assert_eq!(a.collect("/v1/track", Some(&key), call).await.0, 200);
    rx.wait_for(1, Duration::from_secs(10)).await;
    let b = TestServer::start_with(config()).await;
    both_count_two(&a, &b).await;
    rx.set_default(sluice_testkit::Reply::status(200));

    a.stop().await;
    let stopped = std::time::Instant::now();
    // A left the membership: a delivery handed without a row was written
    // free as A left, and a claimed one B releases at its next beat (later
    // when B's own beats lag on a loaded machine, but long before the
    // lease would end).
    rx.wait_for(2, Duration::from_secs(30)).await;
    eprintln!("sent again {:?} after the stop", stopped.elapsed());
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_node_releases_the_deliveries_it_never_started() {
    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let mut config = pg_config(dir.path(), &schema);
    // One send at a time, each answered after 1.5 s: the other calls wait
    // in the destination's lane, leased, when the node stops.
    config.delivery.concurrency_per_destination = 1;
    config.delivery.timeout_ms = 5_000;
    let node = TestServer::start_with(config).await;
    let (_, key, rx) = slow_webhook(&node, Duration::from_millis(1_500)).await;
    for i in 0..3 {
        let call = json!({"userId": "u", "event": "e", "messageId": format!("q-{i}")});
        let (status, _) = node
            .collect("/v1/track", Some(&key), call.to_string())
            .await;
        assert_eq!(status, 200);
    }
    rx.wait_for(1, Duration::from_secs(10)).await;
    node.stop().await;

    let db = test_database().await;
    let sql = format!(
        "SELECT count(*) FILTER (WHERE state = 'succeeded'),
                count(*) FILTER (WHERE state = 'pending' AND lease_until IS NULL),
                count(*) FILTER (WHERE state = 'pending' AND lease_until IS NOT NULL)
         FROM \"{schema}\".deliveries"
    );
    let row = db.query_one(&sql, &[]).await.expect("deliveries");
    let (sent, free, leased): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(
        (sent, free, leased),
        (1, 2, 0),
        "the send in flight ends; the two waiting are free for any node"
    );
}

/// Both nodes reach the database through a relay that cuts them off for
/// 12 s, longer than the membership's time-to-live, while every call is
/// in flight: each node's row goes stale, though both are alive, and
/// neither may take the other's deliveries and send them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_longer_than_the_ttl_sends_nothing_twice() {
    use sluice_testkit::{Relay, relay};

    let url = std::env::var("SLUICE_TEST_POSTGRES_URL").expect("SLUICE_TEST_POSTGRES_URL");
    let relay = Relay::start(relay::postgres_server(&url)).await;
    let through = relay::postgres_url_through(&url, relay.addr());

    let dir = tempfile::tempdir().unwrap();
    let schema = unique_schema();
    let config = || {
        let mut config = pg_config(dir.path(), &schema);
        config.storage.postgres_url = Some(through.clone());
        config.delivery.timeout_ms = 5_000;
        config
    };
    let (a, b) = two_nodes(config).await;
    // Answered 2 s after arriving: the outcomes are not written yet when
    // the database goes.
    let (_, key, rx) = slow_webhook(&a, Duration::from_secs(2)).await;
    eventually(15, || async {
        let call = json!({"userId": "u", "event": "e", "messageId": "probe"}).to_string();
        (b.collect("/v1/track", Some(&key), call).await.0 == 200).then_some(())
    })
    .await;
    for i in 0..20 {
        let node = if i % 2 == 0 { &a } else { &b };
        let call = json!({"userId": "u", "event": "e", "messageId": format!("o-{i}")});
        assert_eq!(
            node.collect("/v1/track", Some(&key), call.to_string())
                .await
                .0,
            200
        );
    }
    rx.wait_for(21, Duration::from_secs(10)).await;

    relay.cut();
    tokio::time::sleep(Duration::from_secs(12)).await;
    relay.restore();
    // Several beats after the database is back: a node that took the
    // other for gone would have released and sent its deliveries by now.
    tokio::time::sleep(Duration::from_secs(6)).await;

    let mut ids: Vec<String> = rx
        .requests()
        .iter()
        .filter_map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
            body["messageId"].as_str().map(str::to_owned)
        })
        .collect();
    ids.sort();
    let before = ids.len();
    ids.dedup();
    assert_eq!(
        (before, ids.len()),
        (21, 21),
        "calls sent twice after the outage"
    );
}
