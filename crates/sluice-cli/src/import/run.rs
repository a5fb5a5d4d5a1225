//! The import loop: the reader thread feeds batches, up to `concurrency`
//! are sent at once, and each finished batch is recorded (rejects first,
//! then the checkpoint) before its lines count as done.
//!
//! On SIGINT no new batch starts; the batches in flight finish and are
//! recorded, and the command exits with 130. A second SIGINT exits at once
//! without recording the batches still in flight.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::batch::Limits;
use super::checkpoint::Checkpoint;
use super::input::{FromReader, Source, read_all};
use super::progress::Progress;
use super::send::{Sent, send};
use super::{Batch, ImportArgs, Rejected, Settings};
use crate::client::Api;
use crate::error::{CliError, exit};

const DEFAULT_CHECKPOINT: &str = "sluice-import.checkpoint";

/// Runs the import; returns the exit code.
pub async fn import(args: ImportArgs) -> Result<u8, CliError> {
    let api = Api::new(&args.conn)?;
    let settings = Settings {
        write_key: args
            .write_key
            .clone()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                CliError::Usage(
                    "import needs the source's write key: --write-key or SLUICE_WRITE_KEY".into(),
                )
            })?,
        retries: args.retries,
    };
    let (sources, names, total) = resolve_inputs(&args)?;
    let reads_stdin = sources.iter().any(|s| s.path.is_none());
    let cp_path = match (&args.checkpoint, reads_stdin) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(PathBuf::from(DEFAULT_CHECKPOINT)),
        (None, true) => {
            eprintln!(
                "import: reading stdin without --checkpoint: an interrupted import cannot be resumed"
            );
            None
        }
    };
    let mut cp = Checkpoint::open(cp_path.as_deref(), args.fresh)?;
    let mut slots = Vec::with_capacity(sources.len());
    let mut sources = sources;
    for (source, (name, size)) in sources.iter_mut().zip(&names) {
        let slot = cp.input(name, *size)?;
        source.done = cp.inputs[slot].done.clone();
        slots.push(slot);
    }
    cp.save()?;

    let limits = Limits {
        max_body_bytes: usize::try_from(args.batch_bytes).unwrap_or(usize::MAX),
        max_items: usize::try_from(args.batch_lines).unwrap_or(usize::MAX),
    };
    let concurrency = usize::from(args.concurrency);
    let (tx, mut rx) = mpsc::channel(concurrency);
    std::thread::spawn(move || read_all(sources, limits, tx));

    let mut state = Recorder {
        cp,
        slots,
        names: names.into_iter().map(|(n, _)| n).collect(),
        rejects_path: args.rejects.clone(),
        rejects: None,
        progress: Progress::new(
            total,
            args.quiet,
            std::time::Duration::from_millis(args.progress_every_ms),
        ),
        rejected_now: 0,
    };
    let mut inflight: JoinSet<(Batch, Sent)> = JoinSet::new();
    let mut reading = true;
    let mut interrupted = false;
    let mut failure: Option<CliError> = None;
    let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
    while reading || !inflight.is_empty() {
        tokio::select! {
            _ = &mut ctrl_c => {
                if interrupted {
                    eprintln!("import: interrupted again; batches in flight were not recorded");
                    std::process::exit(i32::from(exit::INTERRUPTED));
                }
                interrupted = true;
                reading = false;
                rx.close();
                eprintln!("import: interrupted; waiting for {} batch(es) in flight", inflight.len());
                ctrl_c = Box::pin(tokio::signal::ctrl_c());
            }
            msg = rx.recv(), if reading && inflight.len() < concurrency => match msg {
                None => reading = false,
                Some(FromReader::Failed(e)) => {
                    failure = Some(CliError::Input(e));
                    reading = false;
                    rx.close();
                }
                Some(FromReader::Batch(mut batch)) if !batch.items.is_empty() => {
                    let (api, settings) = (api.clone(), settings.clone());
                    inflight.spawn(async move {
                        let items = std::mem::take(&mut batch.items);
                        let sent = send(&api, &settings, items).await;
                        (batch, sent)
                    });
                }
                Some(FromReader::Batch(batch)) => state.record(batch, Sent::default())?,
            },
            Some(joined) = inflight.join_next(), if !inflight.is_empty() => {
                let (batch, mut sent) = joined.map_err(|e| CliError::Transport(e.to_string()))?;
                if let Some(e) = sent.failed.take() {
                    failure.get_or_insert(e);
                    reading = false;
                    rx.close();
                }
                state.record(batch, sent)?;
            }
        }
    }
    state.finish(interrupted, failure)
}

/// The inputs, their checkpoint names and sizes, and the total size when
/// every input is a file.
type Inputs = (Vec<Source>, Vec<(String, Option<u64>)>, Option<u64>);

fn resolve_inputs(args: &ImportArgs) -> Result<Inputs, CliError> {
    let mut sources = Vec::new();
    let mut names = Vec::new();
    let mut total = Some(0u64);
    for file in &args.files {
        if file == "-" {
            if sources.iter().any(|s: &Source| s.path.is_none()) {
                return Err(CliError::Usage("'-' (stdin) can be given only once".into()));
            }
            sources.push(Source {
                display: "stdin".into(),
                path: None,
                done: Default::default(),
            });
            names.push(("-".to_owned(), None));
            total = None;
            continue;
        }
        let path = Path::new(file);
        let canonical = path.canonicalize().map_err(|e| CliError::io(file, e))?;
        let size = std::fs::metadata(&canonical)
            .map_err(|e| CliError::io(file, e))?
            .len();
        total = total.map(|t| t + size);
        names.push((canonical.display().to_string(), Some(size)));
        sources.push(Source {
            display: file.clone(),
            path: Some(canonical),
            done: Default::default(),
        });
    }
    Ok((sources, names, total))
}

struct Recorder {
    cp: Checkpoint,
    /// Input index → its entry in the checkpoint.
    slots: Vec<usize>,
    names: Vec<String>,
    rejects_path: PathBuf,
    rejects: Option<BufWriter<File>>,
    progress: Progress,
    rejected_now: u64,
}

impl Recorder {
    /// Rejects reach the reject file before the checkpoint says their
    /// lines are finished, so no rejected line is ever lost from both.
    fn record(&mut self, batch: Batch, sent: Sent) -> Result<(), CliError> {
        let rejected: Vec<&Rejected> = batch.local_rejects.iter().chain(&sent.rejected).collect();
        if !rejected.is_empty() {
            self.write_rejects(&rejected)?;
        }
        for at in sent.acked.iter().map(|i| &i.at).chain(&batch.blank) {
            self.cp.inputs[self.slots[at.input]].done.insert(at.line);
        }
        for r in &rejected {
            let input = &mut self.cp.inputs[self.slots[r.at.input]];
            input.done.insert(r.at.line);
            input.rejected += 1;
        }
        self.cp.save()?;
        self.rejected_now += rejected.len() as u64;
        self.progress.advance(
            sent.acked.len() as u64,
            rejected.len() as u64,
            batch.skipped,
            batch.end_position,
        );
        Ok(())
    }

    fn write_rejects(&mut self, rejected: &[&Rejected]) -> Result<(), CliError> {
        let path = self.rejects_path.display().to_string();
        if self.rejects.is_none() {
            let file = File::options()
                .create(true)
                .append(true)
                .open(&self.rejects_path)
                .map_err(|e| CliError::io(&path, e))?;
            self.rejects = Some(BufWriter::new(file));
        }
        let Some(out) = self.rejects.as_mut() else {
            return Ok(());
        };
        for r in rejected {
            let record = json!({
                "file": self.names[r.at.input], "line": r.at.line,
                "code": r.code, "message": r.message, "text": r.text,
            });
            writeln!(out, "{record}").map_err(|e| CliError::io(&path, e))?;
        }
        out.flush().map_err(|e| CliError::io(&path, e))?;
        out.get_ref()
            .sync_data()
            .map_err(|e| CliError::io(&path, e))
    }

    fn finish(self, interrupted: bool, failure: Option<CliError>) -> Result<u8, CliError> {
        self.progress.finish();
        let c = self.progress.counts;
        let mut summary = format!(
            "import: {} lines imported, {} rejected, {} skipped (already imported or blank)",
            c.imported, c.rejected, c.skipped
        );
        let all_runs: u64 = self.slots.iter().map(|&i| self.cp.inputs[i].rejected).sum();
        if all_runs > c.rejected {
            summary.push_str(&format!(" ({all_runs} rejected over all runs)"));
        }
        if all_runs > 0 {
            summary.push_str(&format!("; rejects in {}", self.rejects_path.display()));
        }
        if let Some(p) = self.cp.path() {
            summary.push_str(&format!("; checkpoint {}", p.display()));
        }
        eprintln!("{summary}");
        if let Some(e) = failure {
            return Err(e);
        }
        if interrupted {
            eprintln!(
                "import: interrupted; what was acknowledged is recorded: rerun the same command to resume"
            );
            return Ok(exit::INTERRUPTED);
        }
        Ok(if self.rejected_now > 0 {
            exit::REJECTED
        } else {
            exit::OK
        })
    }
}
