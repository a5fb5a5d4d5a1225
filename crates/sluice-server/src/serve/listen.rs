//! Binding the listening socket.
//!
//! The standard library and tokio listen with a backlog of 128. A burst of
//! new connections beyond that (clients reconnecting together after a
//! restart, a fleet of servers whose pools open at once) overflows the
//! kernel's accept queue: the extra SYNs are dropped and the clients wait
//! for their retransmission, 1 s, then 2 s, then 4 s. Sluice serves up to
//! `http.max_connections` (4096 by default), so its queue holds that many;
//! the kernel caps it at `net.core.somaxconn` (4096 on current kernels).

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel may queue for `accept` (before `somaxconn`).
pub const ACCEPT_BACKLOG: u32 = 4096;

/// Binds `addr` (with `SO_REUSEADDR`, as `TcpListener::bind` does) and
/// listens with an accept queue of [`ACCEPT_BACKLOG`].
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_of_connections_waits_in_the_accept_queue() {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Nobody accepts: with the default backlog of 128 the kernel
        // drops the SYNs past the queue and these connects stall for a
        // retransmission (1 s and more) instead of completing at once.
        let mut held = Vec::new();
        for _ in 0..600 {
            let connect = tokio::net::TcpStream::connect(addr);
            let stream = tokio::time::timeout(std::time::Duration::from_millis(500), connect)
                .await
                .expect("connected from the accept queue, without a SYN retransmission")
                .expect("connect");
            held.push(stream);
        }
        assert_eq!(held.len(), 600);
    }
}
