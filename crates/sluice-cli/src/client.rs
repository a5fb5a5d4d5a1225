//! A small HTTP client for Sluice's two APIs: the admin API (bearer token)
//! and the collection API (write key as HTTP Basic user name).
//!
//! Every non-2xx answer becomes [`CliError::Api`] carrying the server's
//! `code` and `message` (the stable error shape), so commands can print
//! what the server said and callers can tell a `400` from a `503`.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::error::CliError;

/// Where Sluice is and how to authenticate to its admin API.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// Base URL of the Sluice server.
    #[arg(
        long,
        global = true,
        env = "SLUICE_URL",
        default_value = "http://127.0.0.1:8088"
    )]
    pub url: String,
    /// Admin API token (`Authorization: Bearer`).
    #[arg(
        long,
        global = true,
        env = "SLUICE_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

/// The answer to one request: its status and, when it had one, its JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Api {
    pub fn new(conn: &Connection) -> Result<Api, CliError> {
        let base = conn.url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(CliError::Usage(format!(
                "--url must start with http:// or https:// (got '{base}')"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("sluice-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Transport(e.to_string()))?;
        Ok(Api {
            http,
            base,
            token: conn.token.clone().filter(|t| !t.is_empty()),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// An admin API call under `/api/v1`; `path` starts with `/`.
    pub async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CliError> {
        let token = self.token.as_deref().ok_or_else(|| {
            CliError::Usage("the admin API needs a token: --token or SLUICE_ADMIN_TOKEN".into())
        })?;
        let mut req = self
            .http
            .request(method, format!("{}/api/v1{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let answer = self.send(req).await?;
        ok_or_api_error(answer)
    }

    /// POSTs a ready-made JSON body to `/v1/batch` with `write_key`.
    pub async fn batch(&self, write_key: &str, body: Vec<u8>) -> Result<Answer, CliError> {
        let req = self
            .http
            .post(format!("{}/v1/batch", self.base))
            .basic_auth(write_key, Some(""))
            .header("content-type", "application/json")
            .body(body);
        self.send(req).await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Answer, CliError> {
        let resp = req
            .send()
            .await
            .map_err(|e| CliError::Transport(describe(&e, &self.base)))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| CliError::Transport(describe(&e, &self.base)))?;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&bytes).chars().take(500).collect())
            })
        };
        Ok(Answer { status, body })
    }
}

/// The body of a 2xx answer, or the server's error.
pub fn ok_or_api_error(answer: Answer) -> Result<Value, CliError> {
    if answer.status.is_success() {
        Ok(answer.body)
    } else {
        Err(api_error(answer))
    }
}

/// The server's `{code, message}` as an error; a body in another shape (a
/// proxy's page, say) is shown as it came.
pub fn api_error(answer: Answer) -> CliError {
    let field = |name: &str| answer.body.get(name).and_then(Value::as_str);
    let (code, message) = match (field("code"), field("message")) {
        (Some(code), Some(message)) => (code.to_owned(), message.to_owned()),
        _ => (
            String::new(),
            match &answer.body {
                Value::String(s) => s.clone(),
                Value::Null => "(empty body)".into(),
                other => other.to_string(),
            },
        ),
    };
    CliError::Api {
        status: answer.status.as_u16(),
        code,
        message,
    }
}

fn describe(e: &reqwest::Error, base: &str) -> String {
    let mut text = format!("{base}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
