//! Certificates made in-process (self-signed, or issued by a private CA),
//! and the TLS acceptor using them.

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
    let pem = certified.cert.pem();
    with_cert(cert_der, &certified.key_pair, pem, Vec::new())
}

/// Issues a private CA (basicConstraints CA:TRUE) and a leaf for
/// `127.0.0.1` and `localhost` signed by it; `cert_pem` is the CA's, which
/// is what a client must trust.
///
/// # Panics
/// When certificate generation or the rustls config fails (a broken build).
pub(crate) fn private_ca() -> SelfSigned {
    private_ca_with_alpn(Vec::new())
}

/// [`private_ca`] for a server that offers HTTP/2 by ALPN (`h2`, then
/// `http/1.1`), as most public HTTPS front ends do.
pub(crate) fn private_ca_offering_h2() -> SelfSigned {
    private_ca_with_alpn(vec![b"h2".to_vec(), b"http/1.1".to_vec()])
}

fn private_ca_with_alpn(alpn: Vec<Vec<u8>>) -> SelfSigned {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Sluice Test Private CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let leaf_params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("leaf parameters");
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf = leaf_params
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("leaf certificate");
    with_cert(leaf.der().clone(), &leaf_key, ca.pem(), alpn)
}

fn with_cert(
    cert_der: CertificateDer<'static>,
    key_pair: &rcgen::KeyPair,
    cert_pem: String,
    alpn: Vec<Vec<u8>>,
) -> SelfSigned {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key)
        .expect("server certificate");
    config.alpn_protocols = alpn;
    SelfSigned {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        cert_pem,
    }
}
