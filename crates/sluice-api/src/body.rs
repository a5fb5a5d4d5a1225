//! Reading request bodies under a hard cap, gzip included.
//!
//! Limits apply to the decompressed bytes, and decompression stops as soon as
//! the limit is passed, so a gzip bomb costs at most `limit + 1` bytes of
//! memory and the time to inflate them.

use std::io::Read;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_ENCODING;
use bytes::Bytes;
use flate2::read::MultiGzDecoder;

use crate::error::ApiError;

/// Compressed bodies may exceed the decompressed limit by this much (gzip
/// framing on incompressible data) before they are refused unread.
const GZIP_SLACK: usize = 1024;

/// Reads the whole body, decoding `Content-Encoding: gzip`, and fails with
/// `body_too_large` when more than `limit` bytes would result.
pub async fn read_capped(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let encoding = headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    let gzip = match encoding.as_deref() {
        None | Some("") | Some("identity") => false,
        Some("gzip") | Some("x-gzip") => true,
        Some(other) => {
            return Err(ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_encoding",
                format!("Content-Encoding '{other}' is not supported; use gzip or none"),
            ));
        }
    };
    let raw_limit = if gzip { limit + GZIP_SLACK } else { limit };
    let raw = axum::body::to_bytes(body, raw_limit)
        .await
        .map_err(|_| too_large(limit))?;
    if !gzip {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(limit + 1));
    MultiGzDecoder::new(raw.as_ref())
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ApiError::bad_request("invalid_gzip", format!("gzip body: {e}")))?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(Bytes::from(out))
}

fn too_large(limit: usize) -> ApiError {
    ApiError::too_large(format!("request body exceeds {limit} bytes"))
}
