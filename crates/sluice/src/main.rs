//! The `sluice` binary: parses arguments, loads configuration, sets up
//! logging, binds the listener and hands over to [`sluice_server::run`];
//! `backup` copies the embedded store ([`sluice_server::backup`]).
//! The operator commands that talk to a running server (`import`, `tail`,
//! `replay`, `sources`, …) live in `sluice-cli`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

mod memory;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sluice_server::config::LogFormat;
use sluice_server::{Config, JsonStderrAnnounce, StderrAnnounce};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "sluice",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SLUICE_COMMIT"), ")"),
    about = "Self-hosted, Segment-compatible event pipeline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the service (embedded store by default).
    #[command(
        after_help = "Example:\n  SLUICE_ADMIN_TOKEN=… sluice serve --config /etc/sluice/sluice.toml"
    )]
    Serve {
        /// A TOML configuration file; `SLUICE_*` variables override it.
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Print the effective configuration (secrets masked) and exit.
    #[command(after_help = "Example:\n  sluice config --config /etc/sluice/sluice.toml")]
    Config {
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Print the OpenAPI 3.1 document of the collection and admin APIs
    /// (the same as `GET /api/v1/openapi.json` and `docs/openapi.json`).
    #[command(after_help = "Example:\n  sluice openapi > docs/openapi.json")]
    Openapi,
    /// Copy the embedded store to a new file while Sluice runs (a
    /// consistent snapshot; docs/cli.md, "Backups"). Run it on the
    /// server's machine with the server's configuration.
    #[command(
        after_help = "Example:\n  sluice backup --config /etc/sluice/sluice.toml /backups/sluice-$(date +%F).db"
    )]
    Backup {
        #[arg(long, short, env = "SLUICE_CONFIG")]
        config: Option<PathBuf>,
        /// The new file to write; an existing file is never overwritten.
        out: PathBuf,
    },
    #[command(flatten)]
    Remote(sluice_cli::Command),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Remote(command) => std::process::exit(i32::from(sluice_cli::run(command))),
        Command::Serve { config } => serve(config),
        Command::Backup { config, out } => backup(config, &out),
        Command::Openapi => {
            print!("{}", sluice_api::openapi::document_json());
            Ok(())
        }
        Command::Config { config } => {
            let mut cfg = Config::load(config.as_deref())?;
            for secret in [
                &mut cfg.admin_token,
                &mut cfg.storage.postgres_url,
                &mut cfg.metrics.token,
                &mut cfg.alerts.secret,
            ] {
                if secret.is_some() {
                    *secret = Some("(set)".into());
                }
            }
            println!("{}", toml::to_string_pretty(&cfg)?);
            Ok(())
        }
    }
}

fn serve(config_file: Option<PathBuf>) -> anyhow::Result<()> {
    let config = Config::load(config_file.as_deref())?;
    init_tracing(config.log_format);
    memory::tune();
    for name in Config::ignored_env_vars() {
        tracing::warn!(variable = %name, "ignoring an environment variable that is not a Sluice setting");
    }
    // Each client connection takes a descriptor: use all the process may have.
    match sluice_server::rlimit::raise_nofile() {
        Some((before, soft, hard)) => tracing::info!(
            soft_before = before,
            soft,
            hard,
            "open-file limit (RLIMIT_NOFILE)"
        ),
        None => tracing::warn!("could not read the open-file limit"),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(memory::collect_when_idle)
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let shutdown = shutdown_signal();
        let listener = sluice_server::serve::bind(config.listen)
            .with_context(|| format!("binding {}", config.listen))?;
        let announce: &dyn sluice_server::Announce = match config.log_format {
            LogFormat::Json => &JsonStderrAnnounce,
            LogFormat::Text => &StderrAnnounce,
        };
        sluice_server::run(config, listener, shutdown, announce).await?;
        Ok(())
    })
}

fn backup(config_file: Option<PathBuf>, out: &Path) -> anyhow::Result<()> {
    let config = Config::load(config_file.as_deref())?;
    let report = sluice_server::backup::backup(&config, out)?;
    println!(
        "backed up {} to {} ({} bytes, schema version {})",
        config.sqlite_path().display(),
        out.display(),
        report.bytes,
        report.schema_version
    );
    Ok(())
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour codes only for a person at a terminal: a log file, a pipe or
    // journald would keep them as escape bytes. `NO_COLOR` turns them off
    // there too (no-color.org).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// Completes on SIGTERM or ctrl-c.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    // Handlers are installed now, before the listener is ready, so a signal
    // that arrives as soon as `/ready` answers is never the default action.
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    #[cfg(unix)]
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    async move {
        #[cfg(unix)]
        {
            let term = async {
                match term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let int = async {
                match int.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = term => {},
                _ = int => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
