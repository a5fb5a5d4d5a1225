//! The connection's byte stream, seen by hyper.
//!
//! Two jobs. Reads mark the connection's phase (bytes on an idle connection
//! start a request head, for the head timeout). Writes give hyper's own
//! refusals the JSON error shape: hyper answers a request it cannot parse
//! (`400`, `414`, `431` for a head over the limit) by itself, before any of
//! Sluice's code runs, with an empty body; such a response is recognised as
//! it is written (a status line of one of those codes, `content-length: 0`,
//! nothing after the head) and replaced with the same status carrying
//! `{"success":false,"code":…,"message":…}` and `connection: close`.
//! Sluice's own responses always have a body, so they never match.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::conns::ConnState;

pub struct ShapedIo<T> {
    inner: T,
    state: Arc<ConnState>,
    /// A replacement response still to be written.
    pending: Vec<u8>,
    written: usize,
}

impl<T> ShapedIo<T> {
    pub fn new(inner: T, state: Arc<ConnState>) -> Self {
        ShapedIo {
            inner,
            state,
            pending: Vec::new(),
            written: 0,
        }
    }
}

impl<T: AsyncWrite + Unpin> ShapedIo<T> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ShapedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.state.saw_bytes();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ShapedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if let Some(shaped) = shape_automatic_error(buf) {
            this.pending = shaped;
            // Written or not yet, the bytes are ours now; flush finishes.
            if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    /// hyper writes head and body as separate slices when the stream
    /// supports it; its automatic error responses are a head alone.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        let mut non_empty = bufs.iter().filter(|b| !b.is_empty());
        let only = match (non_empty.next(), non_empty.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        };
        let shaped = only.and_then(|b| shape_automatic_error(b).map(|s| (s, b.len())));
        if let Some((shaped, len)) = shaped {
            this.pending = shaped;
            if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(len));
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// The JSON version of one of hyper's automatic error responses, or `None`
/// when `buf` is not exactly such a response.
pub fn shape_automatic_error(buf: &[u8]) -> Option<Vec<u8>> {
    let status = buf.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    let (code, message) = match status {
        b"400" => ("bad_request", "the request is not valid HTTP/1.1"),
        b"414" => ("uri_too_long", "the request URI is too long"),
        b"431" => (
            "headers_too_large",
            "the request head is too large or has too many headers",
        ),
        _ => return None,
    };
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut empty = false;
    let mut kept = Vec::new();
    for line in lines {
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("content-length") {
            empty = line.split(':').nth(1).is_some_and(|v| v.trim() == "0");
        } else if !name.eq_ignore_ascii_case("connection") {
            kept.push(line);
        }
    }
    if !empty {
        return None;
    }
    let body = serde_json::json!({"success": false, "code": code, "message": message}).to_string();
    let mut out = String::with_capacity(buf.len() + body.len() + 96);
    out.push_str(status_line);
    out.push_str("\r\n");
    for line in kept {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("content-type: application/json\r\nconnection: close\r\n");
    out.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_empty_431_becomes_the_json_shape() {
        let raw =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(shape_automatic_error(raw).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "));
        assert!(head.contains("connection: close"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["success"], false);
        assert_eq!(v["code"], "headers_too_large");
    }

    #[test]
    fn responses_with_a_body_pass_unchanged() {
        let raw = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}";
        assert!(shape_automatic_error(raw).is_none());
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert!(shape_automatic_error(ok).is_none());
    }
}
