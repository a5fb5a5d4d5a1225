//! The `[http]` and `[metrics]` configuration sections: what a client may
//! cost the server (time, connections, memory) and who may read metrics.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Time a client has to send a whole request head, from its first byte
    /// (10 s). Slow-header clients are closed after it.
    pub head_timeout_ms: u64,
    /// Time a client has to send a whole request body, from the end of the
    /// head (30 s); then `408`.
    pub body_timeout_ms: u64,
    /// An idle keep-alive connection is closed after this (60 s).
    pub keep_alive_idle_ms: u64,
    /// Most client connections open at once (4096). Lowered at start-up to
    /// stay below the descriptor limit. At the cap, the connection idle the
    /// longest is closed to make room.
    pub max_connections: usize,
    /// Largest request head, request line and headers together (64 KiB).
    /// A larger head gets `431` in the JSON error shape.
    pub max_head_bytes: usize,
    /// Request body bytes held at once, all requests together (256 MiB).
    /// Over it, `503` with `Retry-After`.
    pub body_budget_bytes: usize,
    /// The share of that budget for requests without an HTTP Basic write
    /// key (32 MiB).
    pub anonymous_body_budget_bytes: usize,
    /// After SIGTERM, how long in-flight requests get to finish before
    /// their connections are closed (10 s).
    pub shutdown_grace_ms: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            head_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            keep_alive_idle_ms: 60_000,
            max_connections: 4096,
            max_head_bytes: 64 * 1024,
            body_budget_bytes: 256 * 1024 * 1024,
            anonymous_body_budget_bytes: 32 * 1024 * 1024,
            shutdown_grace_ms: 10_000,
        }
    }
}

/// hyper's smallest read buffer; a head limit below it cannot be enforced.
pub const MIN_HEAD_BYTES: usize = 8192;

impl HttpSettings {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, why: &str| {
            Err(ConfigError::Invalid {
                key,
                why: why.into(),
            })
        };
        if self.head_timeout_ms == 0 || self.body_timeout_ms == 0 || self.keep_alive_idle_ms == 0 {
            return invalid("http", "timeouts must be at least 1 ms");
        }
        if self.max_connections < 1 {
            return invalid("http.max_connections", "must be at least 1");
        }
        if self.max_head_bytes < MIN_HEAD_BYTES {
            return invalid("http.max_head_bytes", "must be at least 8192");
        }
        if self.anonymous_body_budget_bytes > self.body_budget_bytes {
            return invalid(
                "http.anonymous_body_budget_bytes",
                "must not exceed http.body_budget_bytes",
            );
        }
        Ok(())
    }
}

#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// When set, `/metrics` asks for `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// When set, `/metrics` is served on this address only, not on `listen`.
    pub listen: Option<SocketAddr>,
}

impl std::fmt::Debug for MetricsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSettings")
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("listen", &self.listen)
            .finish()
    }
}

impl MetricsSettings {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.token.as_ref().is_some_and(|t| t.len() < 16) {
            return Err(ConfigError::Invalid {
                key: "metrics.token",
                why: "must be at least 16 characters".into(),
            });
        }
        Ok(())
    }
}
