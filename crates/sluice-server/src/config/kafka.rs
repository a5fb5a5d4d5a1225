//! `[kafka]`: the Kafka shape, where accepted calls live in an Apache Kafka
//! topic and PostgreSQL keeps configuration and retry state
//! (docs/kafka.md).

use serde::{Deserialize, Serialize};

/// The event log in Kafka. Off (the log stays in the database) while
/// `bootstrap_servers` is empty. `Debug` leaves the SASL password out.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// `host:port,host:port` of one or more brokers; empty (the default)
    /// keeps the event log in the database.
    pub bootstrap_servers: String,
    /// The topic of accepted calls (`sluice.events`).
    pub topic: String,
    /// Partitions of the topic when Sluice creates it (64). They bound how
    /// many nodes share delivery, and cannot be reduced later.
    pub partitions: i32,
    /// Brokers holding each partition when Sluice creates the topic (3).
    pub replication: i32,
    /// How long a record is kept in the topic, in hours (168: 7 days).
    pub retention_hours: u64,
    /// How long ingest waits for every in-sync replica to acknowledge a
    /// call before it answers `503` (10000 ms).
    pub ack_timeout_ms: u64,
    /// The consumer group of the nodes that deliver (`sluice-delivery`).
    pub delivery_group: String,
    /// The most calls a node remembers to drop clients' retries within
    /// `storage.dedup_window_secs` (10,000,000: 90 to 230 MB). Past it the
    /// oldest are forgotten first, so the window is shorter than configured
    /// (docs/kafka.md, "Ingest").
    pub dedup_max_calls: usize,
    /// How the brokers are reached: `plaintext` (the default), `ssl`,
    /// `sasl_plaintext` or `sasl_ssl`, as Kafka names them.
    pub security_protocol: String,
    /// With TLS: a PEM file of the CAs that sign the brokers'
    /// certificates; unset, the system's roots.
    pub ssl_ca_location: Option<String>,
    /// With TLS, for brokers that authenticate clients by certificate: PEM
    /// files of this client's certificate and of its key.
    pub ssl_certificate_location: Option<String>,
    pub ssl_key_location: Option<String>,
    /// With SASL: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (`PLAIN`).
    pub sasl_mechanism: String,
    pub sasl_username: Option<String>,
    /// Never logged, never shown.
    pub sasl_password: Option<String>,
}

impl std::fmt::Debug for KafkaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSettings")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("topic", &self.topic)
            .field("partitions", &self.partitions)
            .field("replication", &self.replication)
            .field("retention_hours", &self.retention_hours)
            .field("ack_timeout_ms", &self.ack_timeout_ms)
            .field("delivery_group", &self.delivery_group)
            .field("dedup_max_calls", &self.dedup_max_calls)
            .field("security_protocol", &self.security_protocol)
            .field("ssl_ca_location", &self.ssl_ca_location)
            .field("ssl_certificate_location", &self.ssl_certificate_location)
            .field("ssl_key_location", &self.ssl_key_location)
            .field("sasl_mechanism", &self.sasl_mechanism)
            .field("sasl_username", &self.sasl_username)
            .field(
                "sasl_password",
                &self.sasl_password.as_ref().map(|_| "(set)"),
            )
            .finish()
    }
}

impl Default for KafkaSettings {
    fn default() -> Self {
        KafkaSettings {
            bootstrap_servers: String::new(),
            topic: "sluice.events".into(),
            partitions: 64,
            replication: 3,
            retention_hours: 168,
            ack_timeout_ms: 10_000,
            delivery_group: "sluice-delivery".into(),
            dedup_max_calls: 10_000_000,
            security_protocol: "plaintext".into(),
            ssl_ca_location: None,
            ssl_certificate_location: None,
            ssl_key_location: None,
            sasl_mechanism: "PLAIN".into(),
            sasl_username: None,
            sasl_password: None,
        }
    }
}

impl KafkaSettings {
    /// Whether the event log is in Kafka.
    pub fn enabled(&self) -> bool {
        !self.bootstrap_servers.trim().is_empty()
    }

    /// Whether the brokers are reached over TLS.
    pub fn tls(&self) -> bool {
        matches!(self.protocol().as_str(), "ssl" | "sasl_ssl")
    }

    /// Whether the client authenticates with SASL.
    pub fn sasl(&self) -> bool {
        matches!(self.protocol().as_str(), "sasl_plaintext" | "sasl_ssl")
    }

    fn protocol(&self) -> String {
        self.security_protocol.to_ascii_lowercase()
    }

    /// Checks the TLS and SASL settings: the key and the reason of the
    /// first that cannot work.
    pub(super) fn check_security(&self) -> Result<(), (&'static str, String)> {
        let protocol = self.protocol();
        if !matches!(
            protocol.as_str(),
            "plaintext" | "ssl" | "sasl_plaintext" | "sasl_ssl"
        ) {
            return Err((
                "kafka.security_protocol",
                "must be plaintext, ssl, sasl_plaintext or sasl_ssl".into(),
            ));
        }
        if self.tls() {
            let files = [
                ("kafka.ssl_ca_location", &self.ssl_ca_location),
                (
                    "kafka.ssl_certificate_location",
                    &self.ssl_certificate_location,
                ),
                ("kafka.ssl_key_location", &self.ssl_key_location),
            ];
            for (key, path) in files {
                if let Some(path) = path
                    && std::fs::metadata(path).is_err()
                {
                    return Err((key, format!("cannot read {path}")));
                }
            }
            if self.ssl_certificate_location.is_some() != self.ssl_key_location.is_some() {
                return Err((
                    "kafka.ssl_certificate_location",
                    "a client certificate needs its key (ssl_key_location), and a key its certificate"
                        .into(),
                ));
            }
        }
        if self.sasl() {
            if !matches!(
                self.sasl_mechanism.as_str(),
                "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"
            ) {
                return Err((
                    "kafka.sasl_mechanism",
                    "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512".into(),
                ));
            }
            if self.sasl_username.as_deref().is_none_or(str::is_empty)
                || self.sasl_password.is_none()
            {
                return Err((
                    "kafka.sasl_username",
                    "a SASL protocol needs sasl_username and sasl_password".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sasl_ssl() -> KafkaSettings {
        KafkaSettings {
            bootstrap_servers: "broker:9093".into(),
            security_protocol: "SASL_SSL".into(),
            sasl_mechanism: "SCRAM-SHA-512".into(),
            sasl_username: Some("sluice".into()),
            sasl_password: Some("correct-horse".into()),
            ..KafkaSettings::default()
        }
    }

    #[test]
    fn sasl_over_tls_with_credentials_is_accepted_and_debug_hides_the_password() {
        let settings = sasl_ssl();
        assert_eq!(settings.check_security(), Ok(()));
        assert!(settings.tls() && settings.sasl());
        let shown = format!("{settings:?}");
        assert!(!shown.contains("correct-horse"), "{shown}");
    }

    #[test]
    fn settings_that_cannot_work_name_their_key() {
        let cases = [
            (
                KafkaSettings {
                    security_protocol: "tls".into(),
                    ..sasl_ssl()
                },
                "kafka.security_protocol",
            ),
            (
                KafkaSettings {
                    sasl_password: None,
                    ..sasl_ssl()
                },
                "kafka.sasl_username",
            ),
            (
                KafkaSettings {
                    sasl_mechanism: "GSSAPI".into(),
                    ..sasl_ssl()
                },
                "kafka.sasl_mechanism",
            ),
            (
                KafkaSettings {
                    ssl_ca_location: Some("/nonexistent/ca.pem".into()),
                    ..sasl_ssl()
                },
                "kafka.ssl_ca_location",
            ),
        ];
        for (settings, key) in cases {
            assert_eq!(settings.check_security().map_err(|e| e.0), Err(key));
        }
        assert_eq!(KafkaSettings::default().check_security(), Ok(()));
    }
}
