//! [`Relay`]: a TCP relay in front of a server (a test's PostgreSQL) that
//! can cut every connection and refuse new ones, as a database outage does
//! to its clients, then let them through again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// A relay on `127.0.0.1` to one upstream address.
pub struct Relay {
    addr: SocketAddr,
    /// True while cut: connections are closed and new ones refused.
    cut: watch::Sender<bool>,
    _accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Starts relaying to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let addr = listener.local_addr().expect("relay address");
        let (cut, cut_rx) = watch::channel(false);
        let upstream = upstream.to_owned();
        let live = Arc::new(Mutex::new(JoinSet::new()));
        let accept = tokio::spawn(async move {
            let mut watcher = cut_rx.clone();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((client, _)) = accepted else { return };
                        if *cut_rx.borrow() {
                            drop(client);
                            continue;
                        }
                        let Ok(server) = TcpStream::connect(&upstream).await else {
                            continue;
                        };
                        live.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .spawn(pipe(client, server));
                    }
                    changed = watcher.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if *watcher.borrow() {
                            live.lock().unwrap_or_else(PoisonError::into_inner).abort_all();
                        }
                    }
                }
            }
        });
        Relay {
            addr,
            cut,
            _accept: accept,
        }
    }

    /// The relay's `host:port`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every connection through the relay and refuses new ones.
    pub fn cut(&self) {
        let _ = self.cut.send(true);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        let _ = self.cut.send(false);
    }
}

/// The `host:port` of a PostgreSQL URL (`postgres://user@host:port/db`).
///
/// # Panics
/// When the URL has no `@host:port/` part.
pub fn postgres_server(url: &str) -> &str {
    url.split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("host:port in the PostgreSQL URL")
}

/// The PostgreSQL URL `url` pointed at `relay` instead of its server, in
/// plain text (`sslmode=disable`), so a relay can read or cut it.
pub fn postgres_url_through(url: &str, relay: SocketAddr) -> String {
    let through = url.replacen(postgres_server(url), &relay.to_string(), 1);
    let sep = if through.contains('?') { '&' } else { '?' };
    format!("{through}{sep}sslmode=disable")
}

async fn pipe(mut client: TcpStream, mut server: TcpStream) {
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}
