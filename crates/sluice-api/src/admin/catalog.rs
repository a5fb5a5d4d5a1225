//! `/api/v1/catalog/destinations`: the destination types and their settings.

use axum::Json;
use serde_json::{Value, json};

use super::webhook_settings::MAX_URLS;

/// The destination types and their settings (one type: `Webhooks`).
#[utoipa::path(get, path = "/catalog/destinations", tag = "destinations",
    responses((status = 200, description = "`{\"data\": [{name, description, types, settings: [...]}]}`", body = Object)))]
pub async fn destinations() -> Json<Value> {
    Json(json!({"data": [{
        "name": "Webhooks",
        "description": "POSTs one JSON message per call to up to five URLs, optionally signed with X-Signature (HMAC-SHA1).",
        "types": ["track", "page", "screen", "identify", "group", "alias", "delete"],
        "settings": [
            {
                "name": "urls",
                "label": "Webhook URLs",
                "type": "array",
                "max_items": MAX_URLS,
                "items": {"url": "full http(s) URL", "headers": "object of static header name: value"},
                "required": false,
            },
            {
                "name": "sharedSecret",
                "label": "Shared Secret",
                "type": "string",
                "secret": true,
                "required": false,
                "description": "When set, every request carries X-Signature: hex HMAC-SHA1 of the body keyed with this secret.",
            },
            {
                "name": "standardWebhooks",
                "label": "Standard Webhooks signing",
                "type": "object",
                "secret": true,
                "required": false,
                "items": {
                    "secret": "'whsec_…' secret, or \"generate\" (returned in full once)",
                    "rotationOverlapSeconds": "integer, default 86400: how long the old secret keeps signing after a rotation",
                },
                "description": "When set, every request also carries webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks, HMAC-SHA256).",
            },
            {
                "name": "caBundle",
                "label": "Custom CA bundle",
                "type": "string",
                "required": false,
                "description": "PEM CA certificates (CA:TRUE only) trusted for this destination's URLs, for endpoints behind a private CA.",
            },
        ],
    }]}))
}
