//! Scripted answers of a [`crate::Receiver`].

use std::time::Duration;

/// One answer: sent after `delay`, or never when `hang` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
    /// Never answer; the connection stays open until the client gives up.
    pub hang: bool,
}

impl Default for Reply {
    fn default() -> Self {
        Reply::status(200)
    }
}

impl Reply {
    /// An immediate answer with `status` and an empty body.
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: String::new(),
            delay: Duration::ZERO,
            hang: false,
        }
    }

    /// A request that is recorded but never answered.
    pub fn hang() -> Self {
        Reply {
            hang: true,
            ..Reply::status(200)
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: &str) -> Self {
        self.body = body.to_owned();
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}
