use std::io;
use std::time::Duration;

use rustls::{AlertDescription, CertificateError, Error as Tls, PeerMisbehaved};

use super::*;
use crate::policy::{Class, classify_error};

/// A rustls error as the connector reports it: inside an `io::Error`.
fn failure(tls: Tls, connect: bool) -> Failure {
    let e = io::Error::other(tls);
    Failure::from_transport(&e, connect, Duration::from_secs(5))
}

#[test]
fn certificate_rejections_are_permanent_and_sent_nothing() {
    for tls in [
        Tls::InvalidCertificate(CertificateError::UnknownIssuer),
        Tls::InvalidCertificate(CertificateError::Expired),
        Tls::InvalidCertificate(CertificateError::NotValidForName),
        Tls::InvalidCertificate(CertificateError::Revoked),
        Tls::NoCertificatesPresented,
        Tls::UnsupportedNameType,
    ] {
        let f = failure(tls.clone(), true);
        assert_eq!(f.kind, TransportError::Certificate, "{tls:?}");
        assert_eq!(classify_error(f.kind), Class::Permanent, "{tls:?}");
        assert!(
            f.message
                .starts_with("TLS certificate rejected, request not sent: "),
            "{}",
            f.message
        );
        assert_eq!(f.kind.label(), "tls");
    }
}

#[test]
fn a_fatal_alert_during_the_handshake_is_retried_and_sent_nothing() {
    let f = failure(Tls::AlertReceived(AlertDescription::InternalError), true);
    assert_eq!(f.kind, TransportError::Tls);
    assert_eq!(classify_error(f.kind), Class::Retryable);
    assert!(
        f.message
            .starts_with("TLS handshake failed, request not sent: "),
        "{}",
        f.message
    );
    assert_eq!(f.kind.label(), "tls");
}

#[test]
fn a_tls_failure_after_the_request_is_retried_without_claiming_it_was_not_sent() {
    for tls in [
        Tls::DecryptError,
        Tls::AlertReceived(AlertDescription::InternalError),
        Tls::PeerMisbehaved(PeerMisbehaved::IllegalMiddleboxChangeCipherSpec),
        Tls::PeerSentOversizedRecord,
        Tls::General("anything".into()),
    ] {
        let f = failure(tls.clone(), false);
        assert_eq!(classify_error(f.kind), Class::Retryable, "{tls:?}");
        assert!(f.message.starts_with("TLS error: "), "{}", f.message);
        assert!(!f.message.contains("not sent"), "{}", f.message);
    }
}

#[test]
fn other_tls_failures_during_the_handshake_are_retried() {
    for tls in [
        Tls::DecryptError,
        Tls::AlertReceived(AlertDescription::HandshakeFailure),
        Tls::PeerMisbehaved(PeerMisbehaved::IllegalMiddleboxChangeCipherSpec),
    ] {
        let f = failure(tls.clone(), true);
        assert_eq!(classify_error(f.kind), Class::Retryable, "{tls:?}");
    }
}

#[test]
fn a_rustls_error_nested_in_io_errors_is_found() {
    let inner = io::Error::other(Tls::InvalidCertificate(CertificateError::UnknownIssuer));
    let outer = io::Error::new(io::ErrorKind::ConnectionAborted, inner);
    let f = Failure::from_transport(&outer, true, Duration::from_secs(5));
    assert_eq!(f.kind, TransportError::Certificate);
}

/// An error as the connector wraps the resolver's: its cause.
#[derive(Debug)]
struct Wrapped(ResolveError);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dns error")
    }
}

impl StdError for Wrapped {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn a_name_that_does_not_resolve_is_a_retryable_dns_failure_that_sent_nothing() {
    use super::super::resolver::LookupError;
    let e = Wrapped(ResolveError::Lookup(LookupError::NoSuchHost(
        "hooks.example.invalid".into(),
    )));
    let f = Failure::from_transport(&e, true, Duration::from_secs(5));
    assert_eq!(f.kind, TransportError::Dns);
    assert_eq!(f.kind.label(), "dns");
    assert_eq!(classify_error(f.kind), Class::Retryable);
    assert_eq!(
        f.message,
        "DNS lookup failed, request not sent: no such host hooks.example.invalid (NXDOMAIN)"
    );
}
