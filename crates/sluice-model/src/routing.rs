//! TODO

use serde_json::{Map, Value};

/// Whether a call with this `integrations` object goes to destination `name`.
pub fn destination_enabled(integrations: Option<&Map<String, Value>>, name: &str) -> bool {
    let _ = (integrations, name);
    true
}
