//! The TLS parameters of a PostgreSQL connection string: pure, no I/O.
//!
//! `tokio-postgres` knows `sslmode` as `disable | prefer | require` only and
//! refuses `verify-ca` and `verify-full`, the two modes that check the
//! server's certificate. So Sluice takes `sslmode` and `sslrootcert` out of
//! the string itself, in both of libpq's forms (a URL's query, or
//! `key=value` words), and hands the rest to `tokio-postgres` unchanged.

use std::fmt;

/// How a connection uses TLS, with libpq's names and meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS when the server offers it, else plain; the certificate is not
    /// checked. libpq's default, and Sluice's.
    Prefer,
    /// TLS or no connection; the certificate is not checked unless a root
    /// certificate is given, which makes it `VerifyCa` (as libpq does).
    Require,
    /// TLS, with the server's certificate chained to a trusted root.
    VerifyCa,
    /// `VerifyCa`, and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err("sslmode=allow is not supported: use prefer (TLS when the \
                            server offers it) or disable"
                    .into());
            }
            other => {
                return Err(format!(
                    "unknown sslmode {other:?}: use disable, prefer, require, verify-ca \
                     or verify-full"
                ));
            }
        })
    }

    /// Whether the server's certificate chain is checked.
    pub fn verifies_chain(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        })
    }
}

/// The TLS settings taken out of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsParams {
    /// The effective mode: `require` with a root certificate is `VerifyCa`.
    pub mode: SslMode,
    /// Whether the string named the mode (a plain connection then warns
    /// only when the operator did not choose it).
    pub mode_given: bool,
    /// PEM file of trusted roots; `None` means the system's roots.
    pub root_cert: Option<String>,
}

/// Splits `conn` into the string `tokio-postgres` parses and the TLS
/// parameters. A URL (`postgres://` or `postgresql://`) loses the two
/// query parameters; a `key=value` string loses the two words.
pub fn split(conn: &str) -> Result<(String, TlsParams), String> {
    let is_url = conn.starts_with("postgres://") || conn.starts_with("postgresql://");
    let (rest, pairs) = if is_url {
        split_url(conn)?
    } else {
        split_words(conn)?
    };
    let mut mode = None;
    let mut root_cert = None;
    for (key, value) in pairs {
        match key.as_str() {
            "sslmode" => mode = Some(SslMode::parse(&value)?),
            _ => root_cert = Some(value).filter(|v| !v.is_empty()),
        }
    }
    let mode_given = mode.is_some();
    let mut mode = mode.unwrap_or(SslMode::Prefer);
    if mode == SslMode::Require && root_cert.is_some() {
        mode = SslMode::VerifyCa;
    }
    Ok((
        rest,
        TlsParams {
            mode,
            mode_given,
            root_cert,
        },
    ))
}

fn is_tls_key(key: &str) -> bool {
    key == "sslmode" || key == "sslrootcert"
}

type Taken = Vec<(String, String)>;

fn split_url(url: &str) -> Result<(String, Taken), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        if is_tls_key(key) {
            taken.push((key.to_owned(), percent_decode(value)?));
        } else {
            kept.push(part);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, taken))
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        "postgres URL: bad percent-encoding in a TLS parameter".to_owned()
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "postgres URL: a TLS parameter is not UTF-8".to_owned())
}

/// libpq's `key = value` form: values may be single-quoted, with `\'` and
/// `\\` escapes inside; words are separated by white space.
fn split_words(conn: &str) -> Result<(String, Taken), String> {
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    let mut chars = conn.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return Err(format!(
                "postgres connection string: missing '=' after {key:?}"
            ));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, c)) => value.push(c),
                        None => return Err("postgres connection string: unterminated quote".into()),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err("postgres connection string: unterminated quote".into()),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        let end = chars.peek().map_or(conn.len(), |&(i, _)| i);
        if is_tls_key(&key) {
            taken.push((key, value));
        } else {
            kept.push(conn[start..end].trim_end());
        }
    }
    Ok((kept.join(" "), taken))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(conn: &str) -> TlsParams {
        match split(conn) {
            Ok((_, params)) => params,
            Err(e) => panic!("{conn}: {e}"),
        }
    }

    #[test]
    fn prefer_is_the_default_and_not_marked_as_chosen() {
        let (rest, p) = split("postgres://u@db/sluice").unwrap();
        assert_eq!(rest, "postgres://u@db/sluice");
        assert_eq!(
            (p.mode, p.mode_given, p.root_cert),
            (SslMode::Prefer, false, None)
        );
    }

    #[test]
    fn url_loses_only_the_tls_parameters() {
        let (rest, p) = split(
            "postgres://u:pw@db:5432/s?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u:pw@db:5432/s?application_name=x&connect_timeout=3"
        );
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert!(p.mode_given);
        assert_eq!(p.root_cert.as_deref(), Some("/etc/ca.pem"));
        let (rest, _) = split("postgresql://db/s?sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://db/s");
    }

    #[test]
    fn key_value_strings_lose_only_the_tls_words() {
        let (rest, p) =
            split("host=db user=u sslmode = verify-ca  sslrootcert='/a dir/ca.pem' dbname=s")
                .unwrap();
        assert_eq!(rest, "host=db user=u dbname=s");
        assert_eq!(p.mode, SslMode::VerifyCa);
        assert_eq!(p.root_cert.as_deref(), Some("/a dir/ca.pem"));
        let (rest, _) = split("host=db password='it\\'s' sslmode=disable").unwrap();
        assert_eq!(rest, "host=db password='it\\'s'");
    }

    #[test]
    fn require_with_a_root_certificate_verifies_the_chain_as_libpq_does() {
        assert_eq!(
            params("postgres://db/s?sslmode=require&sslrootcert=ca.pem").mode,
            SslMode::VerifyCa
        );
        assert_eq!(
            params("postgres://db/s?sslmode=require").mode,
            SslMode::Require
        );
    }

    #[test]
    fn every_libpq_mode_but_allow_is_understood() {
        for (name, mode) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            assert_eq!(
                params(&format!("postgres://db/s?sslmode={name}")).mode,
                mode
            );
            assert_eq!(mode.to_string(), name);
        }
        assert!(split("postgres://db/s?sslmode=allow").is_err());
        assert!(split("postgres://db/s?sslmode=verify_full").is_err());
        assert!(split("host=db sslmode='unterminated").is_err());
    }
}
