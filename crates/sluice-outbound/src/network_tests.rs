use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("valid IP")
}

fn strict() -> NetworkPolicy {
    NetworkPolicy::default()
}

fn allowing(blocks: &[&str]) -> NetworkPolicy {
    NetworkPolicy::new(blocks.iter().map(|b| b.parse().expect("cidr")).collect())
}

#[test]
fn every_blocked_range_is_refused_by_default() {
    for (addr, range) in [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private, RFC 1918"),
        ("172.16.0.1", "private, RFC 1918"),
        ("172.31.255.255", "private, RFC 1918"),
        ("192.168.1.1", "private, RFC 1918"),
        ("169.254.169.254", "link-local, cloud metadata"),
        ("100.64.0.1", "shared address space, CGNAT"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("0.0.0.0", "unspecified, 'this network'"),
        ("255.255.255.255", "broadcast"),
        ("192.0.2.10", "documentation, TEST-NET-1"),
        ("198.51.100.7", "documentation, TEST-NET-2"),
        ("203.0.113.9", "documentation, TEST-NET-3"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fd00::1", "unique local, RFC 4193"),
        ("fc00::1", "unique local, RFC 4193"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("64:ff9b:1::a9fe:a9fe", "local-use NAT64, RFC 8215"),
        ("2001::1", "Teredo"),
        ("2001:2::1", "benchmarking"),
        ("2001:20::1", "ORCHIDv2"),
        ("5f00::1", "SRv6 SIDs, RFC 9602"),
    ] {
        let err = strict().check(ip(addr)).expect_err(addr);
        assert_eq!(err.range, range, "{addr}");
    }
}

#[test]
fn public_addresses_pass() {
    for addr in [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "172.32.0.1",
        "100.128.0.1",
        "2606:4700:4700::1111",
    ] {
        assert_eq!(strict().check(ip(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn ipv6_forms_of_blocked_ipv4_addresses_are_refused() {
    for addr in [
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:0001::1",
        "::ffff:0:169.254.169.254",
        "::ffff:0:127.0.0.1",
    ] {
        assert!(strict().check(ip(addr)).is_err(), "{addr}");
    }
    assert_eq!(strict().check(ip("::ffff:8.8.8.8")), Ok(()));
    assert_eq!(strict().check(ip("::ffff:0:8.8.8.8")), Ok(()));
    // Public IPv6 next to the newly refused ranges still passes.
    for addr in [
        "2001:4860:4860::8888",
        "2001:1::1",
        "2001:200::1",
        "5eff::1",
    ] {
        assert_eq!(strict().check(ip(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn the_allow_list_opens_only_its_networks() {
    let p = allowing(&["127.0.0.0/8", "::1/128"]);
    assert_eq!(p.check(ip("127.0.0.1")), Ok(()));
    assert_eq!(
        p.check(ip("::ffff:127.0.0.1")),
        Ok(()),
        "mapped form follows"
    );
    assert_eq!(p.check(ip("::1")), Ok(()));
    assert!(p.check(ip("10.0.0.1")).is_err());
    assert!(p.check(ip("169.254.169.254")).is_err());
    assert!(!p.allows_everything());
}

#[test]
fn both_whole_families_turn_the_guard_off() {
    let p = allowing(&["0.0.0.0/0", "::/0"]);
    assert!(p.allows_everything());
    assert_eq!(p.check(ip("169.254.169.254")), Ok(()));
    assert_eq!(p.check(ip("fe80::1")), Ok(()));
    assert!(!allowing(&["0.0.0.0/0"]).allows_everything());
}

#[test]
fn url_hosts_are_judged_after_normalisation() {
    for url in [
        "http://127.0.0.1:8080/",
        "http://[::1]/",
        "http://localhost/",
        "http://LOCALHOST./x",
        "http://api.localhost/",
        "http://0.0.0.0/",
        "http://2130706433/",
        "http://127.1/",
        "http://0x7f.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "https://[fe80::1]/",
    ] {
        assert!(strict().check_url(url).is_err(), "{url} passed");
    }
    assert_eq!(strict().check_url("https://hooks.example.com/x"), Ok(()));
    assert_eq!(strict().check_url("https://8.8.8.8/x"), Ok(()));
}

#[test]
fn localhost_is_allowed_with_loopback() {
    assert_eq!(
        allowing(&["127.0.0.0/8"]).check_url("http://localhost/"),
        Ok(())
    );
    assert_eq!(
        allowing(&["::1/128"]).check_url("http://localhost/"),
        Ok(())
    );
}
