//! Deliveries leased at ingest to one node's engine: no other node's claim
//! takes them, and a group whose commit went unanswered, or that committed
//! as the engine stopped, releases them at once (the rest of the contract
//! is in the conformance suite).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use sluice_store::local::LocalDelivery;
use sluice_store::{DeliveryStore, EventStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{TestSchema, at, ids, request, url};

const LEASE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_node_never_claims_a_delivery_leased_at_ingest() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(2, LEASE);
    assert!(node_a.deliver_locally(local));
    node_a
        .append(request("src_a", &ids("m", 3), at(0)))
        .await
        .expect("append");
    let batch = handed.try_recv().expect("two deliveries handed over");
    assert_eq!(batch.len(), 2);
    let claimed = node_b
        .claim_due(Utc::now(), 10, LEASE)
        .await
        .expect("claim");
    let claimed: Vec<&str> = claimed.iter().map(|d| d.message_id.as_str()).collect();
    assert_eq!(claimed, ["m2"]);
}

/// A store whose first ingest group gets no answer to its `COMMIT`: the
/// relay passes the `COMMIT` on, lets the server commit, and drops the
/// connection before the answer comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_of_a_commit_that_went_unanswered_are_claimable_at_once() {
    unanswered_commit_is_released(Duration::ZERO).await;
}

/// As above, with the server getting the `COMMIT` only after the store
/// lost the connection (it was still on its way, or the server waited on
/// a standby): the first try of the release finds no rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_of_a_commit_that_lands_after_the_connection_dropped_are_released() {
    unanswered_commit_is_released(Duration::from_millis(700)).await;
}

/// Appends through a [`CommitCutter`] forwarding the `COMMIT` `late`
/// after it cut the client off, and checks that another node claims the
/// group's deliveries within seconds.
async fn unanswered_commit_is_released(late: Duration) {
    let schema = TestSchema::new();
    let relay = CommitCutter::start(&url(), late).await;
    let node_a = schema.open_at(relay.url()).await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(8, LEASE);
    assert!(node_a.deliver_locally(local));

    let answer = node_a.append(request("src_u", &ids("u", 2), at(0))).await;
    assert!(answer.is_err(), "the commit's answer was cut: {answer:?}");
    assert!(
        relay.cut(),
        "the relay never saw the group's COMMIT: {answer:?}"
    );
    assert!(
        handed.try_recv().is_err(),
        "handed over without a known commit"
    );

    // The group did commit; its deliveries, leased to node A for a minute,
    // are released for any node well before that.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut claimed = Vec::new();
    while claimed.len() < 2 && Instant::now() < deadline {
        let due = node_b
            .claim_due(Utc::now(), 10, LEASE)
            .await
            .expect("claim");
        claimed.extend(due.into_iter().map(|d| d.message_id));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    claimed.sort();
    assert_eq!(claimed, ["u0", "u1"]);
}

/// A group takes its room, then the engine stops (a clean stop) while the
/// group's `COMMIT` is on its way: the group commits, nothing can take its
/// deliveries, and they are released for any node's claim instead of
/// waiting a minute for their lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_committed_as_the_engine_stops_are_claimable_at_once() {
    let schema = TestSchema::new();
    let relay = CommitCutter::start_with(&url(), Commit::Delay(Duration::from_millis(500))).await;
    let node_a = Arc::new(schema.open_at(relay.url()).await);
    let node_b = schema.open().await;
    let (local, handed) = LocalDelivery::new(8, LEASE);
    assert!(node_a.deliver_locally(local));

    let appending = {
        let node_a = Arc::clone(&node_a);
        tokio::spawn(async move { node_a.append(request("src_s", &ids("s", 2), at(0))).await })
    };
    while !relay.cut() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(handed);
    let answer = appending.await.expect("append task");
    assert!(answer.is_ok(), "the group committed: {answer:?}");

    let claimed = node_b
        .claim_due(Utc::now(), 10, LEASE)
        .await
        .expect("claim");
    let mut claimed: Vec<String> = claimed.into_iter().map(|d| d.message_id).collect();
    claimed.sort();
    assert_eq!(claimed, ["s0", "s1"]);
}

/// A TCP relay to the test server that acts on the first ingest group
/// (it prepared the insert into `events`) to send `COMMIT`, as [`Commit`]
/// says. [`CommitCutter::cut`] turns true once it has seen that `COMMIT`.
struct CommitCutter {
    addr: std::net::SocketAddr,
    cut: Arc<AtomicBool>,
}

/// What the relay does with the first ingest group's `COMMIT`.
#[derive(Clone, Copy)]
enum Commit {
    /// The server gets the `COMMIT` and commits, the client never hears
    /// it: the connection drops. With a `late` above zero, the client is
    /// cut off first and the `COMMIT` forwarded that long after.
    Cut { late: Duration },
    /// Forwarded after this long, and answered as usual.
    Delay(Duration),
}

impl CommitCutter {
    async fn start(server_url: &str, late: Duration) -> CommitCutter {
        CommitCutter::start_with(server_url, Commit::Cut { late }).await
    }

    async fn start_with(server_url: &str, commit: Commit) -> CommitCutter {
        let server = sluice_testkit::relay::postgres_server(server_url).to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let addr = listener.local_addr().expect("relay address");
        let cut = Arc::new(AtomicBool::new(false));
        let (to, done) = (server, Arc::clone(&cut));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(upstream) = TcpStream::connect(&to).await else {
                    continue;
                };
                tokio::spawn(relay(client, upstream, Arc::clone(&done), commit));
            }
        });
        CommitCutter { addr, cut }
    }

    /// The test server's URL through the relay, in plain text so the relay
    /// reads the statements.
    fn url(&self) -> String {
        sluice_testkit::relay::postgres_url_through(&url(), self.addr)
    }

    fn cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

async fn relay(client: TcpStream, upstream: TcpStream, done: Arc<AtomicBool>, commit: Commit) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = upstream.into_split();
    let hold = Arc::new(AtomicBool::new(false));
    let held = Arc::clone(&hold);
    let back = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = server_rx.read(&mut buf).await {
            // Held: the answers are read and dropped, the client kept
            // waiting until the connection goes.
            if !held.load(Ordering::SeqCst) && client_tx.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    let mut ingest = false;
    while let Ok(n @ 1..) = client_rx.read(&mut buf).await {
        let chunk = &buf[..n];
        ingest |= contains(chunk, b"INSERT INTO events");
        let first = ingest && contains(chunk, b"COMMIT") && !done.load(Ordering::SeqCst);
        let cut = match commit {
            Commit::Cut { late } if first => {
                hold.store(true, Ordering::SeqCst);
                done.store(true, Ordering::SeqCst);
                if !late.is_zero() {
                    back.abort();
                    tokio::time::sleep(late).await;
                }
                true
            }
            Commit::Delay(delay) if first => {
                done.store(true, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                false
            }
            _ => false,
        };
        if server_tx.write_all(chunk).await.is_err() {
            break;
        }
        if cut {
            tokio::time::sleep(Duration::from_millis(300)).await;
            break;
        }
    }
    back.abort();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
