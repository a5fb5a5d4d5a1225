//! Reading request bodies under a hard cap, gzip included, within the body
//! deadline and the memory budget ([`crate::budget`]).
//!
//! Limits apply to the decompressed bytes, and decompression stops as soon as
//! the limit is passed, so a gzip bomb costs at most `limit + 1` bytes of
//! memory and the time to inflate them. A declared `Content-Length` over the
//! limit is refused before any byte is read. Every byte kept is counted
//! against the budget as it arrives; over budget the request is refused with
//! `503` rather than buffered. A client that has not sent the whole body
//! when the deadline passes gets `408`.

use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use axum::http::{HeaderMap, StatusCode};
use bytes::{Bytes, BytesMut};
use flate2::read::MultiGzDecoder;
use http_body_util::BodyExt;

use crate::budget::{BodyBudget, Held};
use crate::error::ApiError;

/// Compressed bodies may exceed the decompressed limit by this much (gzip
/// framing on incompressible data) before they are refused unread.
const GZIP_SLACK: usize = 1024;

/// Reads the whole body, decoding `Content-Encoding: gzip`, and fails with
/// `body_too_large` when more than `limit` bytes would result. The bytes stay
/// counted against `budget` until the returned [`Held`] is dropped;
/// `anonymous` requests (no HTTP Basic write key) draw on its small share.
pub async fn read_capped(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    budget: &Arc<BodyBudget>,
    anonymous: bool,
) -> Result<(Bytes, Held), ApiError> {
    let gzip = gzip_encoded(headers)?;
    let raw_limit = if gzip { limit + GZIP_SLACK } else { limit };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > raw_limit) {
        return Err(too_large(limit));
    }
    let mut held = budget.hold(anonymous);
    let raw = tokio::time::timeout(
        budget.timeout,
        read_raw(body, raw_limit, declared, &mut held),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {} s",
                budget.timeout.as_secs_f64()
            ),
        )
    })?
    .map_err(|e| {
        if e.code == "body_too_large" {
            too_large(limit)
        } else {
            e
        }
    })?;
    if !gzip {
        return Ok((raw, held));
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(limit + 1));
    MultiGzDecoder::new(raw.as_ref())
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ApiError::bad_request("invalid_gzip", format!("gzip body: {e}")))?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    if !held.take(out.len()) {
        return Err(over_budget());
    }
    Ok((Bytes::from(out), held))
}

/// Reads raw body bytes, counting them against `held` as they arrive. With a
/// declared length the whole of it is counted up front (one step, and the
/// refusal comes before anything is read).
async fn read_raw(
    mut body: Body,
    raw_limit: usize,
    declared: Option<usize>,
    held: &mut Held,
) -> Result<Bytes, ApiError> {
    if declared.is_some_and(|n| !held.take(n)) {
        return Err(over_budget());
    }
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::bad_request("body_read_failed", format!("reading the body: {e}"))
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let so_far = first.as_ref().map_or(0, Bytes::len) + buf.len();
        let total = so_far + data.len();
        if total > raw_limit {
            return Err(ApiError::too_large(String::new()));
        }
        if total > held.bytes() && !held.take(total - held.bytes()) {
            return Err(over_budget());
        }
        // Most bodies arrive in one frame: keep it without copying.
        match first.take() {
            None if buf.is_empty() => first = Some(data),
            None => buf.extend_from_slice(&data),
            Some(prev) => {
                buf.reserve(declared.unwrap_or(total).max(total));
                buf.extend_from_slice(&prev);
                buf.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| buf.freeze()))
}

/// Whether the body is gzip-compressed, from every `Content-Encoding`
/// line (several lines are one comma-separated list, RFC 9110 5.3).
/// `identity` entries change nothing; one `gzip` (or `x-gzip`) is decoded;
/// anything else, a stacked coding (`gzip, gzip`) or a value that is not
/// visible ASCII is `415 unsupported_encoding`, never read as plain JSON.
fn gzip_encoded(headers: &HeaderMap) -> Result<bool, ApiError> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let Ok(text) = value.to_str() else {
            return Err(unsupported("a value that is not visible ASCII"));
        };
        codings.extend(
            text.split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty() && c != "identity"),
        );
    }
    match codings.as_slice() {
        [] => Ok(false),
        [one] if one == "gzip" || one == "x-gzip" => Ok(true),
        _ => Err(unsupported(&format!("'{}'", codings.join(", ")))),
    }
}

fn unsupported(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_encoding",
        format!("Content-Encoding {what} is not supported; use gzip or none"),
    )
}

fn over_budget() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "over_capacity",
        "too many request bodies in flight; retry later",
    )
}

fn too_large(limit: usize) -> ApiError {
    ApiError::too_large(format!("request body exceeds {limit} bytes"))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn encoded(values: &[&[u8]]) -> Result<bool, &'static str> {
        let mut headers = HeaderMap::new();
        for v in values {
            let value = HeaderValue::from_bytes(v).map_err(|_| "bad header")?;
            headers.append(CONTENT_ENCODING, value);
        }
        gzip_encoded(&headers).map_err(|e| e.code)
    }

    #[test]
    fn gzip_identity_and_none_are_read() {
        assert_eq!(encoded(&[]), Ok(false));
        assert_eq!(encoded(&[b"identity"]), Ok(false));
        assert_eq!(encoded(&[b" GZIP "]), Ok(true));
        assert_eq!(encoded(&[b"x-gzip"]), Ok(true));
    }

    #[test]
    fn every_content_encoding_line_counts() {
        assert_eq!(encoded(&[b"identity", b"gzip"]), Ok(true));
        assert_eq!(encoded(&[b"gzip", b"identity"]), Ok(true));
        assert_eq!(encoded(&[b"gzip", b"gzip"]), Err("unsupported_encoding"));
        assert_eq!(encoded(&[b"gzip, gzip"]), Err("unsupported_encoding"));
    }

    #[test]
    fn unknown_or_non_ascii_encodings_are_refused_not_read_as_plain() {
        assert_eq!(encoded(&[b"br"]), Err("unsupported_encoding"));
        assert_eq!(encoded(&[b"br\xe9"]), Err("unsupported_encoding"));
        assert_eq!(encoded(&[b"deflate, gzip"]), Err("unsupported_encoding"));
    }
}
