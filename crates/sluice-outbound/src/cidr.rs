//! CIDR blocks: an address and a prefix length, IPv4 or IPv6.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// A parse failure, naming the text that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a CIDR block ({why})")]
pub struct CidrError {
    pub text: String,
    pub why: &'static str,
}

/// A network block. The address is stored with its host bits cleared, so
/// `10.1.2.3/8` and `10.0.0.0/8` are the same block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// A block from an address and prefix length; `None` when the prefix is
    /// longer than the address (32 for IPv4, 128 for IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        let bits = width(addr);
        if prefix > bits {
            return None;
        }
        let masked = match addr {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(prefix)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(prefix)).into()),
        };
        Some(Cidr {
            addr: masked,
            prefix,
        })
    }

    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` lies in the block. An IPv4 block never contains an IPv6
    /// address and the reverse; callers unwrap IPv4-mapped forms first.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                u32::from(ip) & mask32(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                u128::from(ip) & mask128(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }

    /// Whether this is the whole address family (`0.0.0.0/0` or `::/0`).
    pub fn is_everything(&self) -> bool {
        self.prefix == 0
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// `addr/prefix`, or a bare address meaning a single host (`/32`, `/128`).
    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        let fail = |why| CidrError {
            text: text.to_owned(),
            why,
        };
        let trimmed = text.trim();
        let (addr, prefix) = match trimmed.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (trimmed, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| fail("not an IP address"))?;
        let prefix = match prefix {
            None => width(addr),
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().map_err(|_| fail("prefix length too long"))?
            }
            Some(_) => return Err(fail("prefix length is not a number")),
        };
        Cidr::new(addr, prefix).ok_or_else(|| fail("prefix length exceeds the address size"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn width(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Cidr {
        s.parse().expect("valid CIDR")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("valid IP")
    }

    #[test]
    fn parses_blocks_and_clears_host_bits() {
        assert_eq!(c("10.1.2.3/8").to_string(), "10.0.0.0/8");
        assert_eq!(c("fe80::1/10").to_string(), "fe80::/10");
        assert_eq!(c("127.0.0.1").to_string(), "127.0.0.1/32");
        assert_eq!(c("::1").to_string(), "::1/128");
        assert_eq!(c("0.0.0.0/0").prefix(), 0);
    }

    #[test]
    fn rejects_malformed_blocks() {
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "x/8",
            "10.0.0.0/8/8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn membership_follows_the_prefix() {
        assert!(c("10.0.0.0/8").contains(ip("10.255.0.1")));
        assert!(!c("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(c("100.64.0.0/10").contains(ip("100.127.255.255")));
        assert!(!c("100.64.0.0/10").contains(ip("100.128.0.0")));
        assert!(c("fe80::/10").contains(ip("febf::1")));
        assert!(!c("fe80::/10").contains(ip("fec0::1")));
        assert!(c("0.0.0.0/0").contains(ip("8.8.8.8")));
        assert!(c("::/0").contains(ip("2001:db8::1")));
    }

    #[test]
    fn families_never_mix() {
        assert!(!c("0.0.0.0/0").contains(ip("::1")));
        assert!(!c("::/0").contains(ip("127.0.0.1")));
    }
}
