use super::*;

fn ips(list: &[&str]) -> Outcome {
    Ok(list
        .iter()
        .map(|a| a.parse().expect("ip"))
        .collect::<Vec<IpAddr>>()
        .into())
}

fn nxdomain(host: &str) -> Outcome {
    Err(LookupError::NoSuchHost(host.to_owned()))
}

#[test]
fn a_failure_is_answered_from_memory_for_a_few_seconds_then_asked_again() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    cache.insert("x.invalid", nxdomain("x.invalid"), None, t0);
    assert_eq!(
        cache.get("x.invalid", t0 + FAILURE_TTL - Duration::from_millis(1)),
        Some(nxdomain("x.invalid"))
    );
    assert_eq!(cache.get("x.invalid", t0 + FAILURE_TTL), None);
    assert!(FAILURE_TTL >= Duration::from_secs(1) && FAILURE_TTL <= Duration::from_secs(10));
}

#[test]
fn a_failure_is_remembered_per_host() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    cache.insert("a.invalid", nxdomain("a.invalid"), None, t0);
    assert_eq!(cache.get("b.invalid", t0), None);
    cache.insert(
        "b.example",
        ips(&["93.184.216.34"]),
        Some(Duration::from_secs(30)),
        t0,
    );
    assert_eq!(cache.get("b.example", t0), Some(ips(&["93.184.216.34"])));
    assert_eq!(cache.get("a.invalid", t0), Some(nxdomain("a.invalid")));
}

#[test]
fn a_success_is_reused_for_its_ttl() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    let ttl = Duration::from_secs(20);
    cache.insert("hooks.example", ips(&["93.184.216.34"]), Some(ttl), t0);
    assert!(
        cache
            .get("hooks.example", t0 + ttl - Duration::from_millis(1))
            .is_some()
    );
    assert_eq!(cache.get("hooks.example", t0 + ttl), None);
}

#[test]
fn a_long_ttl_is_cut_to_the_cap() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    let day = Duration::from_secs(86_400);
    cache.insert("hooks.example", ips(&["93.184.216.34"]), Some(day), t0);
    assert!(
        cache
            .get(
                "hooks.example",
                t0 + SUCCESS_TTL_CAP - Duration::from_millis(1)
            )
            .is_some()
    );
    assert_eq!(cache.get("hooks.example", t0 + SUCCESS_TTL_CAP), None);
}

#[test]
fn a_success_without_ttl_or_with_ttl_zero_is_not_kept() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    cache.insert("a.example", ips(&["93.184.216.34"]), None, t0);
    cache.insert(
        "b.example",
        ips(&["93.184.216.34"]),
        Some(Duration::ZERO),
        t0,
    );
    assert_eq!(cache.get("a.example", t0), None);
    assert_eq!(cache.get("b.example", t0), None);
    assert!(cache.is_empty());
}

#[test]
fn a_new_outcome_replaces_the_old_one() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    cache.insert("flaky.example", nxdomain("flaky.example"), None, t0);
    let later = t0 + FAILURE_TTL;
    cache.insert(
        "flaky.example",
        ips(&["93.184.216.34"]),
        Some(Duration::from_secs(30)),
        later,
    );
    assert_eq!(
        cache.get("flaky.example", later),
        Some(ips(&["93.184.216.34"]))
    );
}

#[test]
fn host_names_differing_in_case_or_final_dot_are_one_host() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    cache.insert("Hooks.Example.", nxdomain("hooks.example"), None, t0);
    assert!(cache.get("hooks.example", t0).is_some());
}

#[test]
fn a_full_cache_drops_expired_hosts_first_and_never_grows_past_its_bound() {
    let t0 = Instant::now();
    let mut cache = DnsCache::default();
    for i in 0..MAX_HOSTS {
        cache.insert(&format!("h{i}.invalid"), nxdomain("h"), None, t0);
    }
    assert_eq!(cache.len(), MAX_HOSTS);
    // All expired by now: room is made from them.
    let later = t0 + FAILURE_TTL;
    cache.insert("fresh.invalid", nxdomain("fresh.invalid"), None, later);
    assert_eq!(cache.len(), 1);
    // None expired: the cache starts over rather than grow.
    for i in 0..MAX_HOSTS + 10 {
        cache.insert(&format!("n{i}.invalid"), nxdomain("n"), None, later);
        assert!(cache.len() <= MAX_HOSTS);
    }
}
