//! An accepted event is never lost: load, `kill -9` at random moments,
//! restart, and every event that got a 200 must be in the store; a
//! delivery in flight at the kill is sent after the restart.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};

use sluice_testkit::{Receiver, Reply};

use crate::process::{TOKEN, admin, all_events, basic, create_source, start};

const ROUNDS: usize = 4;
const WRITERS: usize = 8;

/// Sends batches of 10 until the server dies; records acknowledged ids.
async fn writer(base: String, key: String, round: usize, w: usize, acked: Arc<Mutex<Vec<String>>>) {
    let http = reqwest::Client::new();
    let auth = basic(&key);
    for n in 0.. {
        let ids: Vec<String> = (0..10)
            .map(|i| format!("r{round}-w{w}-n{n}-i{i}"))
            .collect();
        let batch: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "track", "userId": "u", "event": "e", "messageId": id}))
            .collect();
        let resp = http
            .post(format!("{base}/v1/batch"))
            .header("authorization", &auth)
            .body(json!({"batch": batch}).to_string())
            .send()
            .await;
        match resp {
            Ok(r) if r.status() == 200 => acked.lock().unwrap().extend(ids),
            _ => return, // killed: anything unacknowledged may or may not be stored
        }
    }
}

pub async fn stored_ids(base: &str, source: &str) -> HashSet<String> {
    all_events(base, source)
        .await
        .iter()
        .filter_map(|e| e["message_id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_never_loses_an_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut source: Option<(String, String)> = None;
    for round in 0..ROUNDS {
        let mut s = start(dir.path(), &[]).await;
        let (id, key) = match &source {
            Some(v) => v.clone(),
            None => create_source(&s.base, "crash").await,
        };
        source = Some((id, key.clone()));
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| tokio::spawn(writer(s.base.clone(), key.clone(), round, w, acked.clone())))
            .collect();
        let wait = rand::rng().random_range(150..600);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        s.child.start_kill().expect("SIGKILL"); // kill_on_drop sends SIGKILL
        s.child.wait().await.expect("reap");
        for t in tasks {
            t.await.unwrap();
        }
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 100,
        "the load must have been acknowledged before the kills ({})",
        acked.len()
    );
    let s = start(dir.path(), &[]).await;
    let (id, _) = source.unwrap();
    let stored = stored_ids(&s.base, &id).await;
    let lost: Vec<&String> = acked.iter().filter(|m| !stored.contains(*m)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

/// How the server goes down before the resend.
#[derive(PartialEq)]
enum Stop {
    /// Nothing saved: the window is rebuilt from the events at start.
    Kill9,
    /// SIGTERM: the window is saved beside the database and loaded.
    Term,
}

/// Under load, `kill -9`, restart, then send every acknowledged batch
/// again, as a client that missed the answers would: each message id is
/// stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_after_kill_9_is_dropped_as_a_duplicate() {
    resend_after(Stop::Kill9).await;
}

/// The same after a clean stop, which saves the window (`sluice.db-dedup`)
/// for the next start to load instead of reading every event again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_after_a_clean_stop_is_dropped_through_the_saved_window() {
    resend_after(Stop::Term).await;
}

async fn resend_after(stop: Stop) {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("sluice.db-dedup");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut s = start(dir.path(), &[]).await;
    let (id, key) = create_source(&s.base, "resend").await;
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| tokio::spawn(writer(s.base.clone(), key.clone(), 0, w, acked.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(400)).await;
    match stop {
        Stop::Kill9 => s.child.start_kill().expect("SIGKILL"),
        Stop::Term => {
            let sent = tokio::process::Command::new("kill")
                .args(["-TERM", &s.pid().to_string()])
                .status()
                .await
                .expect("kill");
            assert!(sent.success());
        }
    }
    let exit = s.child.wait().await.expect("reap");
    for t in tasks {
        t.await.unwrap();
    }
    if stop == Stop::Term {
        assert!(exit.success(), "clean exit: {exit:?}");
        assert!(saved.exists(), "the window is saved at a clean stop");
    } else {
        assert!(!saved.exists());
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 10, "load acknowledged: {}", acked.len());

    let s = start(dir.path(), &[]).await;
    assert!(!saved.exists(), "a saved window is used once");
    let http = reqwest::Client::new();
    for ids in acked.chunks(10) {
        let batch: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "track", "userId": "u", "event": "e", "messageId": id}))
            .collect();
        let resp = http
            .post(format!("{}/v1/batch", s.base))
            .header("authorization", basic(&key))
            .body(json!({"batch": batch}).to_string())
            .send()
            .await
            .expect("resend");
        assert_eq!(resp.status(), 200);
    }
    let events = all_events(&s.base, &id).await;
    let stored = stored_ids(&s.base, &id).await;
    assert_eq!(events.len(), stored.len(), "no message id is stored twice");
    assert!(acked.iter().all(|m| stored.contains(m)));
}

/// Deliveries that ingest leased to the engine and that were still being
/// sent when the process was killed are sent after the restart: opening
/// the database releases the lease they were written with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_in_flight_at_kill_9_are_sent_after_the_restart() {
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start().await;
    // Answers only after the process is gone: every first attempt hangs.
    rx.set_default(Reply::status(200).delay(Duration::from_secs(60)));
    let mut s = start(dir.path(), &[]).await;
    let (src, key) = create_source(&s.base, "inflight").await;
    let hook = json!({"name": "hook", "type": "Webhooks", "source_ids": [src],
                      "settings": {"urls": [rx.url()]}});
    admin(&s.base, reqwest::Method::POST, "/destinations", Some(hook)).await;
    let http = reqwest::Client::new();
    for i in 0..CALLS {
        let call = json!({"userId": "u", "event": "e", "messageId": format!("inflight-{i}")});
        let sent = http
            .post(format!("{}/v1/track", s.base))
            .header("authorization", basic(&key))
            .body(call.to_string())
            .send()
            .await
            .expect("track");
        assert_eq!(sent.status(), 200);
    }
    rx.wait_for(CALLS, Duration::from_secs(10)).await;
    let metrics = http
        .get(format!("{}/metrics", s.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    assert!(
        metrics.contains(&format!("sluice_delivery_from_ingest_total {CALLS}")),
        "every delivery was handed over at ingest:\n{metrics}"
    );
    s.child.start_kill().expect("SIGKILL");
    s.child.wait().await.expect("reap");

    // Only what arrives from the restarted process counts.
    let hung = rx.requests().len();
    rx.set_default(Reply::status(200));
    let _s = start(dir.path(), &[]).await;
    let delivered = |rx: &Receiver| -> HashSet<String> {
        (rx.requests().iter().skip(hung))
            .filter_map(|r| r.header("x-sluice-message-id").map(str::to_owned))
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while delivered(&rx).len() < CALLS && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let expected: HashSet<String> = (0..CALLS).map(|i| format!("inflight-{i}")).collect();
    assert_eq!(delivered(&rx), expected);
}
