//! The open-file limit, which bounds how many connections can be open.
//!
//! At start-up the binary raises the soft limit to the hard limit (the soft
//! limit is often 1,024 while the hard one is far higher), and the
//! connection cap is then kept below whatever the soft limit is, leaving
//! room for the database, delivery connections and the listener.

#![allow(
    unsafe_code,
    reason = "getrlimit(2)/setrlimit(2) through libc; the standard library has no wrapper"
)]

/// The soft and hard `RLIMIT_NOFILE`, if they can be read.
#[cfg(unix)]
pub fn nofile() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own and reads nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    // rlim_t is u64 on Linux but not on every Unix.
    #[allow(clippy::unnecessary_cast)]
    (rc == 0).then_some((lim.rlim_cur as u64, lim.rlim_max as u64))
}

#[cfg(not(unix))]
pub fn nofile() -> Option<(u64, u64)> {
    None
}

/// Raises the soft open-file limit to the hard limit. Returns the soft limit
/// before and after, and the hard limit.
#[cfg(unix)]
pub fn raise_nofile() -> Option<(u64, u64, u64)> {
    let (soft, hard) = nofile()?;
    if soft < hard {
        let lim = libc::rlimit {
            rlim_cur: hard as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: setrlimit only reads the struct we pass.
        let _ = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
    let (after, hard) = nofile()?;
    Some((soft, after, hard))
}

#[cfg(not(unix))]
pub fn raise_nofile() -> Option<(u64, u64, u64)> {
    None
}

/// Descriptors kept free of client connections: a quarter of the limit, at
/// least 64, for the store, delivery, the listener and the logs.
pub fn reserve(soft: u64) -> u64 {
    (soft / 4).max(64)
}

/// The connection cap actually used: the configured one, lowered to stay
/// below the soft open-file limit minus the reserve.
pub fn effective_max_connections(configured: usize, soft: Option<u64>) -> usize {
    match soft {
        Some(soft) => {
            let room = soft.saturating_sub(reserve(soft)).max(1);
            configured.min(usize::try_from(room).unwrap_or(usize::MAX))
        }
        None => configured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_stays_below_the_descriptor_limit() {
        assert_eq!(effective_max_connections(4096, Some(1024)), 768);
        assert_eq!(effective_max_connections(4096, Some(1_048_576)), 4096);
        assert_eq!(effective_max_connections(10, Some(32)), 1);
        assert_eq!(effective_max_connections(100, None), 100);
    }
}
