//! Call types and the endpoints that carry them.

use serde::{Deserialize, Serialize};

/// The type of one analytics call (the `type` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    Track,
    Identify,
    Page,
    Screen,
    Group,
    Alias,
}

impl EventType {
    pub const ALL: [EventType; 6] = [
        EventType::Track,
        EventType::Identify,
        EventType::Page,
        EventType::Screen,
        EventType::Group,
        EventType::Alias,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Track => "track",
            EventType::Identify => "identify",
            EventType::Page => "page",
            EventType::Screen => "screen",
            EventType::Group => "group",
            EventType::Alias => "alias",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// Which collection endpoint a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/track`, `/v1/t`, ...: one call whose type is implied by the path.
    Single(EventType),
    /// `/v1/batch`, `/v1/import`, `/v1/b`: `{"batch": [...]}`.
    Batch,
}

impl Endpoint {
    /// Maps the last path segment after `/v1/` to an endpoint, accepting the
    /// full names, the legacy `import` and the browser library's one-letter forms.
    pub fn from_path_segment(seg: &str) -> Option<Self> {
        Some(match seg {
            "batch" | "import" | "b" => Endpoint::Batch,
            "track" | "t" => Endpoint::Single(EventType::Track),
            "identify" | "i" => Endpoint::Single(EventType::Identify),
            "page" | "p" => Endpoint::Single(EventType::Page),
            "screen" | "s" => Endpoint::Single(EventType::Screen),
            "group" | "g" => Endpoint::Single(EventType::Group),
            "alias" | "a" => Endpoint::Single(EventType::Alias),
            _ => return None,
        })
    }
}
