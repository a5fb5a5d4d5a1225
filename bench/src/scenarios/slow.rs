//! Scenario 5, slow clients: 1,000 connections without credentials each
//! announce a 500,000-byte batch, send half of it, and stop. Meanwhile
//! authenticated batches must still be accepted. Resident memory (`VmRSS`)
//! is read idle, with the crowd holding on, and after the crowd has left,
//! so the report shows both the bound the body budget keeps and how much of
//! the burst the allocator gives back.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::resources::rss_bytes;
use crate::scenarios::{Harness, Plan, mb};

const CLIENTS: usize = 1000;
const DECLARED: usize = 500_000;
const SENT: usize = 250_000;

async fn half_sent(addr: std::net::SocketAddr) -> Option<TcpStream> {
    let mut sock = TcpStream::connect(addr).await.ok()?;
    let head = format!(
        "POST /v1/batch HTTP/1.1\r\nHost: bench\r\ncontent-type: application/json\r\ncontent-length: {DECLARED}\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await.ok()?;
    // Refused clients see the connection closed part-way; that is expected.
    let _ = sock.write_all(&vec![b' '; SENT]).await;
    Some(sock)
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    // Warm up the normal path first, so "idle" includes a working server.
    let warm = Arc::new(Workload::new(Call::Batch(100), "sw", 2_000));
    drive(&h.target(4, Pace::Closed, plan.load_limit), warm).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pid = h.sluice.pid();
    let idle = rss_bytes(pid)?;

    let clients = if plan.quick { 200 } else { CLIENTS };
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(half_sent(h.sluice.addr)))
        .collect();
    let mut crowd = Vec::with_capacity(clients);
    for t in tasks {
        crowd.extend(t.await?);
    }
    let during_load = Arc::new(Workload::new(Call::Batch(100), "sc", 5_000));
    let out = drive(
        &h.target(4, Pace::Closed, plan.load_limit),
        during_load.clone(),
    )
    .await?;
    let held = rss_bytes(pid)?;
    drop(crowd);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss_bytes(pid)?;

    report.figure("slow clients", "RSS idle", mb(idle), "MB", None);
    report.figure(
        "slow clients",
        format!("RSS while {clients} anonymous clients hold half-sent 500 KB bodies"),
        mb(held),
        "MB",
        Some(Budget::AtMost(mb(idle) + 100.0)),
    );
    report.figure(
        "slow clients",
        "RSS 5 s after they left",
        mb(after),
        "MB",
        None,
    );
    report.figure(
        "slow clients",
        "RSS after / idle",
        after as f64 / idle.max(1) as f64,
        "x",
        None,
    );
    let acked = out.acked_ids(&during_load).len();
    report.check(
        "slow clients: authenticated batches accepted meanwhile",
        out.failures == 0 && acked == 5_000,
        format!(
            "{acked} of 5000 events acknowledged, {} failures",
            out.failures
        ),
    );
    h.finish()
}
