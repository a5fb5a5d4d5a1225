//! Per-destination CA bundles: PEM certificates an operator trusts for one
//! destination's private CA.
//!
//! Only CA certificates are accepted (basicConstraints `cA` TRUE). Why: the
//! TLS verifier treats any trust anchor as a root, so a self-signed *leaf*
//! pasted here would make that very leaf trusted, which is exactly what the
//! spec forbids. A CA certificate, in turn, is refused by the verifier when
//! a server presents it as its own end-entity certificate, so "self-signed
//! leaf certificates are refused" keeps holding with a bundle configured.
//!
//! The check reads just enough DER to find basicConstraints; signatures
//! and validity are left to the TLS verifier.

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The largest bundle accepted, in bytes.
pub const MAX_BUNDLE_BYTES: usize = 64 * 1024;
/// The most certificates in one bundle.
pub const MAX_CERTIFICATES: usize = 16;

/// Why a bundle is refused. Numbers are 1-based positions in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaError {
    #[error("must be at most {MAX_BUNDLE_BYTES} bytes")]
    TooLarge,
    #[error("holds no PEM certificate ('-----BEGIN CERTIFICATE-----')")]
    Empty,
    #[error("is not valid PEM")]
    Pem,
    #[error("holds more than {MAX_CERTIFICATES} certificates")]
    TooMany,
    #[error("certificate {0} is not a parsable X.509 certificate")]
    Der(usize),
    #[error(
        "certificate {0} is not a CA certificate (basicConstraints CA:TRUE); \
         a server's own certificate cannot be trusted directly"
    )]
    NotCa(usize),
}

/// Parses and checks a PEM bundle; returns its certificates.
pub fn parse_bundle(pem: &str) -> Result<Vec<CertificateDer<'static>>, CaError> {
    if pem.len() > MAX_BUNDLE_BYTES {
        return Err(CaError::TooLarge);
    }
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        let cert = cert.map_err(|_| CaError::Pem)?;
        certs.push(cert);
        if certs.len() > MAX_CERTIFICATES {
            return Err(CaError::TooMany);
        }
    }
    if certs.is_empty() {
        return Err(CaError::Empty);
    }
    for (i, cert) in certs.iter().enumerate() {
        match is_ca(cert) {
            None => return Err(CaError::Der(i + 1)),
            Some(false) => return Err(CaError::NotCa(i + 1)),
            Some(true) => {}
        }
    }
    Ok(certs)
}

/// Whether `der` says basicConstraints `cA` TRUE; `None` when it does not
/// parse as a certificate.
pub fn is_ca(der: &[u8]) -> Option<bool> {
    const SEQUENCE: u8 = 0x30;
    const EXTENSIONS: u8 = 0xa3;
    // OID 2.5.29.19, basicConstraints.
    const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
    let (tag, cert, _) = tlv(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, mut tbs, _) = tlv(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    while !tbs.is_empty() {
        let (tag, value, rest) = tlv(tbs)?;
        tbs = rest;
        if tag != EXTENSIONS {
            continue;
        }
        let (_, mut exts, _) = tlv(value)?;
        while !exts.is_empty() {
            let (_, ext, rest) = tlv(exts)?;
            exts = rest;
            let (oid_tag, oid, mut fields) = tlv(ext)?;
            if oid_tag != 0x06 || oid != BASIC_CONSTRAINTS {
                continue;
            }
            // Optional `critical` BOOLEAN, then the OCTET STRING value.
            let (mut tag, mut value, rest) = tlv(fields)?;
            if tag == 0x01 {
                fields = rest;
                (tag, value, _) = tlv(fields)?;
            }
            if tag != 0x04 {
                return None;
            }
            let (_, constraints, _) = tlv(value)?;
            // SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLen INTEGER OPTIONAL }
            return Some(match tlv(constraints) {
                Some((0x01, flag, _)) => flag.first().is_some_and(|b| *b != 0),
                _ => false,
            });
        }
    }
    Some(false)
}

/// One DER tag-length-value: (tag, value, the bytes after it).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, after) = rest.split_at(n);
        rest = after;
        bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b))
    };
    if rest.len() < len {
        return None;
    }
    let (value, after) = rest.split_at(len);
    Some((tag, value, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlv_reads_short_and_long_lengths() {
        assert_eq!(
            tlv(&[0x04, 0x01, 0xaa, 0xbb]),
            Some((4, &[0xaa][..], &[0xbb][..]))
        );
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([7u8; 0x80]);
        assert_eq!(tlv(&long).map(|(_, v, _)| v.len()), Some(0x80));
        assert_eq!(tlv(&[0x04, 0x05, 0x00]), None);
    }

    #[test]
    fn garbage_and_empty_bundles_are_refused() {
        assert_eq!(parse_bundle(""), Err(CaError::Empty));
        assert_eq!(parse_bundle("hello"), Err(CaError::Empty));
        let bad = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert_eq!(parse_bundle(bad), Err(CaError::Der(1)));
        assert_eq!(is_ca(&[0x30, 0x00]), None);
    }

    fn ca_pem() -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn ca_certificates_are_accepted_and_leaves_refused() {
        let ca = ca_pem();
        assert_eq!(parse_bundle(&ca).map(|c| c.len()), Ok(1));
        let two = format!("{ca}{}", ca_pem());
        assert_eq!(parse_bundle(&two).map(|c| c.len()), Ok(2));
        let leaf = rcgen::generate_simple_self_signed(vec!["localhost".into()])
            .unwrap()
            .cert
            .pem();
        assert_eq!(parse_bundle(&leaf), Err(CaError::NotCa(1)));
        assert_eq!(parse_bundle(&format!("{ca}{leaf}")), Err(CaError::NotCa(2)));
    }
}
