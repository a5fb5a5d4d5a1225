//! Turning transport errors into a class and a short, secret-free message.

use std::error::Error as StdError;
use std::time::Duration;

use sluice_outbound::Blocked;

use super::Failure;
use super::pool::PoolError;
use super::resolver::ResolveError;
use crate::policy::TransportError;

impl Failure {
    pub(super) fn timeout(after: Duration) -> Self {
        Failure {
            kind: TransportError::Timeout,
            message: format!(
                "timeout: no complete answer within {} ms",
                after.as_millis()
            ),
        }
    }

    /// Classifies the pool's error. TLS is checked first: a certificate
    /// rejection also reports as a connect error, but must not be retried.
    /// A `Connect` error came before any request was written; an `Http`
    /// one may have come after (the receiver may have read it all).
    pub(super) fn from_pool(e: &PoolError, timeout: Duration) -> Self {
        match e {
            PoolError::Connect(e) => Self::from_transport(e.as_ref(), true, timeout),
            PoolError::Http(e) => Self::from_transport(e, false, timeout),
            PoolError::Target => Failure {
                kind: TransportError::InvalidRequest,
                message: "invalid URL".to_owned(),
            },
        }
    }

    /// Classifies a transport error; `connect`: no connection was made.
    fn from_transport(e: &(dyn StdError + 'static), connect: bool, timeout: Duration) -> Self {
        if let Some(tls) = chain(e).find_map(find_rustls) {
            return Failure::tls(tls, connect);
        }
        if let Some(blocked) = blocked_cause(e) {
            return Failure::blocked(blocked);
        }
        if let Some(lookup) = lookup_cause(e) {
            return Failure {
                kind: TransportError::Dns,
                message: lookup.to_string(),
            };
        }
        if timed_out(e) {
            return Failure::timeout(timeout);
        }
        let (kind, label) = if connect {
            (TransportError::Connect, "connection error")
        } else {
            (TransportError::Other, "request error")
        };
        Failure {
            kind,
            message: format!("{label}: {}", root_cause(e)),
        }
    }
}

/// `e` and every error under it, outermost first.
fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&err| err.source())
}

/// The guard's refusal somewhere in the chain (the resolver found only
/// blocked addresses), if any.
fn blocked_cause(e: &(dyn StdError + 'static)) -> Option<Blocked> {
    chain(e).find_map(|err| match err.downcast_ref::<ResolveError>() {
        Some(ResolveError::Blocked(blocked)) => Some(blocked.clone()),
        _ => None,
    })
}

/// The resolver's failure somewhere in the chain (the name gave no
/// address), if any.
fn lookup_cause<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a ResolveError> {
    chain(e).find_map(|err| match err.downcast_ref::<ResolveError>() {
        Some(lookup @ ResolveError::Lookup(_)) => Some(lookup),
        _ => None,
    })
}

impl Failure {
    /// A TLS failure. Only a rejected certificate (or server identity) is
    /// permanent: it will be rejected again, and the handshake stopped
    /// before any request. Anything else (an alert from the peer, a record
    /// that does not decrypt, a protocol violation) is a fault of this
    /// connection, retried like a dropped one. `before_request`: it ended
    /// the handshake, so no request was written; otherwise the receiver may
    /// have read the request, and the message does not claim otherwise.
    pub(super) fn tls(tls: &rustls::Error, before_request: bool) -> Self {
        if is_certificate_rejection(tls) {
            Failure {
                kind: TransportError::Certificate,
                message: format!("TLS certificate rejected, request not sent: {tls}"),
            }
        } else if before_request {
            Failure {
                kind: TransportError::Tls,
                message: format!("TLS handshake failed, request not sent: {tls}"),
            }
        } else {
            Failure {
                kind: TransportError::Tls,
                message: format!("TLS error: {tls}"),
            }
        }
    }
}

/// Whether `tls` says the server's certificate or identity was refused:
/// untrusted, expired, revoked, for another name, a CA used as a leaf, or
/// missing. The same certificate is refused on every later attempt, until
/// someone changes it or the destination's `caBundle`.
fn is_certificate_rejection(tls: &rustls::Error) -> bool {
    matches!(
        tls,
        rustls::Error::InvalidCertificate(_)
            | rustls::Error::NoCertificatesPresented
            | rustls::Error::UnsupportedNameType
            | rustls::Error::InvalidCertRevocationList(_)
    )
}

/// The rustls error in `err` or wrapped inside it, if any. rustls errors
/// travel inside (possibly nested) `io::Error`s, whose `source()` skips the
/// wrapped error itself, so each `io::Error` is opened with `get_ref`.
fn find_rustls<'a>(mut err: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    loop {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let inner = err.downcast_ref::<std::io::Error>()?.get_ref()?;
        err = inner;
    }
}

/// Whether the connector gave up connecting in time (an `io::Error` of kind
/// `TimedOut` somewhere in the chain).
fn timed_out(e: &(dyn StdError + 'static)) -> bool {
    chain(e).any(|err| {
        err.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    })
}

/// The innermost error's message: the specific one ("Connection refused").
/// Outer messages say less, and no layer here ever names the URL, which
/// may carry credentials.
fn root_cause(e: &(dyn StdError + 'static)) -> String {
    chain(e)
        .last()
        .map_or_else(String::new, ToString::to_string)
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
