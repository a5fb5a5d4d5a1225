//! The Kafka shape under failure, on real nodes and real brokers:
//! - one of two nodes on a three-broker cluster is killed (`kill -9`) while
//!   it delivers, and every call either node acknowledged still reaches the
//!   webhook, from the other node once the group moves the dead node's
//!   partitions; the profile engine's partitions move with their leases,
//!   and every call counts once in a computed trait;
//! - one broker of a three-broker cluster (replication 3,
//!   `min.insync.replicas` 2) is killed under load, and every call the
//!   node acknowledged is still delivered;
//! - a node reaching the brokers over SASL_SSL never logs their password.
//!
//! Needs `SLUICE_TEST_KAFKA_BOOTSTRAP`, `SLUICE_TEST_KAFKA_TLS_BOOTSTRAP`,
//! `SLUICE_TEST_KAFKA_CA` and `SLUICE_TEST_POSTGRES_URL`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use crate::process::{Sluice, admin, basic, post_batch, read_log, start, start_with_log_file};

const BATCHES: usize = 40;
const PER_BATCH: usize = 25;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: see scripts/test"))
}

async fn send(node: &Sluice, auth: &str, batch: usize) -> bool {
    let calls: Vec<Value> = (0..PER_BATCH)
        .map(|i| {
            json!({"type": "track", "userId": format!("u{i}"), "event": "Paid",
                   "messageId": format!("b{batch}-{i}")})
        })
        .collect();
    post_batch(&node.base, auth, calls).await == Some(200)
}

/// Creates a source with a Webhooks destination posting to `rx`; returns
/// the source's `Authorization` value.
async fn hooked_source(base: &str, rx: &Receiver) -> String {
    let src = admin(
        base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "app"})),
    )
    .await;
    let hook = json!({"name": "hook", "type": "Webhooks", "source_ids": [src["id"]],
                      "settings": {"urls": [rx.url()]}});
    admin(base, reqwest::Method::POST, "/destinations", Some(hook)).await;
    basic(src["write_key"].as_str().unwrap())
}

/// A computed trait counting each person's `Paid` calls, sent to `rx`
/// through a destination of a source of its own.
async fn paid_trait(base: &str, rx: &Receiver) {
    let quiet = admin(
        base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "traits"})),
    )
    .await;
    let hook = json!({"name": "traits", "type": "Webhooks", "source_ids": [quiet["id"]],
                      "settings": {"urls": [rx.url()]}});
    let hook = admin(base, reqwest::Method::POST, "/destinations", Some(hook)).await;
    let paid = json!({"name": "Paid", "destination_ids": [hook["id"]],
                      "definition": {"kind": "counter", "event": "Paid"}});
    admin(base, reqwest::Method::POST, "/computed-traits", Some(paid)).await;
}

/// The newest `paid` each person was sent.
fn paid_sent(rx: &Receiver) -> HashMap<String, i64> {
    let mut newest: HashMap<String, i64> = HashMap::new();
    for r in rx.requests() {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
        if let (Some(user), Some(n)) = (body["userId"].as_str(), body["traits"]["paid"].as_i64()) {
            let at = newest.entry(user.to_owned()).or_default();
            *at = (*at).max(n);
        }
    }
    newest
}

/// A Kafka-shape node's settings on the test broker, with a schema, topic
/// and consumer group of the test's own (8 partitions, replication 1), or
/// on a three-broker [`Cluster`] (replication 3).
struct Shape {
    url: String,
    bootstrap: String,
    name: String,
    topic: String,
    replication: &'static str,
}

impl Shape {
    fn new(prefix: &str) -> Shape {
        Shape::on(prefix, var("SLUICE_TEST_KAFKA_BOOTSTRAP"), "1")
    }

    fn on_cluster(prefix: &str, cluster: &Cluster) -> Shape {
        Shape::on(prefix, cluster.bootstrap.clone(), "3")
    }

    fn on(prefix: &str, bootstrap: String, replication: &'static str) -> Shape {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("sluice_it_{prefix}_{}_{nanos}", std::process::id());
        Shape {
            url: var("SLUICE_TEST_POSTGRES_URL"),
            bootstrap,
            topic: format!("events-{name}"),
            name,
            replication,
        }
    }

    /// The environment of a node, with `extra` added.
    fn env<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut env = vec![
            ("SLUICE_STORAGE__BACKEND", "postgres"),
            ("SLUICE_STORAGE__POSTGRES_URL", self.url.as_str()),
            ("SLUICE_STORAGE__POSTGRES_SCHEMA", self.name.as_str()),
            ("SLUICE_KAFKA__BOOTSTRAP_SERVERS", self.bootstrap.as_str()),
            ("SLUICE_KAFKA__TOPIC", self.topic.as_str()),
            ("SLUICE_KAFKA__DELIVERY_GROUP", self.name.as_str()),
            ("SLUICE_KAFKA__PARTITIONS", "8"),
            ("SLUICE_KAFKA__REPLICATION", self.replication),
            ("SLUICE_KAFKA__ACK_TIMEOUT_MS", "15000"),
        ];
        env.extend_from_slice(extra);
        env
    }
}

/// How often each `x-sluice-message-id` reached `rx` so far.
fn counts(rx: &Receiver) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for r in rx.requests() {
        if let Some(id) = r.header("x-sluice-message-id") {
            *counts.entry(id.to_owned()).or_default() += 1;
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_delivering_node_loses_no_acknowledged_call() {
    let turn = CLUSTER_TURN.lock().await;
    let cluster = tokio::task::spawn_blocking(Cluster::start).await.unwrap();
    let shape = Shape::on_cluster("kafka", &cluster);
    // Engine leases that lapse soon after the kill.
    let env = shape.env(&[("SLUICE_PERSONAS__LEASE_TTL_SECS", "5")]);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(dir_a.path(), &env).await;
    let b = start(dir_b.path(), &env).await;
    // Slow enough that sends are in flight when the node dies.
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(200).delay(Duration::from_millis(20)));
    let auth = hooked_source(&a.base, &rx).await;
    let traits = Receiver::start().await;
    paid_trait(&a.base, &traits).await;
    // B routes to the destination once its routing table has it, and the
    // group delivers once its partitions are assigned (a rebalance can take
    // seconds): probes, each a call of its own, until one is delivered.
    let started = Instant::now();
    let mut probes = 0;
    loop {
        probes += 1;
        let probe =
            json!({"userId": "p", "event": "Probe", "messageId": format!("probe-{probes}")});
        let r = reqwest::Client::new()
            .post(format!("{}/v1/track", b.base))
            .header("authorization", &auth)
            .body(probe.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        if rx.try_wait_for(1, Duration::from_secs(2)).await.is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no delivery from the group"
        );
    }

    let mut acknowledged = Vec::new();
    for batch in 0..BATCHES {
        // The first half alternates; A is killed half-way, B takes the rest.
        if batch == BATCHES / 2 {
            a.child.start_kill().expect("SIGKILL");
            a.child.wait().await.expect("reap");
        }
        let node = if batch < BATCHES / 2 && batch % 2 == 0 {
            &a
        } else {
            &b
        };
        if send(node, &auth, batch).await {
            acknowledged.extend((0..PER_BATCH).map(|i| format!("b{batch}-{i}")));
        }
    }
    assert_eq!(
        acknowledged.len(),
        BATCHES * PER_BATCH,
        "every batch acknowledged"
    );

    // The group notices A's death after its session timeout (10 s) and
    // hands its partitions to B, which resumes at their committed offsets.
    let started = Instant::now();
    let missing = loop {
        let got = counts(&rx);
        let missing: Vec<&String> = acknowledged
            .iter()
            .filter(|id| !got.contains_key(*id))
            .collect();
        if missing.is_empty() || started.elapsed() > Duration::from_secs(90) {
            break missing.len();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(missing, 0, "acknowledged calls never delivered");
    let sent_again: usize = counts(&rx)
        .iter()
        .filter(|(id, _)| id.starts_with('b'))
        .map(|(_, n)| n - 1)
        .sum();
    eprintln!(
        "kafka kill -9: {} calls acknowledged, 0 lost, {sent_again} sent twice",
        acknowledged.len()
    );
    // A call is sent twice only when A read it and B read it again after
    // the kill: so only calls accepted before the kill.
    let batch_of = |id: &str| {
        id.strip_prefix('b')
            .and_then(|rest| rest.split('-').next())
            .and_then(|n| n.parse::<usize>().ok())
    };
    let late: Vec<String> = counts(&rx)
        .into_iter()
        .filter(|(id, n)| *n > 1 && batch_of(id).is_some_and(|b| b >= BATCHES / 2))
        .map(|(id, _)| id)
        .collect();
    assert!(
        late.is_empty(),
        "only calls the dead node could have read are sent twice: {late:?}"
    );

    // Every client retries every call. B drops them all: the keys of the
    // calls A committed were saved with its commits, and B loaded them with
    // A's partitions. A last call per person, behind the retries in each
    // partition, says when B has read them.
    let before = counts(&rx);
    for batch in 0..BATCHES {
        assert!(send(&b, &auth, batch).await, "retry acknowledged");
    }
    let last: Vec<Value> = (0..PER_BATCH)
        .map(|i| {
            json!({"type": "track", "userId": format!("u{i}"), "event": "Last",
                        "messageId": format!("last-{i}")})
        })
        .collect();
    assert_eq!(post_batch(&b.base, &auth, last).await, Some(200));
    let started = Instant::now();
    while (0..PER_BATCH).any(|i| !counts(&rx).contains_key(&format!("last-{i}"))) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the last calls arrive"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = counts(&rx);
    let retried: usize = acknowledged
        .iter()
        .map(|id| after.get(id).copied().unwrap_or(0) - before.get(id).copied().unwrap_or(0))
        .sum();
    eprintln!(
        "kafka kill -9: {retried} of {} client retries delivered",
        acknowledged.len()
    );
    assert_eq!(retried, 0, "a retry of a call delivered before is dropped");

    // Usage counts each call once, whichever node read it and however
    // often: the probes, the batches, their retries and the last calls.
    let expected = json!({
        "api_calls": probes + 2 * BATCHES + 1,
        "events": probes + acknowledged.len() + PER_BATCH,
        "duplicates": acknowledged.len(),
    });
    let started = Instant::now();
    let mut counted = usage(&b).await;
    while counted != expected && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        counted = usage(&b).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(usage(&b).await, expected, "usage counts each call once");

    // The profile engine read every call once: the dead node's engine
    // partitions moved to B with their leases, at the positions A had
    // committed with its profiles. Each person paid once per batch.
    let started = Instant::now();
    let want: HashMap<String, i64> = (0..PER_BATCH)
        .map(|i| (format!("u{i}"), i64::try_from(BATCHES).unwrap()))
        .collect();
    while paid_sent(&traits) != want && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(paid_sent(&traits), want, "each call counted once");
    for i in 0..PER_BATCH {
        let profile = admin(
            &b.base,
            reqwest::Method::GET,
            &format!("/profiles/u{i}"),
            None,
        )
        .await;
        assert_eq!(
            profile["computed_traits"]["paid"],
            json!(BATCHES),
            "u{i}: {profile}"
        );
    }
    drop((b, cluster));
    drop(turn);
}

/// The one source's usage, summed over its days.
async fn usage(node: &Sluice) -> Value {
    let sources = admin(&node.base, reqwest::Method::GET, "/sources", None).await;
    let id = sources["data"][0]["id"].as_str().unwrap().to_owned();
    let days = admin(
        &node.base,
        reqwest::Method::GET,
        &format!("/sources/{id}/usage"),
        None,
    )
    .await;
    let sum = |field: &str| -> u64 {
        days["data"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d[field].as_u64().unwrap_or(0))
            .sum()
    };
    json!({"api_calls": sum("api_calls"), "events": sum("events"), "duplicates": sum("duplicates")})
}

/// A second node joins a node busy with a backlog: the group moves half the
/// partitions to it, every acknowledged call is delivered, and the calls
/// sent twice are at most the requests the first node had on the wire
/// (its concurrency for the destination, 32). The first batch's calls, one
/// or more in every partition, take 10 s to answer, so each partition's
/// committed offset is held back by a call in flight while the calls after
/// it finish: the first node hands over, beside the offset, which of those
/// are finished, and the second skips them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_joining_under_load_resends_at_most_the_calls_in_flight() {
    const LANES: usize = 32;
    let shape = Shape::new("join");
    let lanes = LANES.to_string();
    let env = shape.env(&[
        (
            "SLUICE_DELIVERY__CONCURRENCY_PER_DESTINATION",
            lanes.as_str(),
        ),
        // The slow answers below must not time out (and be sent again).
        ("SLUICE_DELIVERY__TIMEOUT_MS", "60000"),
        (
            "SLUICE_LOG",
            "warn,sluice_log=info,sluice_server::kafka=info",
        ),
    ]);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, log_a) = start_with_log_file(dir_a.path(), &env).await;
    // 7 at a time while the first batch's 25 are outstanding, 100 ms
    // each, so the backlog lasts well past the second node's arrival.
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(200).delay(Duration::from_millis(100)));
    for i in 0..PER_BATCH {
        let slow = Reply::status(200).delay(Duration::from_secs(10));
        rx.reply_when("x-sluice-message-id", &format!("b0-{i}"), slow);
    }
    let auth = hooked_source(&a.base, &rx).await;
    const JOIN_BATCHES: usize = 120;
    let mut acknowledged = Vec::new();
    for batch in 0..JOIN_BATCHES {
        assert!(send(&a, &auth, batch).await, "batch acknowledged");
        acknowledged.extend((0..PER_BATCH).map(|i| format!("b{batch}-{i}")));
    }
    let (b, log_b) = start_with_log_file(dir_b.path(), &env).await;
    let at_join = counts(&rx).len();
    let started = Instant::now();
    let missing = loop {
        let got = counts(&rx);
        let missing = acknowledged
            .iter()
            .filter(|id| !got.contains_key(*id))
            .count();
        if missing == 0 || started.elapsed() > Duration::from_secs(120) {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(missing, 0, "acknowledged calls never delivered");
    let sent_again: usize = counts(&rx).values().map(|n| n - 1).sum();
    eprintln!(
        "kafka join: {} calls, {at_join} delivered when the second node started, \
         {sent_again} sent twice",
        acknowledged.len()
    );
    for (node, log) in [("first", &log_a), ("second", &log_b)] {
        for line in read_log(log).lines().filter(|l| l.contains("partition")) {
            eprintln!("{node} node: {line}");
        }
    }
    assert!(
        at_join < acknowledged.len() / 2,
        "the backlog outlasts the join: {at_join} delivered before it"
    );
    assert!(
        sent_again <= LANES,
        "a rebalance re-sends at most the requests on the wire: {sent_again}"
    );
    // The second node says what it did with the calls it took over: it
    // skipped those the first had finished, and every call sent twice is
    // among those it read again.
    let (read_again, skipped) = (
        counter(&b, "sluice_kafka_calls_read_again_total").await,
        counter(&b, "sluice_kafka_calls_skipped_total").await,
    );
    eprintln!("kafka join: the second node read {read_again} again and skipped {skipped}");
    assert!(skipped > 0, "finished calls are skipped");
    assert!(
        read_again >= sent_again as u64,
        "calls sent twice are counted: {read_again} < {sent_again}"
    );
    drop((a, b));
}

/// A counter of `node`'s `/metrics`.
async fn counter(node: &Sluice, name: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", node.base))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// One cluster at a time: clusters listen on fixed ports.
static CLUSTER_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Three brokers of this test's own (replication 3, `min.insync.replicas`
/// 2), started by the project's script in a temporary directory and
/// stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    bootstrap: String,
}

impl Cluster {
    fn script() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scripts/kafka-test-server.sh")
    }

    fn run(dir: &std::path::Path, args: &[&str]) -> String {
        let out = std::process::Command::new(Self::script())
            .args(args)
            .env("SLUICE_KAFKA_TEST_DIR", dir)
            .env("SLUICE_KAFKA_TEST_PORT", "29500")
            .output()
            .expect("kafka-test-server.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned()
    }

    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let bootstrap = Self::run(dir.path(), &["start-cluster"]);
        Cluster { dir, bootstrap }
    }

    fn kill(&self, broker: &str) {
        Self::run(self.dir.path(), &["kill", broker]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(Self::script())
            .arg("stop")
            .env("SLUICE_KAFKA_TEST_DIR", self.dir.path())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_broker_under_load_loses_no_acknowledged_call() {
    let turn = CLUSTER_TURN.lock().await;
    let url = var("SLUICE_TEST_POSTGRES_URL");
    let cluster = tokio::task::spawn_blocking(Cluster::start).await.unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("sluice_it_brokers_{}_{nanos}", std::process::id());
    let env = [
        ("SLUICE_STORAGE__BACKEND", "postgres"),
        ("SLUICE_STORAGE__POSTGRES_URL", url.as_str()),
        ("SLUICE_STORAGE__POSTGRES_SCHEMA", name.as_str()),
        (
            "SLUICE_KAFKA__BOOTSTRAP_SERVERS",
            cluster.bootstrap.as_str(),
        ),
        ("SLUICE_KAFKA__TOPIC", name.as_str()),
        ("SLUICE_KAFKA__DELIVERY_GROUP", name.as_str()),
        ("SLUICE_KAFKA__PARTITIONS", "6"),
        ("SLUICE_KAFKA__REPLICATION", "3"),
        ("SLUICE_KAFKA__ACK_TIMEOUT_MS", "15000"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (node, log) = start_with_log_file(dir.path(), &env).await;
    let rx = Receiver::start().await;
    let auth = hooked_source(&node.base, &rx).await;

    // A broker dies a quarter of the way in; every call the node still
    // acknowledges was on two brokers at least.
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for batch in 0..BATCHES {
        if batch == BATCHES / 4 {
            let c = &cluster;
            tokio::task::block_in_place(|| c.kill("1"));
        }
        if send(&node, &auth, batch).await {
            acknowledged.extend((0..PER_BATCH).map(|i| format!("b{batch}-{i}")));
        } else {
            refused += 1;
        }
    }
    assert!(
        acknowledged.len() >= BATCHES * PER_BATCH / 2,
        "most batches acknowledged with two brokers of three: {refused} refused"
    );
    let started = Instant::now();
    let (missing, sent_again) = loop {
        let counts = counts(&rx);
        let missing = acknowledged
            .iter()
            .filter(|id| !counts.contains_key(*id))
            .count();
        if missing == 0 || started.elapsed() > Duration::from_secs(180) {
            break (missing, counts.values().map(|n| n - 1).sum::<usize>());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The consumer reports the broker's death as read errors between
    // records; the records around them must still be delivered.
    let log = read_log(&log);
    let read_errors = log
        .lines()
        .filter(|l| l.contains("reading the event log failed"))
        .count();
    eprintln!(
        "kafka broker kill -9: {} calls acknowledged, {refused} batches refused, {missing} lost, \
         {sent_again} sent twice, all delivered {:.1} s after the last was sent; \
         {read_errors} read errors logged",
        acknowledged.len(),
        started.elapsed().as_secs_f64()
    );
    if missing > 0 {
        let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
        eprintln!("the node's warnings:\n{}", warnings.join("\n"));
    }
    assert_eq!(missing, 0, "acknowledged calls never delivered");
    drop((node, cluster));
    drop(turn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_sasl_ssl_the_brokers_password_never_reaches_the_log() {
    const PASSWORD: &str = "sluice-test-secret";
    let shape = Shape::on("kafka_tls", var("SLUICE_TEST_KAFKA_TLS_BOOTSTRAP"), "1");
    let ca = var("SLUICE_TEST_KAFKA_CA");
    let env = shape.env(&[
        ("SLUICE_LOG", "debug"),
        ("SLUICE_KAFKA__SECURITY_PROTOCOL", "sasl_ssl"),
        ("SLUICE_KAFKA__SSL_CA_LOCATION", ca.as_str()),
        ("SLUICE_KAFKA__SASL_MECHANISM", "PLAIN"),
        ("SLUICE_KAFKA__SASL_USERNAME", "sluice"),
        ("SLUICE_KAFKA__SASL_PASSWORD", PASSWORD),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (node, log) = start_with_log_file(dir.path(), &env).await;
    let rx = Receiver::start().await;
    let auth = hooked_source(&node.base, &rx).await;
    let call = json!({"type": "track", "userId": "u1", "event": "Paid", "messageId": "tls-1"});
    assert_eq!(post_batch(&node.base, &auth, vec![call]).await, Some(200));
    assert_eq!(rx.wait_for(1, Duration::from_secs(30)).await.len(), 1);
    drop(node);
    let text = read_log(&log);
    assert!(text.contains("sasl_ssl"), "the security used is logged");
    assert!(!text.contains(PASSWORD), "the password is not");
}
