//! What one URL's answer means for the delivery: success, try again, or give up.

/// The class of one URL attempt's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// 2xx: the message counts as delivered.
    Success,
    /// Worth another attempt later (5xx, 408, 429, timeout, connection).
    Retryable,
    /// Retrying cannot help (other 4xx, 3xx, TLS certificate rejections).
    Permanent,
}

/// Why no HTTP response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportError {
    /// No complete answer within the configured timeout.
    Timeout,
    /// TCP connect or a dropped connection: often transient.
    Connect,
    /// The host name gave no address: NXDOMAIN, no A/AAAA record, or no
    /// answer from the name servers. Retried: a record may be added, a
    /// name server may recover; no connection was made.
    Dns,
    /// The peer's certificate (or identity) was rejected; no HTTP request
    /// was sent, and the next attempt would be refused the same way.
    Certificate,
    /// Any other TLS failure: a fatal alert from the peer (say
    /// `internal_error` from an overloaded terminator), a record that does
    /// not decrypt, a protocol violation. Like a dropped connection, often
    /// transient.
    Tls,
    /// The request could not be built (bad URL or header); it never left.
    InvalidRequest,
    /// Anything else on the wire (reset mid-response, protocol error).
    Other,
    /// The address is in a blocked network (`delivery.allow_networks`); no
    /// connection was made. Settings, not time, change that.
    Blocked,
}

impl TransportError {
    /// A short stable name, for log lines.
    pub fn label(self) -> &'static str {
        match self {
            TransportError::Timeout => "timeout",
            TransportError::Connect => "connect",
            TransportError::Dns => "dns",
            TransportError::Certificate | TransportError::Tls => "tls",
            TransportError::InvalidRequest => "invalid_request",
            TransportError::Other => "other",
            TransportError::Blocked => "blocked",
        }
    }
}

/// Classifies an HTTP status. Redirects are not followed, so a 3xx is a
/// permanent failure: the endpoint must be configured with its final URL.
pub fn classify_status(status: u16) -> Class {
    match status {
        200..=299 => Class::Success,
        408 | 429 => Class::Retryable,
        500..=599 => Class::Retryable,
        _ => Class::Permanent,
    }
}

/// Classifies a transport error. A bad certificate will still be bad on the
/// next attempt, and an endpoint whose certificate is not trusted gets an
/// error and no request; other TLS failures are the connection's, and retried.
pub fn classify_error(error: TransportError) -> Class {
    match error {
        TransportError::Timeout
        | TransportError::Connect
        | TransportError::Dns
        | TransportError::Tls
        | TransportError::Other => Class::Retryable,
        TransportError::Certificate | TransportError::InvalidRequest | TransportError::Blocked => {
            Class::Permanent
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_2xx_is_success() {
        for s in [200, 201, 202, 204, 299] {
            assert_eq!(classify_status(s), Class::Success, "{s}");
        }
    }

    #[test]
    fn server_errors_timeouts_and_rate_limits_are_retryable() {
        for s in [408, 429, 500, 502, 503, 504, 599] {
            assert_eq!(classify_status(s), Class::Retryable, "{s}");
        }
    }

    #[test]
    fn other_4xx_and_redirects_are_permanent() {
        for s in [301, 302, 307, 400, 401, 403, 404, 410, 413, 422, 100] {
            assert_eq!(classify_status(s), Class::Permanent, "{s}");
        }
    }

    #[test]
    fn certificate_rejections_are_permanent_while_other_tls_timeouts_and_connect_errors_retry() {
        assert_eq!(
            classify_error(TransportError::Certificate),
            Class::Permanent
        );
        assert_eq!(classify_error(TransportError::Tls), Class::Retryable);
        assert_eq!(
            classify_error(TransportError::InvalidRequest),
            Class::Permanent
        );
        assert_eq!(classify_error(TransportError::Blocked), Class::Permanent);
        assert_eq!(classify_error(TransportError::Timeout), Class::Retryable);
        assert_eq!(classify_error(TransportError::Connect), Class::Retryable);
        assert_eq!(classify_error(TransportError::Dns), Class::Retryable);
        assert_eq!(classify_error(TransportError::Other), Class::Retryable);
    }
}
