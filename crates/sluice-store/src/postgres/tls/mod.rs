//! TLS to PostgreSQL, with rustls and libpq's `sslmode` semantics.
//!
//! | `sslmode` | encrypted | chain checked | host name checked |
//! |---|---|---|---|
//! | `disable` | no | | |
//! | `prefer` (default) | when the server offers TLS | no | no |
//! | `require` | yes | no (yes with `sslrootcert`) | no |
//! | `verify-ca` | yes | yes | no |
//! | `verify-full` | yes | yes | yes |
//!
//! Trusted roots come from `sslrootcert` (a PEM file) when given, else from
//! the operating system's store. Unchecked modes still verify the
//! handshake's signatures, so they stop a passive eavesdropper but not an
//! active one: across machines, `verify-full` is the mode to use. After the
//! pool opens, [`describe`] reads `pg_stat_ssl` to log what the connection
//! really is, and warns when it is plain without the operator asking.

mod params;
mod verify;

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::ErrorKind;

pub use params::{SslMode, TlsParams, split};

use crate::{Result, StoreError};

/// The mode `tokio-postgres` negotiates: it never checks certificates
/// itself, so every mode that must have TLS is its `Require`.
pub(super) fn negotiated(mode: SslMode) -> tokio_postgres::config::SslMode {
    use tokio_postgres::config::SslMode as Pg;
    match mode {
        SslMode::Disable => Pg::Disable,
        SslMode::Prefer => Pg::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Pg::Require,
    }
}

/// The connector for `params`: rustls with the ring provider and the
/// verifier the mode calls for.
pub(super) fn connector(params: &TlsParams) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::backend(ErrorKind::Config, format!("postgres TLS: {e}")))?;
    let config = if params.mode.verifies_chain() {
        let roots = Arc::new(roots(params.root_cert.as_deref())?);
        if params.mode == SslMode::VerifyFull {
            builder.with_root_certificates(roots).with_no_client_auth()
        } else {
            let chain = verify::ChainOnly::new(roots, provider)?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(chain))
                .with_no_client_auth()
        }
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verify::Unchecked::new(provider)))
            .with_no_client_auth()
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The roots a checking mode trusts.
fn roots(file: Option<&str>) -> Result<rustls::RootCertStore> {
    let mut store = rustls::RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = match file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| {
                StoreError::backend(
                    ErrorKind::Config,
                    format!("postgres sslrootcert {path}: {e}"),
                )
            })?;
            CertificateDer::pem_slice_iter(&pem)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| {
                    StoreError::backend(
                        ErrorKind::Config,
                        format!("postgres sslrootcert {path}: {e}"),
                    )
                })?
        }
        None => rustls_native_certs::load_native_certs().certs,
    };
    let (added, _ignored) = store.add_parsable_certificates(certs);
    if added == 0 {
        let from = file.map_or_else(
            || "the system's certificate store".to_owned(),
            str::to_owned,
        );
        return Err(StoreError::backend(
            ErrorKind::Config,
            format!("postgres TLS: no usable root certificate in {from}; set sslrootcert"),
        ));
    }
    Ok(store)
}

/// Logs what the pooled connection turned out to be. Plain TCP warns
/// unless `sslmode=disable` was asked for; TLS whose certificate is not
/// checked says how to check it.
pub(super) async fn describe(client: &tokio_postgres::Client, params: &TlsParams, server: &str) {
    let ssl = client
        .query_opt(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await;
    let (encrypted, version): (bool, Option<String>) = match ssl {
        Ok(Some(row)) => (row.get(0), row.get(1)),
        // pg_stat_ssl is readable by every role; an error here says
        // nothing about the connection, so nothing is claimed.
        Ok(None) | Err(_) => return,
    };
    let version = version.unwrap_or_default();
    match (encrypted, params.mode) {
        (false, SslMode::Disable) if params.mode_given => {
            tracing::info!(server, "postgres connection is plain TCP (sslmode=disable)");
        }
        (false, _) => tracing::warn!(
            server,
            "postgres connection is NOT encrypted: the server does not offer TLS; \
             enable ssl on the server and set sslmode=verify-full, or set sslmode=disable \
             to say plain TCP is intended"
        ),
        (true, mode) if mode.verifies_chain() => {
            tracing::info!(server, tls = %version, sslmode = %mode, "postgres connection uses TLS");
        }
        (true, mode) => tracing::warn!(
            server,
            tls = %version,
            sslmode = %mode,
            "postgres connection uses TLS, but the server's certificate is not checked; \
             set sslmode=verify-full (and sslrootcert) to stop an impostor"
        ),
    }
}
