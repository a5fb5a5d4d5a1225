//! The Kafka shape: calls go through a real Apache Kafka broker to signed
//! webhooks, and only what fails on its first attempt enters PostgreSQL.
//! Needs `SLUICE_TEST_KAFKA_BOOTSTRAP` (scripts/kafka-test-server.sh start)
//! and `SLUICE_TEST_POSTGRES_URL`.

mod personas;

use std::time::Duration;

use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use crate::postgres::{pg_config, test_database, unique_schema};
use crate::support::{TestServer, eventually};

pub(super) fn kafka_config(dir: &std::path::Path) -> sluice_server::Config {
    let bootstrap = std::env::var("SLUICE_TEST_KAFKA_BOOTSTRAP").unwrap_or_else(|_| {
        panic!("SLUICE_TEST_KAFKA_BOOTSTRAP is not set: run scripts/kafka-test-server.sh start")
    });
    let schema = unique_schema();
    let mut config = pg_config(dir, &schema);
    config.kafka.bootstrap_servers = bootstrap;
    config.kafka.topic = format!("events-{schema}");
    config.kafka.delivery_group = format!("delivery-{schema}");
    config.kafka.partitions = 4;
    config.kafka.replication = 1;
    config.kafka.ack_timeout_ms = 15_000;
    config
}

fn ids(requests: &[sluice_testkit::RecordedRequest]) -> Vec<String> {
    let mut ids: Vec<String> = requests
        .iter()
        .filter_map(|r| r.header("x-sluice-message-id").map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_type_goes_through_kafka_to_each_url_once_leaving_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let config = kafka_config(dir.path());
    let schema = config.storage.postgres_schema.clone().unwrap();
    let server = TestServer::start_with(config).await;
    let (src, key) = server.source("kafka").await;
    let (a, b) = (Receiver::start().await, Receiver::start().await);
    server
        .webhook(&src, json!([a.url(), b.url()]), Some("kafka-secret-1"))
        .await;

    let singles = [
        (
            "/v1/track",
            json!({"userId": "u1", "event": "Signed Up", "messageId": "k-track"}),
        ),
        (
            "/v1/identify",
            json!({"userId": "u1", "traits": {"plan": "pro"}, "messageId": "k-identify"}),
        ),
        (
            "/v1/page",
            json!({"anonymousId": "a1", "name": "Home", "messageId": "k-page"}),
        ),
        (
            "/v1/screen",
            json!({"userId": "u2", "name": "Feed", "messageId": "k-screen"}),
        ),
        (
            "/v1/group",
            json!({"userId": "u2", "groupId": "g1", "messageId": "k-group"}),
        ),
        (
            "/v1/alias",
            json!({"userId": "u3", "previousId": "a1", "messageId": "k-alias"}),
        ),
        // Text the record holds with JSON escapes.
        (
            "/v1/track",
            json!({"userId": "u\"6\"", "event": "Said \"hi\"", "messageId": "k-\"quoted\"\\"}),
        ),
    ];
    for (path, body) in &singles {
        let (status, answer) = server.collect(path, Some(&key), body.to_string()).await;
        assert_eq!(status, 200, "{path}: {answer}");
    }
    let batch = json!({"batch": [
        {"type": "track", "userId": "u4", "event": "One", "messageId": "k-batch-1"},
        {"type": "track", "userId": "u5", "event": "Two", "messageId": "k-batch-2"},
        // Repeated within the batch: kept once.
        {"type": "track", "userId": "u5", "event": "Two", "messageId": "k-batch-2"},
    ]});
    let (status, answer) = server
        .collect("/v1/batch", Some(&key), batch.to_string())
        .await;
    assert_eq!(status, 200, "{answer}");

    let expected = {
        let mut ids: Vec<String> = singles
            .iter()
            .map(|(_, b)| b["messageId"].as_str().unwrap().to_owned())
            .chain(["k-batch-1".to_owned(), "k-batch-2".to_owned()])
            .collect();
        ids.sort();
        ids
    };
    for rx in [&a, &b] {
        rx.wait_for(expected.len(), Duration::from_secs(30)).await;
    }
    // Room for a second send, which must not come.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for rx in [&a, &b] {
        let got = rx.requests();
        assert_eq!(ids(&got), expected, "each call once per URL");
        for r in &got {
            assert_eq!(
                r.header("x-signature"),
                Some(sluice_signing::sign(b"kafka-secret-1", &r.body).as_str()),
                "signed with the destination's secret"
            );
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            let id = r.header("x-sluice-message-id").unwrap();
            assert_eq!(body["messageId"], id, "the call itself is the body");
        }
        let types: Vec<String> = got
            .iter()
            .map(|r| {
                serde_json::from_slice::<Value>(&r.body).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        for kind in ["track", "identify", "page", "screen", "group", "alias"] {
            assert!(
                types.iter().any(|t| t == kind),
                "{kind} delivered: {types:?}"
            );
        }
    }
    // Delivered on the first attempt: nothing of these calls in PostgreSQL.
    let (status, rows) = server
        .admin(reqwest::Method::GET, "/deliveries?limit=100", None)
        .await;
    assert_eq!(status, 200, "{rows}");
    assert_eq!(rows["data"], json!([]), "no delivery rows");
    assert_eq!(event_rows(&schema).await, 0, "no event rows");
    // The debugger reads the calls from the topic, newest first.
    let shown = server.events(&src).await;
    let mut shown_ids: Vec<String> = shown
        .iter()
        .map(|e| e["message_id"].as_str().unwrap().to_owned())
        .collect();
    // The batch came last; its two calls share one acceptance time.
    assert!(
        matches!(
            shown_ids.first().map(String::as_str),
            Some("k-batch-1" | "k-batch-2")
        ),
        "{shown_ids:?}"
    );
    assert!(
        shown
            .windows(2)
            .all(|w| w[0]["seq"].as_i64() > w[1]["seq"].as_i64()),
        "newest first: {shown:?}"
    );
    assert!(
        shown
            .iter()
            .all(|e| e["event"]["messageId"] == e["message_id"])
    );
    shown_ids.sort();
    assert_eq!(shown_ids, expected, "each call once");
    let (_, page) = server
        .admin(
            reqwest::Method::GET,
            &format!("/sources/{src}/events?limit=3"),
            None,
        )
        .await;
    let before = page["next_before"].as_i64().expect("a next page");
    let (_, rest) = server
        .admin(
            reqwest::Method::GET,
            &format!("/sources/{src}/events?limit=500&before={before}"),
            None,
        )
        .await;
    assert_eq!(
        rest["data"].as_array().map(Vec::len),
        Some(expected.len() - 3)
    );
    server.stop().await;
}

/// How many calls the schema's `events` table holds.
/// The source's usage for today (its only day here).
async fn usage_today(server: &TestServer, src: &str) -> Value {
    let (_, usage) = server
        .admin(reqwest::Method::GET, &format!("/sources/{src}/usage"), None)
        .await;
    usage["data"][0].clone()
}

async fn event_rows(schema: &str) -> i64 {
    let client = test_database().await;
    let sql = format!("SELECT count(*) FROM \"{schema}\".events");
    client.query_one(&sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_first_attempt_is_retried_from_postgres_until_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(kafka_config(dir.path())).await;
    let (src, key) = server.source("kafka-retry").await;
    let rx = Receiver::start().await;
    rx.push(Reply::status(503));
    server
        .webhook(&src, json!([rx.url()]), Some("kafka-secret-2"))
        .await;

    let call = json!({"userId": "u1", "event": "Retried", "messageId": "k-retry"});
    let (status, _) = server
        .collect("/v1/track", Some(&key), call.to_string())
        .await;
    assert_eq!(status, 200);

    let got = rx.wait_for(2, Duration::from_secs(30)).await;
    assert_eq!(ids(&got), vec!["k-retry".to_owned(), "k-retry".to_owned()]);
    assert_eq!(got[0].header("x-sluice-attempt"), Some("1"));
    assert_eq!(got[1].header("x-sluice-attempt"), Some("2"));
    // The retry state holds the delivery with both attempts.
    let row = eventually(10, || async {
        let (_, rows) = server
            .admin(reqwest::Method::GET, "/deliveries?message_id=k-retry", None)
            .await;
        let row = rows["data"].as_array()?.first()?.clone();
        (row["state"] == "succeeded").then_some(row)
    })
    .await;
    assert_eq!(row["attempts"], 2, "{row}");
    assert_eq!(row["source_id"], src.as_str());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 2, "no third send");
    // Counted once, from the topic: the hand-off to retry state is not
    // another accepted call.
    let today = eventually(15, || async {
        let today = usage_today(&server, &src).await;
        (today["api_calls"] == 1).then_some(today)
    })
    .await;
    assert_eq!(today["events"], 1, "{today}");
    // Room for a second count, which must not come.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(usage_today(&server, &src).await, today, "counted once");
    server.stop().await;
}

/// A call already in the log when its user is suppressed: appended here
/// straight to the topic, as ingest did before the regulation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_the_log_of_a_user_suppressed_since_is_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let config = kafka_config(dir.path());
    let (bootstrap, topic) = (
        config.kafka.bootstrap_servers.clone(),
        config.kafka.topic.clone(),
    );
    let server = TestServer::start_with(config).await;
    let (src, _key) = server.source("kafka-privacy").await;
    let rx = Receiver::start().await;
    let dest = server.webhook(&src, json!([rx.url()]), None).await;
    let id = crate::privacy::regulate(&server, "SUPPRESS_ONLY", &["gone"], None).await;
    crate::privacy::finished(&server, &id).await;

    let mut log = sluice_log::kafka::KafkaConfig::new(bootstrap, topic);
    log.ack_timeout = Duration::from_secs(15);
    let producer = sluice_log::kafka::LogProducer::new(&log).unwrap();
    let now = chrono::Utc::now();
    let records: Vec<sluice_log::LogEvent> = ["gone", "kept"]
        .iter()
        .map(|user| {
            let event = sluice_store::NewEvent {
                message_id: format!("k-{user}"),
                event_type: "track".into(),
                body: json!({"type": "track", "userId": user, "event": "Old",
                             "messageId": format!("k-{user}")})
                .to_string(),
                destination_ids: vec![dest.clone()],
                ..sluice_store::NewEvent::default()
            };
            sluice_log::LogEvent {
                source_id: src.clone(),
                person: (*user).to_owned(),
                message_id: event.message_id.clone(),
                received_at: now,
                payload: sluice_store::log_record::encode(&src, now, &event, Default::default())
                    .unwrap(),
            }
        })
        .collect();
    producer.append(&records).await.unwrap();

    let got = rx.wait_for(1, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(ids(&rx.requests()), vec!["k-kept".to_owned()], "{got:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_retry_of_a_call_already_in_the_log_is_delivered_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(kafka_config(dir.path())).await;
    let (src, key) = server.source("kafka-retries").await;
    let rx = Receiver::start().await;
    server.webhook(&src, json!([rx.url()]), None).await;

    let call = json!({"userId": "u1", "event": "Paid", "messageId": "k-once"}).to_string();
    for _ in 0..3 {
        let (status, _) = server.collect("/v1/track", Some(&key), call.clone()).await;
        assert_eq!(status, 200, "a retry is answered like the first call");
    }
    let other = json!({"userId": "u1", "event": "Paid", "messageId": "k-other"}).to_string();
    let (status, _) = server.collect("/v1/track", Some(&key), other).await;
    assert_eq!(status, 200);
    rx.wait_for(2, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        ids(&rx.requests()),
        vec!["k-once".to_owned(), "k-other".to_owned()]
    );
    // The memory behind it is on `/metrics`: two calls, in a table's bytes.
    let gauge = |metrics: &str, name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    let metrics = eventually(10, || async {
        let m = server.metrics().await;
        (gauge(&m, "sluice_kafka_dedup_calls ") == 2).then_some(m)
    })
    .await;
    assert!(
        gauge(&metrics, "sluice_kafka_dedup_memory_bytes ") >= 1024,
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_and_blocked_calls_are_counted_from_the_log_as_at_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(kafka_config(dir.path())).await;
    let (src, key) = server.source("kafka-usage").await;
    let rx = Receiver::start().await;
    server.webhook(&src, json!([rx.url()]), None).await;
    let (status, body) = server
        .put_rules(&src, json!({"blocked_events": ["Debug Ping"]}))
        .await;
    assert_eq!(status, 200, "{body}");

    let track = |event: &str, id: &str| json!({"userId": "u1", "event": event, "messageId": id});
    let batch = json!({"batch": [
        {"type": "track", "userId": "u1", "event": "Two", "messageId": "u-2"},
        {"type": "track", "userId": "u1", "event": "Two", "messageId": "u-2"},
        {"type": "track", "userId": "u1", "event": "Debug Ping", "messageId": "u-3"},
    ]});
    for (path, body) in [
        ("/v1/track", track("One", "u-1")),
        ("/v1/batch", batch),
        // A client's retry of the first call.
        ("/v1/track", track("One", "u-1")),
        ("/v1/track", track("Last", "u-4")),
    ] {
        let (status, answer) = server.collect(path, Some(&key), body.to_string()).await;
        assert_eq!(status, 200, "{answer}");
    }
    let got = rx.wait_for(3, Duration::from_secs(30)).await;
    assert_eq!(
        ids(&got),
        vec!["u-1", "u-2", "u-4"],
        "the blocked call is not sent"
    );

    // Four requests; four calls accepted (the blocked one too, as at
    // ingest); two repeats: one within the batch, one client retry.
    let today = eventually(15, || async {
        let today = usage_today(&server, &src).await;
        (today["api_calls"] == 4).then_some(today)
    })
    .await;
    assert_eq!(today["events"], 4, "{today}");
    assert_eq!(today["duplicates"], 2, "{today}");
    assert_eq!(today["blocked"], 1, "{today}");
    assert_eq!(today["blocked_events"], json!({"Debug Ping": 1}));

    // The debugger shows the blocked call, marked.
    let shown = server.events(&src).await;
    let blocked = shown
        .iter()
        .find(|e| e["message_id"] == "u-3")
        .expect("the blocked call is shown");
    assert_eq!(blocked["blocked_by"], "blocked_events");
    assert_eq!(rx.requests().len(), 3, "nothing sent twice");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_reach_the_webhook_with_the_brokers_over_sasl_ssl() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = kafka_config(dir.path());
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: see scripts/test"))
    };
    config.kafka.bootstrap_servers = var("SLUICE_TEST_KAFKA_TLS_BOOTSTRAP");
    config.kafka.security_protocol = "sasl_ssl".into();
    config.kafka.ssl_ca_location = Some(var("SLUICE_TEST_KAFKA_CA"));
    config.kafka.sasl_mechanism = "SCRAM-SHA-256".into();
    config.kafka.sasl_username = Some("sluice".into());
    config.kafka.sasl_password = Some("sluice-test-secret".into());
    let server = TestServer::start_with(config).await;
    let (src, key) = server.source("kafka-tls").await;
    let rx = Receiver::start().await;
    server
        .webhook(&src, json!([rx.url()]), Some("kafka-secret-tls"))
        .await;
    for i in 0..3 {
        let call = json!({"userId": "u1", "event": "Paid", "messageId": format!("tls-{i}")});
        let (status, answer) = server
            .collect("/v1/track", Some(&key), call.to_string())
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    rx.wait_for(3, Duration::from_secs(30)).await;
    assert_eq!(ids(&rx.requests()), ["tls-0", "tls-1", "tls-2"]);
    server.stop().await;
}
