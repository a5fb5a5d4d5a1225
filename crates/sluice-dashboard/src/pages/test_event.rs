//! `POST /destinations/{id}/test`: a signed test call through the real
//! pipeline. The call is parsed and enriched like any collection request,
//! stored as a call of the destination's first connected source (so it shows
//! in the debugger and counts in usage) with one pending delivery, to this
//! destination only; the delivery engine sends and signs it like any other.
//! The answer waits a little for the first attempt, then shows the delivery
//! log with the test call's delivery marked.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use chrono::Utc;
use serde_json::json;
use sluice_api::ApiError;
use sluice_model::{Endpoint, EventType, RequestContext, parse_request};
use sluice_store::{AppendRequest, DeliveryFilter, DeliveryState, NewEvent};

use crate::Dash;
use crate::form::Form;
use crate::layout::{PagePath, PageResult, SignedIn, check_csrf, see_other, urlencode};

/// How long the answer waits for the first attempt: the endpoint timeout
/// (5 s) and a little more.
const WAIT: Duration = Duration::from_millis(6_000);

pub async fn send(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let app = &dash.app;
    let dest = app
        .store
        .get_destination(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))?;
    let source_id = dest.source_ids.first().cloned().ok_or_else(|| {
        ApiError::invalid(
            "source_ids",
            "connect a source first: a test event is stored as one of its calls",
        )
    })?;
    let call = json!({
        "userId": "sluice-test-user",
        "event": "Sluice Test Event",
        "properties": {"test": true, "destination": dest.name},
        "context": {"library": {"name": "sluice-dashboard", "version": env!("CARGO_PKG_VERSION")}},
    });
    let ctx = RequestContext {
        received_at: Utc::now(),
        client_ip: None,
    };
    let envelope = parse_request(
        Endpoint::Single(EventType::Track),
        call.to_string().as_bytes(),
        &ctx,
        &app.limits,
    )
    .map_err(ApiError::from)?;
    let mut message_id = String::new();
    let events = envelope
        .events
        .into_iter()
        .map(|e| {
            message_id = e.message_id.clone();
            NewEvent {
                person: sluice_store::person_slot(e.user_id.as_deref(), e.anonymous_id.as_deref()),
                message_id: e.message_id,
                event_type: e.event_type.as_str().to_owned(),
                body: e.json,
                destination_ids: vec![id.clone()],
                ..NewEvent::default()
            }
        })
        .collect();
    let appended = app
        .store
        .append(AppendRequest {
            source_id,
            received_at: ctx.received_at,
            events,
        })
        .await?;
    (app.on_commit)(!appended.handed);
    // Looked for among the destination's newest deliveries (an index walk),
    // not by messageId, which the store finds only by scanning events.
    let filter = DeliveryFilter {
        destination_id: Some(id.clone()),
        limit: 50,
        ..DeliveryFilter::default()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        let rows = app.store.list_deliveries(&filter).await?;
        if rows.iter().any(|d| {
            d.message_id == message_id && (d.attempts > 0 || d.state != DeliveryState::Pending)
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(see_other(&format!(
        "/destinations/{id}/deliveries?test={}",
        urlencode(&message_id)
    )))
}
