//! One keep-alive HTTP/1.1 connection of the load generator, written by
//! hand.
//!
//! The generator shares the machine's two cores with the server it
//! measures, so every microsecond it spends on a request is taken from the
//! server. hyper's client connection costs a task per connection, a channel
//! hop and a wake-up each way per request: about 11.5 µs of generator CPU
//! per single `/v1/track` call, against the server's 26 (BENCHMARKS.md,
//! "Measured choices"). This connection writes each request with one `write`
//! and parses the answer in its own buffer, as load generators such as wrk do.
//!
//! It reads only what Sluice answers on the collection API: a status line,
//! headers, and a body of `Content-Length` bytes. An answer without a
//! length (chunked, or delimited by close) is an error, which the bench
//! reports as a failed request. After `Connection: close` the connection
//! counts as closed and the caller opens a new one.

use std::net::SocketAddr;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest response head accepted; Sluice's are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// Header fields parsed per response.
const MAX_HEADERS: usize = 32;

/// A response: its status and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

pub struct Conn {
    stream: TcpStream,
    /// `HTTP/1.1\r\nhost: …\r\nauthorization: …\r\n…content-length: `, the
    /// part of every request between its path and its length.
    fixed: Vec<u8>,
    out: Vec<u8>,
    input: Vec<u8>,
    closed: bool,
}

impl Conn {
    /// Connects to `addr`; every request carries `authorization`.
    pub async fn connect(addr: SocketAddr, authorization: &str) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let fixed = format!(
            " HTTP/1.1\r\nhost: {addr}\r\nauthorization: {authorization}\r\n\
             content-type: application/json\r\ncontent-length: "
        )
        .into_bytes();
        Ok(Conn {
            stream,
            fixed,
            out: Vec::with_capacity(2048),
            input: Vec::with_capacity(1024),
            closed: false,
        })
    }

    /// The server closed the connection, or said it would.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends `POST path` with `body` and reads the answer.
    pub async fn post(&mut self, path: &str, body: &[u8]) -> anyhow::Result<Answer> {
        if self.closed {
            bail!("connection closed");
        }
        self.out.clear();
        self.out.extend_from_slice(b"POST ");
        self.out.extend_from_slice(path.as_bytes());
        self.out.extend_from_slice(&self.fixed);
        self.out
            .extend_from_slice(body.len().to_string().as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(body);
        let sent = self.stream.write_all(&self.out).await;
        if let Err(e) = sent {
            self.closed = true;
            return Err(e).context("sending the request");
        }
        let answer = self.read_answer().await;
        if answer.is_err() {
            self.closed = true;
        }
        answer
    }

    async fn read_answer(&mut self) -> anyhow::Result<Answer> {
        loop {
            if let Some(head) = parse_head(&self.input)? {
                while self.input.len() < head.len + head.body_len {
                    self.fill().await?;
                }
                let body = self.input[head.len..head.len + head.body_len].to_vec();
                self.input.drain(..head.len + head.body_len);
                self.closed |= head.close;
                return Ok(Answer {
                    status: head.status,
                    body,
                });
            }
            if self.input.len() > MAX_HEAD {
                bail!("response head longer than {MAX_HEAD} bytes");
            }
            self.fill().await?;
        }
    }

    async fn fill(&mut self) -> anyhow::Result<()> {
        self.input.reserve(4096);
        let read = self.stream.read_buf(&mut self.input).await?;
        if read == 0 {
            self.closed = true;
            bail!("the server closed the connection mid-answer");
        }
        Ok(())
    }
}

/// What the head of a response says.
#[derive(Debug, PartialEq)]
struct Head {
    /// Bytes of the head, blank line included.
    len: usize,
    status: u16,
    body_len: usize,
    close: bool,
}

/// The head at the start of `input`, once it is all there.
fn parse_head(input: &[u8]) -> anyhow::Result<Option<Head>> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let len = match response.parse(input).context("parsing the response head")? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => return Ok(None),
    };
    let status = response.code.context("response without a status")?;
    let mut body_len = None;
    let mut close = false;
    for field in response.headers.iter() {
        if field.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(field.value).context("content-length")?;
            body_len = Some(text.trim().parse::<usize>().context("content-length")?);
        } else if field.name.eq_ignore_ascii_case("connection") {
            close |= field.value.eq_ignore_ascii_case(b"close");
        } else if field.name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("HTTP {status}: a body without a length (transfer-encoding)");
        }
    }
    let body_len = body_len.with_context(|| format!("HTTP {status} without content-length"))?;
    Ok(Some(Head {
        len,
        status,
        body_len,
        close,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn a_head_is_read_once_complete() {
        let full =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n";
        assert_eq!(parse_head(&full[..30]).ok(), Some(None));
        let head = parse_head(full).ok().flatten();
        assert_eq!(
            head,
            Some(Head {
                len: full.len(),
                status: 200,
                body_len: 16,
                close: false
            })
        );
        let closing =
            b"HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
        let head = parse_head(closing).ok().flatten();
        assert!(head.is_some_and(|h| h.close && h.status == 401 && h.body_len == 2));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
    }

    /// A server that reads one request per answer in `answers`, each sent in
    /// two pieces, and then closes.
    async fn server(answers: Vec<&'static [u8]>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut buf = vec![0; 4096];
            for answer in answers {
                let mut seen = Vec::new();
                while !ends_request(&seen) {
                    let n = stream.read(&mut buf).await.expect("read");
                    assert!(n > 0, "client hung up");
                    seen.extend_from_slice(&buf[..n]);
                }
                let (a, b) = answer.split_at(answer.len() / 2);
                stream.write_all(a).await.expect("write");
                stream.flush().await.expect("flush");
                tokio::task::yield_now().await;
                stream.write_all(b).await.expect("write");
            }
        });
        addr
    }

    /// Whether `seen` holds a whole request with its 2-byte body.
    fn ends_request(seen: &[u8]) -> bool {
        seen.windows(4)
            .position(|w| w == b"\r\n\r\n")
            .is_some_and(|at| seen.len() >= at + 4 + 2)
    }

    #[tokio::test]
    async fn answers_are_read_in_turn_over_one_connection() {
        let addr = server(vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{\"success\":true}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 7\r\n\r\n{\"e\":1}",
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        ])
        .await;
        let mut conn = Conn::connect(addr, "Basic a2V5Og==")
            .await
            .expect("connect");
        let first = conn.post("/v1/track", b"{}").await.expect("first");
        assert_eq!(
            (first.status, first.body.as_slice()),
            (200, &b"{\"success\":true}"[..])
        );
        let second = conn.post("/v1/track", b"{}").await.expect("second");
        assert_eq!(
            (second.status, second.body.as_slice()),
            (400, &b"{\"e\":1}"[..])
        );
        assert!(!conn.is_closed());
        let third = conn.post("/v1/track", b"{}").await.expect("third");
        assert_eq!(third.status, 200);
        assert!(conn.is_closed(), "connection: close is honoured");
        assert!(conn.post("/v1/track", b"{}").await.is_err());
    }
}
