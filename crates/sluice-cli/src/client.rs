//! A small HTTP client for Sluice's two APIs: the admin API (bearer token)
//! and the collection API (write key as HTTP Basic user name).
//!
//! Every non-2xx answer becomes [`CliError::Api`] carrying the server's
//! `code` and `message` (the stable error shape), so commands can print
//! what the server said and callers can tell a `400` from a `503`. A 2xx
//! whose body is not JSON (a proxy's index page answering every path) is
//! [`CliError::NotSluice`], never success, and no answer is read past
//! [`MAX_ANSWER_BYTES`]. The URL is shown with its password masked.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::error::CliError;

/// The largest answer read: a full page of the largest list is well under
/// it; anything bigger is not Sluice talking.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

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
        let shown = masked(&self.base);
        let mut resp = req
            .send()
            .await
            .map_err(|e| CliError::Transport(describe(&e, &shown)))?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| CliError::Transport(describe(&e, &shown)))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(CliError::NotSluice(format!(
                    "{shown}: an answer over {} MiB",
                    MAX_ANSWER_BYTES >> 20
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            match serde_json::from_slice(&bytes) {
                Ok(v) => v,
                Err(_) if status.is_success() => {
                    return Err(CliError::NotSluice(format!(
                        "{shown} answered HTTP {} with a body that is not JSON",
                        status.as_u16()
                    )));
                }
                Err(_) => {
                    Value::String(String::from_utf8_lossy(&bytes).chars().take(500).collect())
                }
            }
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

/// `url` with the password of its userinfo as `****`: error messages
/// reach terminals and CI logs.
pub fn masked(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let hidden = if userinfo.contains(':') { ":****" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

fn describe(e: &reqwest::Error, base: &str) -> String {
    // reqwest's own text names the URL too: mask it there as well.
    let mut text = format!("{base}: {}", mask_urls(&e.to_string()));
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {}", mask_urls(&s.to_string())));
        source = s.source();
    }
    text
}

/// Masks the password of every `scheme://user:password@` in `text`.
fn mask_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.contains("://") {
                let trimmed = word.trim_matches(|c| c == '(' || c == ')');
                word.replace(trimmed, &masked(trimmed))
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            masked("http://user:pw-secret@host:8088/x"),
            "http://user:****@host:8088/x"
        );
        assert_eq!(masked("https://host/a@b"), "https://host/a@b");
        assert_eq!(masked("http://token@host"), "http://token@host");
        assert_eq!(
            mask_urls("error sending request for url (http://u:p@h/api/v1/x)"),
            "error sending request for url (http://u:****@h/api/v1/x)"
        );
    }
}
