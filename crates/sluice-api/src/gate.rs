//! Source rules and destination filters, applied to each call at ingest.
//!
//! Decided with the routing table in memory (no database round trip), in
//! this order, for each call of a request:
//! 1. the call's [`Shape`], taken during the parse (read from the body only
//!    when the parse did not take it and schema tracking, rules or filters
//!    need it);
//! 2. the source's rules: a blocked track call is stored marked `blocked`
//!    with no deliveries; identify and group calls lose blocked trait keys;
//! 3. `integrations` routing (`Webhooks` on or off), as before;
//! 4. each routed destination's filters: dropped → a `filtered` delivery
//!    with the filter's name; fields dropped → a per-destination body. The
//!    values they test are read through the event's outline (where the parse
//!    wrote each top-level value), unless a rule rewrote the body.

use sluice_model::{Event, destination_enabled};
use sluice_schema::{FilterOutcome, Shape, Verdict};
use sluice_store::health::Tally;
use sluice_store::{AppendRequest, Appended, Blocked, NewEvent};

use crate::routes::{SourceRoute, WEBHOOKS};

/// The event to store for `event`, and its shape when `track_schema` or the
/// route's rules or filters needed one.
pub fn screen(route: &SourceRoute, event: Event, track_schema: bool) -> (NewEvent, Option<Shape>) {
    let routed = destination_enabled(event.integrations.as_ref(), WEBHOOKS);
    let mut stored = NewEvent {
        person: sluice_store::person_slot(event.user_id.as_deref(), event.anonymous_id.as_deref()),
        message_id: event.message_id,
        event_type: event.event_type.as_str().to_owned(),
        ..NewEvent::default()
    };
    let mut body = event.json;
    // Where each top-level value sits in `body`, while `body` is unchanged.
    let mut outline = event.outline;
    let needs_shape =
        track_schema || route.rules.is_some() || (routed && !route.filters.is_empty());
    if !needs_shape {
        if routed {
            stored.destination_ids = route.destinations.clone();
        }
        stored.body = body;
        return (stored, None);
    }
    let shape = match event.shape {
        Some(shape) => shape,
        None => Shape::of(&body, &stored.event_type),
    };
    if let Some(rules) = &route.rules {
        if let Verdict::Block(rule) = rules.verdict(&shape) {
            stored.blocked = Some(Blocked {
                rule: rule.to_owned(),
                event: shape.name.clone().unwrap_or_default(),
            });
            stored.body = body;
            return (stored, Some(shape));
        }
        if let Some(stripped) = rules.strip_traits(&shape, &body) {
            body = stripped;
            outline = None;
        }
    }
    if routed {
        for destination in &route.destinations {
            let filters = route.filters.iter().find(|(d, _)| d == destination);
            let outcome = match filters {
                None => FilterOutcome::Send,
                Some((_, set)) => set.apply(&shape, &body, outline.as_ref()),
            };
            match outcome {
                FilterOutcome::Send => stored.destination_ids.push(destination.clone()),
                FilterOutcome::SendBody(filtered) => {
                    stored.destination_ids.push(destination.clone());
                    stored.bodies.push((destination.clone(), filtered));
                }
                FilterOutcome::Drop(filter) => stored.filtered.push((destination.clone(), filter)),
            }
        }
    }
    stored.body = body;
    (stored, Some(shape))
}

/// How many of `request`'s calls each destination's filters dropped, for
/// delivery health; empty (no allocation) when none were.
pub fn filtered(request: &AppendRequest) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (destination, _) in request.events.iter().flat_map(|e| &e.filtered) {
        match out.iter_mut().find(|(d, _)| d == destination) {
            Some((_, n)) => *n += 1,
            None => out.push((destination.clone(), 1)),
        }
    }
    out
}

/// Counts `filtered` (see [`filtered`]) once their request committed. The
/// store does not say which calls of a request were duplicates: a request
/// with any is not counted, so a client re-sending a batch never counts
/// its filtered calls twice (and one mixing new calls with re-sent ones,
/// which is rare, counts none).
pub fn count_filtered(tally: &Tally, at_ms: i64, appended: Appended, filtered: &[(String, u64)]) {
    if appended.duplicates > 0 {
        return;
    }
    for (destination, n) in filtered {
        tally.add(destination, at_ms, |h| h.counts.filtered += n);
    }
}
