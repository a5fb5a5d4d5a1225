use super::*;

const MS: Duration = Duration::from_millis(1);

fn rules() -> Rules {
    Rules {
        window: Duration::from_millis(100),
        min_success_rate: 0.5,
        min_attempts: 4,
        backlog_limit: 10,
    }
}

fn kinds(events: &[Option<Event>]) -> Vec<EventKind> {
    events.iter().flatten().map(|e| e.kind).collect()
}

#[test]
fn one_alert_when_the_rate_falls_and_none_for_further_failures() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    let events: Vec<_> = (0..50)
        .map(|i| t.observe("d", Observation::Attempt(false), start + i * MS))
        .collect();
    assert_eq!(kinds(&events), [EventKind::Failing]);
    assert!(events[3].is_some(), "opens at min_attempts");
    let e = events[3].clone().unwrap();
    assert_eq!(e.reason, Reason::SuccessRate);
    assert_eq!((e.counts.attempts, e.counts.successes), (4, 0));
    assert_eq!(e.counts.rate(), Some(0.0));
}

#[test]
fn fewer_than_min_attempts_never_open_an_incident() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    for i in 0..3 {
        assert_eq!(
            t.observe("d", Observation::Attempt(false), start + i * 40 * MS),
            None
        );
    }
    assert!(t.tick(start + Duration::from_secs(1)).is_empty());
}

#[test]
fn a_rate_at_the_threshold_is_healthy() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    for i in 0..20 {
        let ok = i % 2 == 0;
        assert_eq!(
            t.observe("d", Observation::Attempt(ok), start + i * MS),
            None
        );
    }
}

#[test]
fn recovers_once_when_successes_bring_the_rate_back() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    let mut events = Vec::new();
    for i in 0..10 {
        events.push(t.observe("d", Observation::Attempt(false), start + i * MS));
    }
    for i in 10..40 {
        events.push(t.observe("d", Observation::Attempt(true), start + i * MS));
    }
    assert_eq!(kinds(&events), [EventKind::Failing, EventKind::Recovered]);
    let recovered = events.iter().flatten().last().unwrap();
    assert_eq!(recovered.reason, Reason::SuccessRate);
    assert!(recovered.counts.rate().unwrap() >= 0.5);
}

#[test]
fn old_failures_slide_out_of_the_window_on_tick() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    for i in 0..10 {
        t.observe("d", Observation::Attempt(false), start + i * MS);
    }
    // One success: not enough against ten failures in the window.
    assert_eq!(
        t.observe("d", Observation::Attempt(true), start + 20 * MS),
        None
    );
    assert!(t.tick(start + 50 * MS).is_empty());
    // The failures are older than the window; the success is not.
    let events = t.tick(start + 115 * MS);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::Recovered);
}

#[test]
fn silence_is_no_recovery() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    for i in 0..10 {
        t.observe("d", Observation::Attempt(false), start + i * MS);
    }
    assert!(t.tick(start + Duration::from_secs(60)).is_empty());
    assert_eq!(t.open().count(), 1, "still failing with no traffic");
    let e = t.observe(
        "d",
        Observation::Attempt(true),
        start + Duration::from_secs(61),
    );
    assert_eq!(e.map(|e| e.kind), Some(EventKind::Recovered));
    assert_eq!(t.open().count(), 0);
}

#[test]
fn a_dead_delivery_opens_one_incident_and_later_ones_are_counted() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    let dead = |m: &str| Observation::Dead {
        message_id: m.into(),
        error: "HTTP 400".into(),
    };
    let first = t.observe("d", dead("m1"), now).unwrap();
    assert_eq!(first.kind, EventKind::Dead);
    assert_eq!(first.counts.message_id.as_deref(), Some("m1"));
    assert_eq!(t.observe("d", dead("m2"), now), None);
    assert_eq!(t.observe("d", dead("m3"), now), None);
    let back = t
        .observe("d", Observation::Attempt(true), now + MS)
        .unwrap();
    assert_eq!(back.kind, EventKind::Recovered);
    assert_eq!(back.reason, Reason::Dead);
    assert_eq!(back.counts.dead, 3);
}

#[test]
fn dead_deliveries_during_a_failing_incident_send_nothing_more() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    for _ in 0..4 {
        t.observe("d", Observation::Attempt(false), now);
    }
    let dead = Observation::Dead {
        message_id: "m".into(),
        error: "window ended".into(),
    };
    assert_eq!(t.observe("d", dead, now), None);
}

#[test]
fn a_backlog_over_the_limit_fails_until_it_drains_and_sends_succeed() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    assert_eq!(t.observe("d", Observation::Backlog(10), now), None);
    let e = t.observe("d", Observation::Backlog(11), now).unwrap();
    assert_eq!((e.kind, e.reason), (EventKind::Failing, Reason::Backlog));
    assert_eq!(e.counts.pending, Some(11));
    assert_eq!(t.observe("d", Observation::Attempt(true), now), None);
    let e = t.observe("d", Observation::Backlog(3), now).unwrap();
    assert_eq!(e.kind, EventKind::Recovered);
}

#[test]
fn a_zero_backlog_limit_is_never_checked() {
    let mut t = Tracker::new(Rules {
        backlog_limit: 0,
        ..rules()
    });
    assert_eq!(
        t.observe("d", Observation::Backlog(1 << 40), Instant::now()),
        None
    );
}

#[test]
fn destinations_are_independent() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    for _ in 0..4 {
        t.observe("a", Observation::Attempt(false), now);
        t.observe("b", Observation::Attempt(true), now);
    }
    let open: Vec<_> = t.open().map(|(id, _)| id).collect();
    assert_eq!(open, ["a"]);
}

#[test]
fn flapping_after_recovery_opens_a_new_incident() {
    let mut t = Tracker::new(rules());
    let start = Instant::now();
    let mut events = Vec::new();
    for round in 0..2u32 {
        let base = start + round * 400 * MS;
        for i in 0..5 {
            events.push(t.observe("d", Observation::Attempt(false), base + i * MS));
        }
        events.extend(t.tick(base + 150 * MS).into_iter().map(Some));
        events.push(t.observe("d", Observation::Attempt(true), base + 200 * MS));
    }
    assert_eq!(
        kinds(&events),
        [
            EventKind::Failing,
            EventKind::Recovered,
            EventKind::Failing,
            EventKind::Recovered
        ]
    );
}

#[test]
fn idle_healthy_destinations_are_forgotten() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    t.observe("d", Observation::Attempt(true), now);
    t.tick(now + Duration::from_secs(1));
    assert!(t.destinations.is_empty());
}

#[test]
fn forgetting_a_switched_off_destination_closes_its_incident_silently() {
    let mut t = Tracker::new(rules());
    let now = Instant::now();
    for _ in 0..4 {
        t.observe("d", Observation::Attempt(false), now);
    }
    assert!(t.forget("d"));
    assert_eq!(t.open().count(), 0);
    assert!(!t.forget("d"), "nothing left to forget");
    assert!(t.tick(now + Duration::from_secs(1)).is_empty());
}
