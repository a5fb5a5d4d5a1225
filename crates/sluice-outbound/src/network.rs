//! Which addresses a webhook may reach.
//!
//! Why: destination URLs are chosen by tenants, and the delivery engine runs
//! inside the operator's network. Without a guard, a URL naming loopback, a
//! private range or the cloud metadata address (169.254.169.254) turns the
//! attempt log, which keeps the start of each response, into a window onto
//! internal services. So every address is refused unless it is a public
//! unicast address or the operator allowed its network explicitly.
//!
//! IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
//! IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
//! judged by the IPv4 address inside, so `[::ffff:127.0.0.1]` is loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::cidr::Cidr;

/// Why an address may not be reached: the address and the range it is in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "address {ip} is in a blocked range ({range}); \
     an operator can allow it with delivery.allow_networks"
)]
pub struct Blocked {
    pub ip: IpAddr,
    pub range: &'static str,
}

/// The blocked ranges: `(block, what it is)`. Checked in order, so the more
/// specific names come first.
const BLOCKED_V4: &[(&str, &str)] = &[
    ("255.255.255.255/32", "broadcast"),
    ("0.0.0.0/8", "unspecified, 'this network'"),
    ("10.0.0.0/8", "private, RFC 1918"),
    ("100.64.0.0/10", "shared address space, CGNAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local, cloud metadata"),
    ("172.16.0.0/12", "private, RFC 1918"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation, TEST-NET-1"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private, RFC 1918"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation, TEST-NET-2"),
    ("203.0.113.0/24", "documentation, TEST-NET-3"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
];

const BLOCKED_V6: &[(&str, &str)] = &[
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "discard-only"),
    ("64:ff9b:1::/48", "local-use NAT64, RFC 8215"),
    ("2001::/32", "Teredo"),
    ("2001:2::/48", "benchmarking"),
    ("2001:10::/28", "ORCHID"),
    ("2001:20::/28", "ORCHIDv2"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "SRv6 SIDs, RFC 9602"),
    ("fc00::/7", "unique local, RFC 4193"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
];

/// The operator's allow list over the fixed blocked ranges. The default
/// allows nothing extra: only public unicast addresses are reachable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    allow: Vec<Cidr>,
}

impl NetworkPolicy {
    /// A policy allowing `allow` in addition to public addresses.
    pub fn new(allow: Vec<Cidr>) -> NetworkPolicy {
        NetworkPolicy { allow }
    }

    /// The allowed networks, as configured.
    pub fn allowed(&self) -> &[Cidr] {
        &self.allow
    }

    /// True when the allow list covers both whole address families, which
    /// turns the guard off (worth a warning at start).
    pub fn allows_everything(&self) -> bool {
        let all = |v4: bool| {
            self.allow
                .iter()
                .any(|c| c.is_everything() && c.addr().is_ipv4() == v4)
        };
        all(true) && all(false)
    }

    /// Whether `ip` may be connected to.
    pub fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        let ip = canonical(ip);
        if self.allow.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        match blocked_range(ip) {
            Some(range) => Err(Blocked { ip, range }),
            None => Ok(()),
        }
    }

    /// Whether a URL host may be saved: an IP literal is checked like an
    /// address, and `localhost` (with any `.localhost` subdomain, RFC 6761)
    /// counts as loopback. Other names are judged when they are resolved,
    /// at every connection.
    pub fn check_host(&self, host: &url::Host<&str>) -> Result<(), Blocked> {
        match host {
            url::Host::Ipv4(ip) => self.check(IpAddr::V4(*ip)),
            url::Host::Ipv6(ip) => self.check(IpAddr::V6(*ip)),
            url::Host::Domain(name) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    let v4 = self.check(IpAddr::V4(Ipv4Addr::LOCALHOST));
                    let v6 = self.check(IpAddr::V6(Ipv6Addr::LOCALHOST));
                    return v4.or(v6);
                }
                Ok(())
            }
        }
    }

    /// Parses `url` and checks its host ([`NetworkPolicy::check_host`]).
    /// A URL that does not parse is not this module's business: `Ok`.
    pub fn check_url(&self, url: &str) -> Result<(), Blocked> {
        match url::Url::parse(url) {
            Ok(parsed) => match parsed.host() {
                Some(host) => self.check_host(&host),
                None => Ok(()),
            },
            Err(_) => Ok(()),
        }
    }
}

/// The range `ip` (already canonical) falls in, if it is blocked.
fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    let table = if ip.is_ipv4() { BLOCKED_V4 } else { BLOCKED_V6 };
    table.iter().find_map(|(block, name)| {
        let block: Cidr = block.parse().ok()?;
        block.contains(ip).then_some(*name)
    })
}

/// Unwraps IPv6 forms that embed an IPv4 address, so the IPv4 rules apply.
fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    let bits = u128::from(v6);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let embedded = if bits >> 32 == 0xffff {
        // ::ffff:a.b.c.d, IPv4-mapped.
        Some(low32)
    } else if bits >> 32 == 0xffff_0000 {
        // ::ffff:0:a.b.c.d, IPv4-translated (SIIT, RFC 6052 §2.1).
        Some(low32)
    } else if bits >> 32 == 0 && bits > 1 {
        // ::a.b.c.d, IPv4-compatible (deprecated); :: and ::1 are themselves.
        Some(low32)
    } else if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        // 64:ff9b::/96, the NAT64 well-known prefix.
        Some(low32)
    } else if bits >> 112 == 0x2002 {
        // 2002:aabb:ccdd::/48, 6to4.
        Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32))
    } else {
        None
    };
    embedded.map_or(ip, IpAddr::V4)
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
