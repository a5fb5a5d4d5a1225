//! The commit metadata that lists which records past a committed offset
//! are dealt with already.
//!
//! Kafka keeps one offset per partition and group, so a partition whose
//! oldest record is slow (a destination taking seconds, a send waiting for
//! a free slot) holds its committed offset back while the records after it
//! finish. Whoever reads the partition next would start at that offset and
//! send them all again. Kafka also stores a short string beside each
//! committed offset; Sluice writes there which of the offsets it had read
//! past the committed one are still open, so the next owner skips the rest
//! (the technique of Confluent's parallel consumer).
//!
//! The text is `1;<span>;<gap>+<len>,…`: of the `span` offsets from the
//! committed one, the runs listed are open (each `gap` counted from the end
//! of the run before, the first from the committed offset) and the others
//! are done. Offsets from `span` on are unknown. An empty string says
//! nothing is known past the committed offset. The text is kept under
//! [`MAX_LEN`] by shortening the span, which only makes the next owner send
//! more again; Kafka refuses a commit whose metadata passes its
//! `offset.metadata.max.bytes` (4096 by default).

use std::collections::BTreeSet;

/// The longest metadata written, in bytes.
pub const MAX_LEN: usize = 2_000;

/// The most open offsets taken from metadata: more means it was not
/// written by Sluice, and it is ignored.
const MAX_OPEN: i64 = 1_000_000;

const VERSION: &str = "1";

/// What a committed offset's metadata says past that offset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Done {
    /// How many offsets from the committed one it speaks for.
    pub span: i64,
    /// Those of them still open, as offsets relative to the committed one.
    pub open: BTreeSet<i64>,
}

/// The metadata for a partition committed at `position`, read up to
/// `next` (exclusive), with `open` (absolute offsets, all at or past
/// `position`) not yet dealt with. Empty when every offset read past
/// `position` is open: there is nothing to skip.
pub fn encode(position: i64, next: i64, open: impl IntoIterator<Item = i64>) -> String {
    let span = next - position;
    let mut runs: Vec<(i64, i64)> = Vec::new();
    let mut count = 0;
    for offset in open {
        let rel = offset - position;
        if !(0..span).contains(&rel) {
            continue;
        }
        count += 1;
        match runs.last_mut() {
            Some((start, len)) if *start + *len == rel => *len += 1,
            _ => runs.push((rel, 1)),
        }
    }
    if count >= span {
        return String::new();
    }
    let mut text = String::new();
    let mut end = 0;
    for &(start, len) in &runs {
        let comma = if text.is_empty() { "" } else { "," };
        let run = format!("{comma}{}+{len}", start - end);
        // Room for the header with the longest span it can carry.
        if text.len() + run.len() + 24 > MAX_LEN {
            // Speak only for the offsets before this run.
            return with_header(start, &text);
        }
        text.push_str(&run);
        end = start + len;
    }
    with_header(span, &text)
}

fn with_header(span: i64, runs: &str) -> String {
    if span <= 0 {
        return String::new();
    }
    format!("{VERSION};{span};{runs}")
}

/// Reads metadata written by [`encode`]; `None` for anything else (empty,
/// another writer's, damaged), which says nothing is known to be done.
pub fn decode(text: &str) -> Option<Done> {
    let mut fields = text.split(';');
    if fields.next()? != VERSION {
        return None;
    }
    let span: i64 = fields.next()?.parse().ok()?;
    let runs = fields.next()?;
    if fields.next().is_some() || span <= 0 {
        return None;
    }
    let mut open = BTreeSet::new();
    let mut end = 0i64;
    for run in runs.split(',').filter(|r| !r.is_empty()) {
        let (gap, len) = run.split_once('+')?;
        let (gap, len): (i64, i64) = (gap.parse().ok()?, len.parse().ok()?);
        if gap < 0 || len <= 0 {
            return None;
        }
        let start = end.checked_add(gap)?;
        end = start.checked_add(len)?;
        if end > span || i64::try_from(open.len()).ok()? + len > MAX_OPEN {
            return None;
        }
        open.extend(start..end);
    }
    Some(Done { span, open })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_open_runs_past_the_position() {
        let text = encode(100, 120, [100, 101, 102, 110, 111, 119]);
        assert_eq!(text, "1;20;0+3,7+2,7+1");
        let done = decode(&text).unwrap();
        assert_eq!(done.span, 20);
        assert_eq!(
            done.open.into_iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 10, 11, 19]
        );
    }

    #[test]
    fn says_nothing_when_nothing_past_the_position_is_done() {
        assert_eq!(encode(5, 5, []), "");
        assert_eq!(encode(5, 8, [5, 6, 7]), "");
        assert_eq!(decode(""), None);
    }

    #[test]
    fn a_long_list_is_cut_short_and_speaks_only_for_what_it_lists() {
        // Every other offset open: far more runs than fit.
        let open: Vec<i64> = (0..100_000).step_by(2).collect();
        let text = encode(0, 100_000, open.iter().copied());
        assert!(text.len() <= MAX_LEN, "{} bytes", text.len());
        let done = decode(&text).unwrap();
        assert!(done.span < 100_000);
        for rel in 0..done.span {
            assert_eq!(done.open.contains(&rel), rel % 2 == 0, "offset {rel}");
        }
    }

    #[test]
    fn refuses_metadata_it_did_not_write() {
        for text in [
            "2;10;0+1",
            "1;10",
            "1;10;0+11",
            "1;-4;",
            "1;10;x+1",
            "1;10;0+0",
            "1;10;0+1;more",
            "1;9223372036854775807;0+9223372036854775807",
            "offset 7",
        ] {
            assert_eq!(decode(text), None, "{text}");
        }
        assert_eq!(
            decode("1;4;").map(|d| d.open.len()),
            Some(0),
            "all four done"
        );
    }
}
