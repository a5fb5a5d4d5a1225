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
        if let Some(tls) = tls_cause(e) {
            return Failure {
                kind: TransportError::Tls,
                message: format!("TLS error, request not sent: {tls}"),
            };
        }
        if let Some(blocked) = blocked_cause(e) {
            return Failure::blocked(blocked);
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

/// The rustls error somewhere in the chain, if any. rustls errors travel
/// inside (possibly nested) `io::Error`s, whose `source()` skips the wrapped
/// error itself, so each `io::Error` is opened with `get_ref`.
fn tls_cause(e: &(dyn StdError + 'static)) -> Option<String> {
    chain(e).find_map(find_rustls).map(ToString::to_string)
}

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
