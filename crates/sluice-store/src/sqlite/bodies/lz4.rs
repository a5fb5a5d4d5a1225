//! An LZ4 block encoder for calls against the fixed dictionary, with the
//! dictionary's hash table built once.
//!
//! Why not `lz4_flex::block::compress_into_with_dict` for every call: it
//! zeroes an 8 KB hash table and hashes the dictionary into it (some 850
//! positions) before it looks at the input. For a 500-byte call that was
//! two thirds of the compression time on the ingest path (`perf`, single
//! calls, BENCHMARKS.md, "Measured choices"). Here the dictionary's table is
//! built once, and each call starts from a copy of it.
//!
//! The output is a standard LZ4 block (the format's spec:
//! `lz4_Block_format.md` in the lz4 repository), so any LZ4 decoder given
//! the same dictionary expands it; Sluice decodes with lz4_flex. The
//! format's end rules hold: the last match starts at least 12 bytes before
//! the end, and the last 5 bytes are literals.
//!
//! The search is LZ4's greedy fast mode: hash the 4 bytes at a position,
//! take the position the table remembers for that hash if its 4 bytes agree
//! and it is at most 65,535 bytes back, extend the match backwards over the
//! pending literals and forwards, and write the sequence; after a run of
//! misses the search skips ahead faster. Positions count in the dictionary
//! followed by the input, which the table's 16-bit entries cover up to
//! 65,535 bytes in all; longer inputs are left to lz4_flex (`None`).

const MIN_MATCH: usize = 4;
/// The last bytes of a block are always literals.
const LAST_LITERALS: usize = 5;
/// A match starts at least this many bytes before the end of the block.
const MATCH_START_LIMIT: usize = 12;
const MAX_OFFSET: usize = u16::MAX as usize;
const HASH_LOG: u32 = 12;
/// After `1 << SKIP_TRIGGER` misses in a row, the search steps 2 bytes, and
/// so on.
const SKIP_TRIGGER: u32 = 6;

/// An encoder for one dictionary.
pub(super) struct Encoder {
    dictionary: &'static [u8],
    /// For each hash of 4 bytes, the last dictionary position holding them.
    table: Box<[u16; 1 << HASH_LOG]>,
}

impl Encoder {
    /// Hashes every position of `dictionary` (later ones win: nearer to the
    /// input, so shorter offsets).
    pub(super) fn new(dictionary: &'static [u8]) -> Encoder {
        let mut table = Box::new([0u16; 1 << HASH_LOG]);
        let hashed = dictionary.len().min(MAX_OFFSET).saturating_sub(7);
        for at in 0..hashed {
            // In range: `at` < 65,528 by the bound above.
            table[slot_at(dictionary, at)] = at as u16;
        }
        Encoder { dictionary, table }
    }

    /// Appends the LZ4 block of `input` to `out`, or returns `None` (with
    /// `out` untouched) when the dictionary and the input together exceed
    /// 65,535 bytes.
    pub(super) fn compress(&self, input: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let base = self.dictionary.len();
        if base + input.len() > MAX_OFFSET {
            return None;
        }
        let mut buf = Vec::with_capacity(base + input.len());
        buf.extend_from_slice(self.dictionary);
        buf.extend_from_slice(input);
        let mut table: [u16; 1 << HASH_LOG] = *self.table;
        let end = buf.len();
        if input.len() <= MATCH_START_LIMIT {
            last_literals(out, input);
            return Some(());
        }
        let match_end_limit = end - LAST_LITERALS;
        let start_limit = end - MATCH_START_LIMIT;
        let mut anchor = base;
        let mut at = base;
        'blocks: loop {
            let mut misses = 1u32 << SKIP_TRIGGER;
            let candidate = loop {
                if at > start_limit {
                    break 'blocks;
                }
                let word = read_u64(&buf, at);
                // The low four bytes: what a match must agree on.
                let bytes = word as u32;
                let slot = &mut table[slot_of(word)];
                let candidate = usize::from(*slot);
                // In range: every position is below 65,535 (checked above).
                *slot = at as u16;
                if candidate < at
                    && at - candidate <= MAX_OFFSET
                    && read_u32(&buf, candidate) == bytes
                {
                    break candidate;
                }
                at += (misses >> SKIP_TRIGGER) as usize;
                misses += 1;
            };
            let back = backwards(&buf, anchor, at, candidate);
            let (start, from) = (at - back, candidate - back);
            let forward = common_prefix(
                &buf[at + MIN_MATCH..match_end_limit],
                &buf[candidate + MIN_MATCH..],
            );
            let length = back + MIN_MATCH + forward;
            sequence(out, &buf[anchor..start], start - from, length);
            at = start + length;
            anchor = at;
            // The position two back, as LZ4 does: the next match often
            // starts there in repetitive text.
            if at - 2 + 8 <= end {
                table[slot_at(&buf, at - 2)] = (at - 2) as u16;
            }
        }
        last_literals(out, &buf[anchor..]);
        Some(())
    }
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The table slot of the 5 bytes at `at` (LZ4's hash for 64-bit reads):
/// keyed on one byte more than a match needs, candidates agree more often
/// past their first four bytes.
fn slot_at(bytes: &[u8], at: usize) -> usize {
    slot_of(read_u64(bytes, at))
}

/// [`slot_at`] of the 8 bytes read there.
fn slot_of(word: u64) -> usize {
    ((word << 24).wrapping_mul(889_523_592_379) >> (64 - HASH_LOG)) as usize
}

/// How many bytes before `at` (not reaching back past `anchor`) equal those
/// before `candidate`.
fn backwards(buf: &[u8], anchor: usize, at: usize, candidate: usize) -> usize {
    let mut n = 0;
    while at - n > anchor && candidate > n && buf[at - n - 1] == buf[candidate - n - 1] {
        n += 1;
    }
    n
}

/// How many leading bytes `a` and `b` share, compared 8 at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= n {
        let differ = read_u64(a, at) ^ read_u64(b, at);
        if differ != 0 {
            return at + (differ.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// One sequence: `literals`, then `length` bytes copied from `offset` back.
fn sequence(out: &mut Vec<u8>, literals: &[u8], offset: usize, length: usize) {
    let extra = length - MIN_MATCH;
    out.push(nibble(literals.len()) << 4 | nibble(extra));
    if literals.len() >= 15 {
        length_bytes(out, literals.len() - 15);
    }
    out.extend_from_slice(literals);
    // In range: offsets are at most 65,535 (checked by the search).
    out.extend_from_slice(&(offset as u16).to_le_bytes());
    if extra >= 15 {
        length_bytes(out, extra - 15);
    }
}

/// The block's last sequence: literals only.
fn last_literals(out: &mut Vec<u8>, literals: &[u8]) {
    out.push(nibble(literals.len()) << 4);
    if literals.len() >= 15 {
        length_bytes(out, literals.len() - 15);
    }
    out.extend_from_slice(literals);
}

fn nibble(n: usize) -> u8 {
    // In range: at most 15.
    n.min(15) as u8
}

fn length_bytes(out: &mut Vec<u8>, mut n: usize) {
    while n >= 255 {
        out.push(255);
        n -= 255;
    }
    // In range: below 255.
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    const DICT: &[u8] =
        b"{\"type\":\"track\",\"event\":\"Order Completed\",\"properties\":{\"revenue\":";

    fn round_trip(dict: &'static [u8], input: &[u8]) -> usize {
        let mut out = Vec::new();
        Encoder::new(dict)
            .compress(input, &mut out)
            .expect("short enough");
        let mut back = vec![0; input.len()];
        let n = lz4_flex::block::decompress_into_with_dict(&out, &mut back, dict)
            .unwrap_or_else(|e| panic!("{e} for {:?}", String::from_utf8_lossy(input)));
        assert_eq!(&back[..n], input);
        out.len()
    }

    #[test]
    fn every_length_comes_back_byte_for_byte() {
        let text = br#"{"type":"track","event":"Order Completed","properties":{"revenue":12.5,"currency":"USD","items":[1,2,3,1,2,3,1,2,3]},"userId":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#;
        for len in 0..=text.len() {
            round_trip(DICT, &text[..len]);
            round_trip(b"", &text[..len]);
        }
    }

    #[test]
    fn long_runs_and_long_literals_use_length_bytes() {
        let mut input = vec![b'x'; 5000];
        input.extend((0..2000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
        input.extend(vec![b'y'; 300]);
        let size = round_trip(DICT, &input);
        assert!(size < 2400, "{size} bytes");
    }

    #[test]
    fn matches_reach_into_the_dictionary() {
        let input = br#"{"type":"track","event":"Order Completed","properties":{"revenue":3}}"#;
        let with = round_trip(DICT, input);
        let without = round_trip(b"", input);
        assert!(with < input.len() / 2, "{with} of {}", input.len());
        assert!(with < without);
    }

    /// Inputs stitched from pieces of the real dictionary, of themselves and
    /// of noise, at every scale from a few bytes to a few kilobytes.
    #[test]
    fn stitched_inputs_come_back_byte_for_byte() {
        let dict = super::super::DICTIONARY_V1;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for _ in 0..3000 {
            let mut input = Vec::new();
            let target = next(3000);
            while input.len() < target {
                let len = 1 + next(40);
                match next(3) {
                    0 => {
                        let at = next(dict.len() - len);
                        input.extend_from_slice(&dict[at..at + len]);
                    }
                    1 if input.len() > len => {
                        let at = next(input.len() - len);
                        input.extend_from_within(at..at + len);
                    }
                    _ => input.extend((0..len).map(|_| next(256) as u8)),
                }
            }
            round_trip(dict, &input);
        }
    }

    #[test]
    fn inputs_past_sixteen_bit_positions_are_left_to_the_caller() {
        let mut out = vec![7];
        let long = vec![b'a'; MAX_OFFSET];
        assert!(Encoder::new(DICT).compress(&long, &mut out).is_none());
        assert_eq!(out, [7]);
        round_trip(DICT, &long[..MAX_OFFSET - DICT.len()]);
    }
}
