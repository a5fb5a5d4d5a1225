//! Import progress on standard error: a bar with rate and ETA on a
//! terminal (by bytes of input, which are known up front, unlike lines),
//! and a plain line every few seconds otherwise (logs, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub imported: u64,
    pub rejected: u64,
    /// Lines finished in an earlier run, and blank lines.
    pub skipped: u64,
}

pub struct Progress {
    bar: Option<ProgressBar>,
    total_bytes: Option<u64>,
    started: Instant,
    last_plain: Instant,
    /// How often a plain line is printed (every 5 s by default).
    plain_every: Duration,
    /// `--quiet`: no bar and no plain lines, only the caller's summary.
    quiet: bool,
    position: u64,
    pub counts: Counts,
}

impl Progress {
    pub fn new(total_bytes: Option<u64>, quiet: bool, plain_every: Duration) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = match total_bytes {
                Some(total) => ProgressBar::new(total),
                None => ProgressBar::new_spinner(),
            };
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let template = if total_bytes.is_some() {
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg} ETA {eta}"
            } else {
                "{spinner} [{elapsed_precise}] {bytes} read, {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        let now = Instant::now();
        Progress {
            bar,
            total_bytes,
            started: now,
            last_plain: now,
            plain_every,
            quiet,
            position: 0,
            counts: Counts::default(),
        }
    }

    /// Records finished lines and how far into the input they reach.
    pub fn advance(&mut self, imported: u64, rejected: u64, skipped: u64, position: u64) {
        self.counts.imported += imported;
        self.counts.rejected += rejected;
        self.counts.skipped += skipped;
        self.position = self.position.max(position);
        let summary = self.summary();
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.position);
                bar.set_message(summary);
            }
            None if !self.quiet && self.last_plain.elapsed() >= self.plain_every => {
                self.last_plain = Instant::now();
                let of = match self.total_bytes {
                    Some(total) if total > 0 => format!(
                        " ({:.0}% of input)",
                        self.position as f64 * 100.0 / total as f64
                    ),
                    _ => String::new(),
                };
                eprintln!("import: {summary}{of}");
            }
            None => {}
        }
    }

    fn summary(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        format!(
            "{} lines imported, {} rejected, {:.0} lines/s",
            self.counts.imported,
            self.counts.rejected,
            self.counts.imported as f64 / secs
        )
    }

    /// Clears the bar; the caller prints the final summary.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
