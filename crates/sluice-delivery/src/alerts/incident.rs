//! The pure core of alerting: one incident state machine per destination.
//!
//! Inputs are what the engine observes (each attempt's success or failure,
//! a delivery declared dead, the pending backlog) and the passing of time;
//! outputs are [`Event`]s: an incident opens (`destination.failing` or
//! `delivery.dead`) and later resolves (`destination.recovered`). While an
//! incident is open nothing else is emitted for that destination: failed
//! attempts and further dead deliveries are only counted, so one outage
//! gives one alert and one recovery notice, however many attempts fail.
//!
//! An incident opens when, over the sliding window, at least `min_attempts`
//! attempts were made and fewer than `min_success_rate` of them succeeded;
//! or a delivery went dead; or the pending backlog passed `backlog_limit`.
//! It resolves once there is evidence of health: an attempt succeeded since
//! it opened, the window's success rate is back at or above the threshold
//! (or, with fewer than `min_attempts` in the window, the last attempt
//! succeeded), and the backlog is within its limit. A destination that
//! receives no traffic stays failing: silence is no evidence of recovery.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The thresholds, with windows shortened freely in tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// The sliding window the success rate is measured over.
    pub window: Duration,
    /// Below this share of successful attempts (0.0–1.0) a destination fails.
    pub min_success_rate: f64,
    /// Fewest attempts in the window before the rate counts.
    pub min_attempts: u32,
    /// Pending deliveries above which a destination fails; 0: not checked.
    pub backlog_limit: u64,
}

/// One thing seen about a destination.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// An attempt ended: true when the endpoint took it.
    Attempt(bool),
    /// A delivery was declared dead (no more retries), with its reason.
    Dead { message_id: String, error: String },
    /// The destination's pending deliveries, counted now.
    Backlog(u64),
}

/// Why an incident opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    SuccessRate,
    Dead,
    Backlog,
}

impl Reason {
    /// The `data.reason` value of the alert payload.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::SuccessRate => "success_rate",
            Reason::Dead => "delivery_dead",
            Reason::Backlog => "backlog",
        }
    }
}

/// What kind of alert an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// An incident opened on the success rate or the backlog.
    Failing,
    /// An incident opened because a delivery went dead.
    Dead,
    /// The open incident resolved.
    Recovered,
}

impl EventKind {
    /// The payload's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Failing => "destination.failing",
            EventKind::Dead => "delivery.dead",
            EventKind::Recovered => "destination.recovered",
        }
    }
}

/// The figures an alert reports, as of the event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Attempts in the window, and how many succeeded.
    pub attempts: u32,
    pub successes: u32,
    /// Deliveries declared dead since the incident opened.
    pub dead: u64,
    /// The last pending count seen, if the backlog is checked.
    pub pending: Option<u64>,
    /// The dead delivery that opened a `delivery.dead` incident.
    pub message_id: Option<String>,
    pub error: Option<String>,
}

impl Counts {
    /// Successes over attempts in the window; `None` with no attempts.
    pub fn rate(&self) -> Option<f64> {
        (self.attempts > 0).then(|| f64::from(self.successes) / f64::from(self.attempts))
    }
}

/// An incident opening or resolving.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub destination_id: String,
    pub reason: Reason,
    /// When the incident opened (for a recovery: how long it lasted).
    pub opened: Instant,
    pub counts: Counts,
}

/// An open incident, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    pub reason: Reason,
    pub since: Instant,
    pub dead: u64,
    success_since: bool,
}

#[derive(Debug, Default)]
struct Destination {
    /// Attempts in the window: when, and whether they succeeded.
    samples: VecDeque<(Instant, bool)>,
    last_success: bool,
    pending: Option<u64>,
    open: Option<Open>,
}

/// The incident state of every destination seen.
#[derive(Debug)]
pub struct Tracker {
    rules: Rules,
    destinations: HashMap<String, Destination>,
}

impl Tracker {
    pub fn new(rules: Rules) -> Self {
        Tracker {
            rules,
            destinations: HashMap::new(),
        }
    }

    /// Learns `observation` about `destination` at `now`; returns the event
    /// it causes, if any.
    pub fn observe(
        &mut self,
        destination: &str,
        observation: Observation,
        now: Instant,
    ) -> Option<Event> {
        let rules = self.rules;
        let d = self.destinations.entry(destination.to_owned()).or_default();
        prune(d, rules.window, now);
        match observation {
            Observation::Attempt(ok) => {
                d.samples.push_back((now, ok));
                d.last_success = ok;
                if let (true, Some(open)) = (ok, d.open.as_mut()) {
                    open.success_since = true;
                }
            }
            Observation::Dead { message_id, error } => match d.open.as_mut() {
                Some(open) => open.dead += 1,
                None => {
                    d.open = Some(Open {
                        reason: Reason::Dead,
                        since: now,
                        dead: 1,
                        success_since: false,
                    });
                    let mut counts = counts(d);
                    counts.message_id = Some(message_id);
                    counts.error = Some(error);
                    return Some(event(EventKind::Dead, destination, d, counts));
                }
            },
            Observation::Backlog(n) => d.pending = Some(n),
        }
        evaluate(destination, d, rules, now)
    }

    /// Lets time pass: windows slide, so incidents may resolve (or open)
    /// without a new observation. Destinations with nothing left to track
    /// are forgotten.
    pub fn tick(&mut self, now: Instant) -> Vec<Event> {
        let rules = self.rules;
        let mut events = Vec::new();
        for (id, d) in &mut self.destinations {
            prune(d, rules.window, now);
            events.extend(evaluate(id, d, rules, now));
        }
        self.destinations
            .retain(|_, d| d.open.is_some() || !d.samples.is_empty() || d.pending.is_some());
        events
    }

    /// Forgets a destination switched off or deleted, with its open
    /// incident if any: it gets no attempts, so nothing could end it. No
    /// event: the operator acted. Returns whether an incident was open.
    pub fn forget(&mut self, destination: &str) -> bool {
        self.destinations
            .remove(destination)
            .is_some_and(|d| d.open.is_some())
    }

    /// The open incidents, by destination id.
    pub fn open(&self) -> impl Iterator<Item = (&str, &Open)> {
        self.destinations
            .iter()
            .filter_map(|(id, d)| d.open.as_ref().map(|open| (id.as_str(), open)))
    }
}

fn prune(d: &mut Destination, window: Duration, now: Instant) {
    while d
        .samples
        .front()
        .is_some_and(|(at, _)| now.saturating_duration_since(*at) > window)
    {
        d.samples.pop_front();
    }
}

fn counts(d: &Destination) -> Counts {
    let attempts = u32::try_from(d.samples.len()).unwrap_or(u32::MAX);
    let successes = d.samples.iter().filter(|(_, ok)| *ok).count();
    Counts {
        attempts,
        successes: u32::try_from(successes).unwrap_or(u32::MAX),
        dead: d.open.as_ref().map_or(0, |open| open.dead),
        pending: d.pending,
        message_id: None,
        error: None,
    }
}

fn event(kind: EventKind, id: &str, d: &Destination, counts: Counts) -> Event {
    let (reason, opened) = d
        .open
        .as_ref()
        .map_or((Reason::SuccessRate, Instant::now()), |o| {
            (o.reason, o.since)
        });
    Event {
        kind,
        destination_id: id.to_owned(),
        reason,
        opened,
        counts,
    }
}

fn evaluate(id: &str, d: &mut Destination, rules: Rules, now: Instant) -> Option<Event> {
    let c = counts(d);
    let enough = c.attempts >= rules.min_attempts.max(1);
    let rate_low = enough && c.rate().is_some_and(|r| r < rules.min_success_rate);
    let backlog_high =
        rules.backlog_limit > 0 && d.pending.is_some_and(|n| n > rules.backlog_limit);
    match &d.open {
        None => {
            let reason = if rate_low {
                Reason::SuccessRate
            } else if backlog_high {
                Reason::Backlog
            } else {
                return None;
            };
            d.open = Some(Open {
                reason,
                since: now,
                dead: 0,
                success_since: false,
            });
            Some(event(EventKind::Failing, id, d, c))
        }
        Some(open) => {
            let rate_ok = if enough { !rate_low } else { d.last_success };
            if open.success_since && rate_ok && !backlog_high {
                let e = event(EventKind::Recovered, id, d, c);
                d.open = None;
                Some(e)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
#[path = "incident_tests.rs"]
mod tests;
