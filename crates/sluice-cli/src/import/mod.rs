//! `sluice import`: bulk historical import of JSON Lines through `/v1/batch`.
//!
//! - [`batch`]: pure core: line checks, stable messageIds, packing, blame.
//! - [`input`]: the reader thread (files, stdin, gzip) producing batches.
//! - [`send`]: one batch until each line is acknowledged or rejected.
//! - [`checkpoint`]: which lines are finished, for resuming.
//! - [`progress`]: the progress bar or plain progress lines.
//! - `run`: the loop tying them together, with SIGINT handling.
//!
//! Lines are sent as they are (no `sentAt` is added), so each keeps its own
//! `timestamp`: the server keeps a client time exactly when there is no
//! `sentAt` to correct it with.

pub mod batch;
pub mod checkpoint;
pub mod input;
pub mod progress;
mod run;
pub mod send;

use std::path::PathBuf;

use clap::Args;

use self::batch::{Item, LineRef};
use crate::client::Connection;

pub use run::import;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sluice import --write-key \"$KEY\" events-2024-*.jsonl.gz\n  \
    zcat old.jsonl.gz | sluice import --write-key \"$KEY\" --checkpoint old.checkpoint -\n\n\
    Exit status: 0 all imported, 1 error, 3 this run rejected lines (see --rejects),\n\
    130 interrupted (rerun the same command to resume).")]
pub struct ImportArgs {
    /// JSON Lines files, one call per line, plain or gzip; `-` reads stdin.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// The write key of the source to import into.
    #[arg(long, env = "SLUICE_WRITE_KEY", hide_env_values = true)]
    pub write_key: Option<String>,
    /// Where finished lines are recorded, so a rerun resumes. Default:
    /// sluice-import.checkpoint in the current directory, or none when
    /// reading stdin.
    #[arg(long, value_name = "PATH")]
    pub checkpoint: Option<PathBuf>,
    /// Ignore (and replace) an existing checkpoint: import everything again.
    #[arg(long)]
    pub fresh: bool,
    /// Where rejected lines are appended, with the server's message.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "sluice-import.rejects.jsonl"
    )]
    pub rejects: PathBuf,
    /// Batches in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Largest batch body in bytes (the server's default limit is 512000).
    #[arg(long, default_value_t = 500_000, value_parser = clap::value_parser!(u64).range(1024..))]
    pub batch_bytes: u64,
    /// Most lines in one batch (the server's default limit is 2500).
    #[arg(long, default_value_t = 2500, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_lines: u64,
    /// Retries of a batch answered 5xx or not answered, before giving up.
    #[arg(long, default_value_t = 8)]
    pub retries: u32,
    /// No progress output, only the final summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Milliseconds between plain progress lines when standard error is not
    /// a terminal. Hidden: tests shorten it.
    #[arg(long, hide = true, default_value_t = 5000)]
    pub progress_every_ms: u64,
    #[command(flatten)]
    pub conn: Connection,
}

/// What every sending task needs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub write_key: String,
    pub retries: u32,
}

/// A packed batch and the bookkeeping that travels with it.
#[derive(Debug, Default)]
pub struct Batch {
    pub items: Vec<Item>,
    /// Lines refused before sending (not UTF-8, not a JSON object).
    pub local_rejects: Vec<Rejected>,
    /// Lines passed over: finished in an earlier run, or blank.
    pub skipped: u64,
    /// Blank lines, finished without sending.
    pub blank: Vec<LineRef>,
    /// How far into the input (raw bytes over all inputs) this batch reaches.
    pub end_position: u64,
}

/// A line that will not be imported, and why.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub at: LineRef,
    pub code: String,
    pub message: String,
    pub text: String,
}

impl Rejected {
    pub fn from_server(item: Item, code: String, message: String) -> Rejected {
        Rejected {
            at: item.at,
            code,
            message,
            text: item.text,
        }
    }
}
