use std::net::IpAddr;

use super::*;

#[tokio::test]
async fn localhost_resolves_to_loopback_without_a_name_server() {
    let dns = SystemLookup::new().expect("resolver");
    let found = dns.lookup("localhost").await.expect("localhost");
    assert!(found.addrs.iter().all(IpAddr::is_loopback), "{found:?}");
    assert!(found.addrs.contains(&"127.0.0.1".parse().expect("ip")));
}

#[tokio::test]
async fn names_in_etc_hosts_resolve_to_their_addresses() {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    // Every `address name…` line with an IPv4 address, as written there.
    let entries: Vec<(IpAddr, String)> = hosts
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ip: IpAddr = words.next()?.parse().ok()?;
            Some((ip, words.next()?.to_owned()))
        })
        .filter(|(ip, _)| ip.is_ipv4())
        .collect();
    assert!(!entries.is_empty(), "/etc/hosts has no IPv4 entry");
    let dns = SystemLookup::new().expect("resolver");
    for (ip, name) in entries {
        let found = dns.lookup(&name).await.expect("an /etc/hosts name");
        assert!(found.addrs.contains(&ip), "{name}: {found:?}");
    }
}

#[tokio::test]
async fn an_invalid_name_is_nxdomain() {
    let dns = SystemLookup::new().expect("resolver");
    assert_eq!(
        dns.lookup("hook.sluice-test.invalid").await,
        Err(LookupError::NoSuchHost("hook.sluice-test.invalid".into()))
    );
}
