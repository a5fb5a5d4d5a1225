//! A self-signed certificate made in-process, and the TLS acceptor using it.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The acceptor and the certificate's PEM (for tests that trust it).
pub(crate) struct SelfSigned {
    pub acceptor: TlsAcceptor,
    pub cert_pem: String,
}

/// Issues a self-signed certificate for `127.0.0.1` and `localhost`.
///
/// # Panics
/// When certificate generation or the rustls config fails (a broken build).
pub(crate) fn self_signed() -> SelfSigned {
    let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names).expect("generate certificate");
    let cert_der: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key)
        .expect("server certificate");
    SelfSigned {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        cert_pem: certified.cert.pem(),
    }
}
