use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderValue, Request, Uri};
use http_body_util::Full;
use sluice_outbound::NetworkPolicy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::super::clients::connector;
use super::super::resolver::{GuardedResolver, SystemLookup};
use super::{Pool, h1_form, host_header, key_of};

fn host_of(url: &str) -> Option<HeaderValue> {
    host_header(&key_of(&url.parse::<Uri>().expect("uri")).expect("key"))
}

#[test]
fn host_header_names_the_port_only_when_it_is_not_the_schemes_default() {
    assert_eq!(host_of("http://example.com/a").unwrap(), "example.com");
    assert_eq!(host_of("http://example.com:80/a").unwrap(), "example.com");
    assert_eq!(host_of("https://example.com:443/").unwrap(), "example.com");
    assert_eq!(
        host_of("https://example.com:80/").unwrap(),
        "example.com:80"
    );
    assert_eq!(host_of("http://127.0.0.1:8080/").unwrap(), "127.0.0.1:8080");
    assert_eq!(host_of("http://[::1]:9000/x").unwrap(), "[::1]:9000");
}

fn request(url: &str) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(Bytes::new()));
    *request.uri_mut() = url.parse().expect("uri");
    request
}

#[test]
fn http1_requests_go_out_in_origin_form_with_a_host_header() {
    let host = HeaderValue::from_static("example.com:8443");
    let sent = h1_form(
        request("https://example.com:8443/hooks/in?token=a%20b"),
        Some(&host),
    );
    assert_eq!(sent.uri().to_string(), "/hooks/in?token=a%20b");
    assert_eq!(sent.headers()[HOST], "example.com:8443");

    let root = h1_form(request("http://example.com"), Some(&host));
    assert_eq!(root.uri().to_string(), "/");
}

#[test]
fn a_host_header_the_request_names_is_kept() {
    let mut own = request("http://example.com/");
    own.headers_mut()
        .insert(HOST, HeaderValue::from_static("other.example"));
    let host = HeaderValue::from_static("example.com");
    assert_eq!(h1_form(own, Some(&host)).headers()[HOST], "other.example");
}

/// A receiver that keeps connections open and answers every request on
/// them with 200 and `ok`; it counts connections, and each connection's
/// task sends on `closed` when our side closes it.
async fn kept_alive_receiver() -> (
    String,
    Arc<AtomicUsize>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    receiver_answering(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec()).await
}

/// [`kept_alive_receiver`] with another answer.
async fn receiver_answering(
    answer: Vec<u8>,
) -> (
    String,
    Arc<AtomicUsize>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let connections = Arc::new(AtomicUsize::new(0));
    let (closed_tx, closed) = tokio::sync::mpsc::unbounded_channel();
    let counted = connections.clone();
    let answer: Arc<[u8]> = answer.into();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let closed_tx = closed_tx.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                    // Each request here is a head with an empty body.
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        if stream.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                }
                let _ = closed_tx.send(());
            });
        }
    });
    (format!("http://127.0.0.1:{port}/hook"), connections, closed)
}

fn pool(idle_timeout: Duration) -> Pool {
    let everything = vec![
        "0.0.0.0/0".parse().expect("cidr"),
        "::/0".parse().expect("cidr"),
    ];
    let resolver = GuardedResolver::new(
        Arc::new(SystemLookup::new().expect("resolver")),
        NetworkPolicy::new(everything),
    );
    let connector = connector(&resolver, Duration::from_secs(2), &[]).expect("connector");
    Pool::new(connector, 4, idle_timeout)
}

async fn post(pool: &Pool, url: &str) -> u16 {
    let reply = pool.exchange(request(url), 1024).await.expect("answer");
    assert_eq!(reply.body, b"ok");
    reply.status
}

#[tokio::test]
async fn sequential_sends_share_one_kept_connection() {
    let (url, connections, _closed) = kept_alive_receiver().await;
    let pool = pool(Duration::from_secs(90));
    for _ in 0..20 {
        assert_eq!(post(&pool, &url).await, 200);
    }
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let (url, connections, mut closed) = kept_alive_receiver().await;
    let pool = pool(Duration::from_millis(60));
    assert_eq!(post(&pool, &url).await, 200);
    // Nothing is sent any more: the sweep alone closes the connection.
    tokio::time::timeout(Duration::from_secs(5), closed.recv())
        .await
        .expect("closed by the sweep");
    assert_eq!(post(&pool, &url).await, 200);
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_whose_answer_was_cut_at_the_cap_is_not_kept() {
    let body = "x".repeat(64 * 1024);
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (url, connections, _closed) = receiver_answering(answer.into_bytes()).await;
    let pool = pool(Duration::from_secs(90));
    for _ in 0..2 {
        let reply = pool.exchange(request(&url), 1024).await.expect("answer");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body.len(), 1024);
    }
    // The rest of each body was never read, so neither connection could
    // carry another request.
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

/// Every send's future embeds the exchange's: the rare paths (connecting,
/// HTTP/2) are boxed so that it stays small. Inlined, they made it 8,128
/// bytes and raised peak RSS by about 7 MB (BENCHMARKS.md, "Measured choices").
#[test]
fn an_exchange_future_stays_small() {
    let pool = pool(Duration::from_secs(1));
    let exchange = pool.exchange(request("http://127.0.0.1:1/"), 16);
    let size = std::mem::size_of_val(&exchange);
    assert!(size < 4096, "the exchange future is {size} bytes");
}
