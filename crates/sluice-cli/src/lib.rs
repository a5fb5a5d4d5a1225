//! Operator commands of the `sluice` binary that talk to a running Sluice
//! over its HTTP APIs (docs/cli.md). The binary flattens [`Command`] into
//! its own subcommands and calls [`run`].
//!
//! Modules:
//! - [`client`]: the HTTP client, `--url`/`SLUICE_URL`, `--token`/`SLUICE_ADMIN_TOKEN`.
//! - [`import`]: bulk import of JSON Lines with checkpoints and rejects.
//! - [`tail`]: following a source's events.
//! - [`admin`]: sources, destinations, deliveries, replay, users, tokens.
//! - [`output`]: JSON and table output.
//! - [`error`]: [`CliError`] and the exit codes.

pub mod admin;
pub mod client;
pub mod error;
pub mod import;
pub mod output;
pub mod tail;

use clap::Subcommand;

pub use error::{CliError, exit};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bulk-import historical calls from JSON Lines files (resumable).
    Import(import::ImportArgs),
    /// Replay a destination's dead deliveries; prints how many.
    Replay(admin::deliveries::ReplayArgs),
    /// Follow a source's events as they are stored.
    Tail(tail::TailArgs),
    /// List, show and create sources.
    Sources(admin::resources::SourcesArgs),
    /// List, show and create Webhooks destinations.
    Destinations(admin::resources::DestinationsArgs),
    /// List deliveries (the attempt log), newest first.
    Deliveries(admin::deliveries::DeliveriesArgs),
    /// List, create and delete dashboard users; the first admin too.
    Users(admin::team::UsersArgs),
    /// List, create and delete API tokens.
    Tokens(admin::team::TokensArgs),
}

/// Runs one command to completion; returns the process exit code. Errors
/// are printed on standard error, with the server's message when it sent
/// one.
pub fn run(command: Command) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return exit::FAILED;
        }
    };
    let result = runtime.block_on(async move {
        match command {
            Command::Import(args) => import::import(args).await,
            Command::Replay(args) => admin::deliveries::replay(args).await.map(|()| exit::OK),
            Command::Tail(args) => tail::tail(args).await.map(|()| exit::OK),
            Command::Sources(args) => admin::resources::sources(args).await.map(|()| exit::OK),
            Command::Destinations(args) => admin::resources::destinations(args)
                .await
                .map(|()| exit::OK),
            Command::Deliveries(args) => {
                admin::deliveries::deliveries(args).await.map(|()| exit::OK)
            }
            Command::Users(args) => admin::team::users(args).await.map(|()| exit::OK),
            Command::Tokens(args) => admin::team::tokens(args).await.map(|()| exit::OK),
        }
    });
    // The import's reader thread may be blocked on stdin; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(CliError::StdoutClosed) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
