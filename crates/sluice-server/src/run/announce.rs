//! What `run` tells its caller while starting: the generated admin token.

/// Things `run` reports to its caller while starting.
pub trait Announce: Send + Sync {
    /// An admin token was generated; it is shown this once and only its hash
    /// is stored.
    fn admin_token_generated(&self, token: &str);
}

/// Prints announcements on standard error, outside the log stream so the
/// token never lands in log storage.
pub struct StderrAnnounce;

impl Announce for StderrAnnounce {
    fn admin_token_generated(&self, token: &str) {
        eprintln!(
            "\n  Generated admin token (shown once; set SLUICE_ADMIN_TOKEN to choose your own):\n\n    {token}\n"
        );
    }
}

/// [`StderrAnnounce`] for `log_format = "json"`: the same notice as one JSON
/// object on one line, laid out as the JSON log lines around it (timestamp,
/// level, fields, target), so the stream stays one object per line.
pub struct JsonStderrAnnounce;

impl Announce for JsonStderrAnnounce {
    fn admin_token_generated(&self, token: &str) {
        eprintln!("{}", token_notice_json(token, chrono::Utc::now()));
    }
}

fn token_notice_json(token: &str, now: chrono::DateTime<chrono::Utc>) -> serde_json::Value {
    serde_json::json!({
        "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": "WARN",
        "fields": {
            "message": "generated admin token (shown once; set SLUICE_ADMIN_TOKEN to choose your own)",
            "admin_token": token,
        },
        "target": "sluice_server",
    })
}

#[cfg(test)]
mod tests {
    use super::token_notice_json;

    #[test]
    fn the_json_token_notice_is_one_log_shaped_line() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let line = token_notice_json("tok-123", at).to_string();
        assert!(!line.contains('\n'), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(back["level"], "WARN");
        assert_eq!(back["fields"]["admin_token"], "tok-123");
        assert_eq!(back["timestamp"], "2027-01-15T08:00:00.000000Z");
    }
}
