//! The import checkpoint: which lines of which inputs are finished.
//!
//! Invariants:
//! - A line is recorded only after the server acknowledged it (`200`, so it
//!   is committed) or after it was written to the reject file. A rerun skips
//!   recorded lines, so nothing recorded is ever sent again.
//! - Batches finish out of order, so finished lines are kept as sorted,
//!   disjoint, inclusive ranges, not as one high-water mark.
//!
//! Layout: one JSON file, `{"version":1,"inputs":[{"name","size","done","rejected"}]}`,
//! where `name` is the input's canonical path (or `-` for stdin) and `size`
//! its length in bytes when the checkpoint was made.
//!
//! Recovery: the file is replaced atomically (written beside, synced,
//! renamed), so a crash leaves the previous or the next version, never a
//! torn one. It is saved after every finished batch, so it trails what the
//! server committed by the batches in flight at most (a commit whose answer
//! never arrived, or an answer not yet recorded): those are sent again on
//! rerun, with the same `messageId`s (see `batch::prepare`), and the server
//! drops the ones it had committed (its deduplication window).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// Sorted, disjoint, non-adjacent inclusive ranges of line numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    pub fn contains(&self, n: u64) -> bool {
        let i = self.0.partition_point(|&(_, end)| end < n);
        self.0.get(i).is_some_and(|&(start, _)| start <= n)
    }

    pub fn insert(&mut self, n: u64) {
        let i = self
            .0
            .partition_point(|&(_, end)| end.saturating_add(1) < n);
        match self.0.get_mut(i) {
            Some((start, end)) if *start <= n.saturating_add(1) => {
                *start = (*start).min(n);
                *end = (*end).max(n);
                // Joining the next range closes a gap of one.
                if let Some(&(next_start, next_end)) = self.0.get(i + 1)
                    && next_start == self.0[i].1 + 1
                {
                    self.0[i].1 = next_end;
                    self.0.remove(i + 1);
                }
            }
            _ => self.0.insert(i, (n, n)),
        }
    }

    pub fn count(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s + 1).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputState {
    pub name: String,
    pub size: Option<u64>,
    pub done: Ranges,
    #[serde(default)]
    pub rejected: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    version: u32,
    pub inputs: Vec<InputState>,
    #[serde(skip)]
    path: Option<PathBuf>,
}

impl Checkpoint {
    /// Reads `path`, or starts empty when it does not exist (or when
    /// `fresh`). `None` keeps the checkpoint in memory only.
    pub fn open(path: Option<&Path>, fresh: bool) -> Result<Checkpoint, CliError> {
        let mut cp = Checkpoint {
            version: 1,
            ..Checkpoint::default()
        };
        if let Some(p) = path {
            if !fresh && p.exists() {
                let text = std::fs::read_to_string(p).map_err(|e| CliError::io(p.display(), e))?;
                cp = serde_json::from_str(&text).map_err(|e| {
                    CliError::Checkpoint(format!("{}: not a checkpoint file: {e}", p.display()))
                })?;
            }
            cp.path = Some(p.to_owned());
        }
        Ok(cp)
    }

    /// The state of input `name`, created if new. Fails when a file changed
    /// size since the checkpoint recorded it: its line numbers may no
    /// longer name the same lines.
    pub fn input(&mut self, name: &str, size: Option<u64>) -> Result<usize, CliError> {
        if let Some(i) = self.inputs.iter().position(|s| s.name == name) {
            let known = self.inputs[i].size;
            if known != size {
                let shown = |s: Option<u64>| s.map_or("unknown".into(), |n| n.to_string());
                return Err(CliError::Checkpoint(format!(
                    "{name} changed since the checkpoint was written (size {} then, {} now); \
                     pass --fresh to import it again from the start",
                    shown(known),
                    shown(size)
                )));
            }
            return Ok(i);
        }
        self.inputs.push(InputState {
            name: name.to_owned(),
            size,
            done: Ranges::default(),
            rejected: 0,
        });
        Ok(self.inputs.len() - 1)
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Replaces the file atomically.
    pub fn save(&self) -> Result<(), CliError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let text = serde_json::to_vec(self).unwrap_or_default();
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| CliError::io(path.display(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_neighbours_in_any_order() {
        let mut r = Ranges::default();
        for n in [5, 1, 3, 2, 9, 4, 10, 8] {
            r.insert(n);
        }
        assert_eq!(r.0, vec![(1, 5), (8, 10)]);
        r.insert(7);
        r.insert(6);
        assert_eq!(r.0, vec![(1, 10)]);
        r.insert(3);
        assert_eq!(r.count(), 10);
        assert!(r.contains(1) && r.contains(10) && !r.contains(11) && !r.contains(0));
    }

    #[test]
    fn a_file_of_another_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp");
        let mut cp = Checkpoint::open(Some(&path), false).unwrap();
        let i = cp.input("/data/a.jsonl", Some(10)).unwrap();
        cp.inputs[i].done.insert(1);
        cp.save().unwrap();
        let mut again = Checkpoint::open(Some(&path), false).unwrap();
        assert_eq!(again.input("/data/a.jsonl", Some(10)).unwrap(), 0);
        assert!(again.inputs[0].done.contains(1));
        assert!(matches!(
            again.input("/data/a.jsonl", Some(11)),
            Err(CliError::Checkpoint(_))
        ));
        let fresh = Checkpoint::open(Some(&path), true).unwrap();
        assert!(fresh.inputs.is_empty());
    }
}
