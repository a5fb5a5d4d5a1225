//! Form bodies (`application/x-www-form-urlencoded`), read under a cap.
//!
//! A form over its cap is not refused unread: the fields that fit are
//! kept, and the form says where it was cut ([`Overflow`]). Such a form is
//! never acted on ([`crate::layout::check_csrf`] refuses it); the pages
//! whose fields can legitimately be long show it again from the fields
//! that fit, with the error on the field that was cut, instead of losing
//! everything typed.

use std::future::poll_fn;
use std::pin::Pin;

use axum::body::{Body, HttpBody};
use axum::extract::{FromRequest, Request};
use sluice_api::ApiError;

/// The cap of an ordinary dashboard form.
pub const MAX_FORM_BYTES: usize = 64 * 1024;
/// Past a form's cap, this much more is read and dropped, so the browser
/// gets the answer instead of a reset connection; beyond, the connection
/// is closed.
pub const DRAIN_BYTES: usize = 8 * 1024 * 1024;

/// A form that did not fit under its cap.
#[derive(Debug, Clone, PartialEq)]
pub struct Overflow {
    /// The cap, in bytes.
    pub limit: usize,
    /// The name of the field that was cut (empty when the cut fell between
    /// fields).
    pub field: String,
}

impl Overflow {
    /// The cap in words (`64 KiB`, `6 MiB`).
    pub fn limit_text(&self) -> String {
        if self.limit >= 1024 * 1024 {
            format!("{} MiB", self.limit / (1024 * 1024))
        } else {
            format!("{} KiB", self.limit / 1024)
        }
    }
}

/// The fields of a submitted form, in order.
pub struct Form {
    pub fields: Vec<(String, String)>,
    /// Set when the form was over its cap: `fields` are those before the cut.
    pub overflow: Option<Overflow>,
}

/// A form read under a cap of `LIMIT` bytes instead of [`MAX_FORM_BYTES`],
/// for the forms whose fields legitimately run long.
pub struct FormUpTo<const LIMIT: usize>(pub Form);

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = crate::layout::PageError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        read(req.into_body(), MAX_FORM_BYTES).await
    }
}

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for FormUpTo<LIMIT> {
    type Rejection = crate::layout::PageError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(FormUpTo(read(req.into_body(), LIMIT).await?))
    }
}

async fn read(mut body: Body, limit: usize) -> Result<Form, crate::layout::PageError> {
    let mut kept = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame
            .map_err(|_| ApiError::bad_request("invalid_form", "the form could not be read"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len();
        if kept.len() < limit {
            let room = limit - kept.len();
            kept.extend_from_slice(&data[..data.len().min(room)]);
        }
        if seen > limit + DRAIN_BYTES {
            break;
        }
    }
    Ok(parse(&kept, seen > limit, limit))
}

/// The fields of `bytes`; when `cut`, the last (partial) field is dropped
/// and named in the overflow.
fn parse(bytes: &[u8], cut: bool, limit: usize) -> Form {
    let pairs = |b: &[u8]| -> Vec<(String, String)> {
        url::form_urlencoded::parse(b)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    };
    if !cut {
        return Form::new(pairs(bytes));
    }
    let (whole, partial) = match bytes.iter().rposition(|&b| b == b'&') {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (&[][..], bytes),
    };
    let field = pairs(partial)
        .into_iter()
        .next()
        .map(|(k, _)| k)
        .unwrap_or_default();
    Form {
        fields: pairs(whole),
        overflow: Some(Overflow { limit, field }),
    }
}

impl Form {
    /// A form of these fields, complete.
    pub fn new(fields: Vec<(String, String)>) -> Self {
        Form {
            fields,
            overflow: None,
        }
    }

    /// The first value of `name`, trimmed; empty when absent.
    pub fn get(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.trim())
    }

    /// The first value of `name` as sent, untrimmed (secrets).
    pub fn raw(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Every value of `name` (checkbox groups).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn checked(&self, name: &str) -> bool {
        self.fields.iter().any(|(k, v)| k == name && v != "off")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_under_its_cap_is_whole() {
        let f = parse(b"csrf=t&name=a+b", false, 100);
        assert_eq!(f.overflow, None);
        assert_eq!(f.get("name"), "a b");
    }

    #[test]
    fn a_cut_form_keeps_the_fields_before_the_cut_and_names_the_cut_one() {
        let f = parse(b"csrf=t&name=web&headers0=X-A%3A+", true, 30);
        assert_eq!(f.get("csrf"), "t");
        assert_eq!(f.get("name"), "web");
        assert_eq!(f.get("headers0"), "", "the cut field is not kept");
        assert_eq!(
            f.overflow,
            Some(Overflow {
                limit: 30,
                field: "headers0".into()
            })
        );
        let f = parse(b"subjectIds=a%0Ab", true, 1024 * 1024);
        assert!(f.fields.is_empty());
        assert_eq!(
            f.overflow
                .map(|o| (o.limit_text(), o.field))
                .unwrap_or_default(),
            ("1 MiB".into(), "subjectIds".into())
        );
    }
}
