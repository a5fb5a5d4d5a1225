//! Pooled connections a receiver has closed are not reused: each send after
//! the receiver hung up goes out on a fresh connection and succeeds, with no
//! failed attempt in between. Receivers that close after every answer
//! without saying so (`Connection: close`) are common behind small servers
//! and proxies.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use sluice_delivery::sender::{Job, Sender};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::*;

/// Answers one request per connection with 200, then closes it, without
/// announcing the close. Counts connections and requests.
async fn closing_receiver() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                // The request's head and its small body arrive together.
                while !ends_request(&seen) {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/hook"), requests)
}

/// Whether `seen` holds a whole request whose body is `{}`.
fn ends_request(seen: &[u8]) -> bool {
    seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.ends_with(b"{}")
}

#[tokio::test]
async fn a_connection_the_receiver_closed_is_not_reused() {
    let (target, requests) = closing_receiver().await;
    let sender = Sender::new(&fast_config()).expect("sender");
    for n in 1..=10 {
        let job = Job {
            delivery_id: n,
            attempt: 1,
            message_id: format!("m-{n}"),
            body: Bytes::from_static(b"{}"),
            signature: None,
            standard: None,
            destination: None,
        };
        let result = sender.send_one(&url(&target), &job).await;
        assert_eq!(
            result.attempt.status,
            Some(200),
            "send {n}: {:?}",
            result.attempt.error
        );
        // Let the receiver's close reach the pooled connection.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(requests.load(Ordering::SeqCst), 10);
}
