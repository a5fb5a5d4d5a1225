//! How a client reaches the brokers: TLS, and SASL to authenticate.
//!
//! librdkafka reads these as settings; [`Security::settings`] is the pure
//! mapping, so what a configuration asks for is tested without a broker.
//! With TLS the broker's certificate is checked against the CA file given,
//! else the system's roots, and its name against the address dialled
//! (librdkafka's `ssl.endpoint.identification.algorithm=https`, its
//! default): a broker the client cannot verify is refused, never read in
//! plaintext instead.

/// The transport to the brokers (Kafka's `security.protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// No TLS, no authentication: for a private network only.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL authentication without TLS (the password crosses the network
    /// in the clear with `PLAIN`).
    SaslPlaintext,
    /// SASL authentication over TLS.
    SaslSsl,
}

impl Protocol {
    /// Reads Kafka's name of a protocol, in any case.
    pub fn parse(name: &str) -> Option<Protocol> {
        match name.to_ascii_lowercase().as_str() {
            "plaintext" => Some(Protocol::Plaintext),
            "ssl" => Some(Protocol::Ssl),
            "sasl_plaintext" => Some(Protocol::SaslPlaintext),
            "sasl_ssl" => Some(Protocol::SaslSsl),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "plaintext",
            Protocol::Ssl => "ssl",
            Protocol::SaslPlaintext => "sasl_plaintext",
            Protocol::SaslSsl => "sasl_ssl",
        }
    }

    /// Whether the connection is encrypted.
    pub fn tls(self) -> bool {
        matches!(self, Protocol::Ssl | Protocol::SaslSsl)
    }

    /// Whether the client authenticates with SASL.
    pub fn sasl(self) -> bool {
        matches!(self, Protocol::SaslPlaintext | Protocol::SaslSsl)
    }
}

/// The SASL mechanisms Sluice offers: those librdkafka implements itself.
pub const MECHANISMS: [&str; 3] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// SASL credentials. `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq)]
pub struct Sasl {
    /// One of [`MECHANISMS`].
    pub mechanism: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"(set)")
            .finish()
    }
}

/// TLS and SASL settings of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Security {
    pub protocol: Protocol,
    /// PEM file of the CAs that sign the brokers' certificates; `None`:
    /// the system's roots.
    pub ca_location: Option<String>,
    /// PEM files of a client certificate and its key, for brokers that
    /// authenticate clients by certificate.
    pub certificate_location: Option<String>,
    pub key_location: Option<String>,
    /// Credentials, with a SASL protocol.
    pub sasl: Option<Sasl>,
}

impl Security {
    /// The librdkafka settings of this security. Secrets are among them:
    /// they go to the client, never to a log.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("security.protocol", self.protocol.name().to_owned())];
        if self.protocol.tls() {
            let files = [
                ("ssl.ca.location", &self.ca_location),
                ("ssl.certificate.location", &self.certificate_location),
                ("ssl.key.location", &self.key_location),
            ];
            for (key, value) in files {
                if let Some(path) = value {
                    out.push((key, path.clone()));
                }
            }
        }
        if let (true, Some(sasl)) = (self.protocol.sasl(), &self.sasl) {
            out.push(("sasl.mechanism", sasl.mechanism.clone()));
            out.push(("sasl.username", sasl.username.clone()));
            out.push(("sasl.password", sasl.password.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(settings: &'a [(&str, String)], key: &str) -> Option<&'a str> {
        settings
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn plaintext_sets_only_the_protocol() {
        let settings = Security::default().settings();
        assert_eq!(
            settings,
            vec![("security.protocol", "plaintext".to_owned())]
        );
    }

    #[test]
    fn sasl_over_tls_names_the_ca_and_the_credentials() {
        let security = Security {
            protocol: Protocol::SaslSsl,
            ca_location: Some("/etc/kafka/ca.pem".into()),
            sasl: Some(Sasl {
                mechanism: "SCRAM-SHA-256".into(),
                username: "sluice".into(),
                password: "s3cret".into(),
            }),
            ..Security::default()
        };
        let settings = security.settings();
        assert_eq!(value(&settings, "security.protocol"), Some("sasl_ssl"));
        assert_eq!(
            value(&settings, "ssl.ca.location"),
            Some("/etc/kafka/ca.pem")
        );
        assert_eq!(value(&settings, "sasl.mechanism"), Some("SCRAM-SHA-256"));
        assert_eq!(value(&settings, "sasl.password"), Some("s3cret"));
        assert_eq!(value(&settings, "ssl.certificate.location"), None);
    }

    #[test]
    fn files_and_credentials_apply_only_to_their_protocols() {
        let security = Security {
            protocol: Protocol::Plaintext,
            ca_location: Some("ca.pem".into()),
            sasl: Some(Sasl {
                mechanism: "PLAIN".into(),
                username: "u".into(),
                password: "p".into(),
            }),
            ..Security::default()
        };
        assert_eq!(security.settings().len(), 1);
    }

    #[test]
    fn debug_leaves_the_password_out() {
        let sasl = Sasl {
            mechanism: "PLAIN".into(),
            username: "sluice".into(),
            password: "hunter2-password".into(),
        };
        let shown = format!("{sasl:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("sluice"));
    }

    #[test]
    fn protocols_read_in_any_case() {
        assert_eq!(Protocol::parse("SASL_SSL"), Some(Protocol::SaslSsl));
        assert_eq!(Protocol::parse("ssl"), Some(Protocol::Ssl));
        assert_eq!(Protocol::parse("tls"), None);
        assert!(Protocol::SaslSsl.tls() && Protocol::SaslSsl.sasl());
        assert!(!Protocol::Ssl.sasl() && !Protocol::SaslPlaintext.tls());
    }
}
