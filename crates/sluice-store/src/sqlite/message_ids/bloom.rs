//! The bloom filter of one block of events' message ids: pure, no I/O.
//!
//! The bits are stored in the database, so the hash is part of the file
//! format: it is written out here (FNV-1a 64 over the UTF-8 bytes, then two
//! SplitMix64 finalizers for the double-hashing pair) rather than taken
//! from `std`, whose hasher may change between Rust releases.

/// Bits per key: with [`PROBES`] probes, about 0.8 % false positives when a
/// block is full of distinct ids.
const BITS_PER_KEY: usize = 10;

/// Probes per key (k); near-optimal for 10 bits per key (k = 10 ln 2).
const PROBES: u64 = 7;

/// The filter's size in bytes for a block of `keys` ids.
pub(super) fn size_for(keys: usize) -> usize {
    (keys.max(1) * BITS_PER_KEY).div_ceil(8)
}

/// Sets `key`'s bits in `bits`. An empty `bits` is left alone.
pub(super) fn insert(bits: &mut [u8], key: &str) {
    for bit in probes(bits.len(), key) {
        bits[bit / 8] |= 1 << (bit % 8);
    }
}

/// Whether `key` may have been inserted: `false` is certain, `true` is
/// wrong at the false-positive rate. An empty filter contains nothing.
pub(super) fn may_contain(bits: &[u8], key: &str) -> bool {
    !bits.is_empty() && probes(bits.len(), key).all(|bit| bits[bit / 8] & (1 << (bit % 8)) != 0)
}

/// The bit positions of `key` in a filter of `len` bytes (none when empty).
fn probes(len: usize, key: &str) -> impl Iterator<Item = usize> {
    let m = (len as u64) * 8;
    let h = fnv1a(key.as_bytes());
    let h1 = mix(h);
    // Odd, so the probes of one key never collapse onto one bit.
    let h2 = mix(h ^ 0x9e37_79b9_7f4a_7c15) | 1;
    (0..if m == 0 { 0 } else { PROBES })
        .map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % m) as usize)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// SplitMix64's finalizer: spreads FNV's weak low bits over the word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(keys: &[String]) -> Vec<u8> {
        let mut bits = vec![0; size_for(keys.len())];
        for k in keys {
            insert(&mut bits, k);
        }
        bits
    }

    #[test]
    fn never_misses_an_inserted_key() {
        let keys: Vec<String> = (0..4096).map(|i| format!("{i:08x}-msg")).collect();
        let bits = filter(&keys);
        assert!(keys.iter().all(|k| may_contain(&bits, k)));
    }

    #[test]
    fn false_positives_stay_near_one_percent_for_uuid_like_ids() {
        let keys: Vec<String> = (0..4096)
            .map(|i| format!("6f1c{i:04x}-3b2a-4c1d-9e8f-{:012x}", i * 7919))
            .collect();
        let bits = filter(&keys);
        let false_hits = (0..100_000)
            .map(|i| format!("ab{i:06x}-0000-4000-8000-{i:012x}"))
            .filter(|k| may_contain(&bits, k))
            .count();
        assert!(false_hits < 1_500, "{false_hits} of 100000");
    }

    #[test]
    fn an_empty_filter_contains_nothing() {
        assert!(!may_contain(&[], "a"));
        let mut none: [u8; 0] = [];
        insert(&mut none, "a");
    }

    /// The bits are on disk: the hash must not change between releases.
    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let mut bits = vec![0u8; 16];
        insert(&mut bits, "message-1");
        let set: Vec<usize> = (0..128)
            .filter(|b| bits[b / 8] & (1 << (b % 8)) != 0)
            .collect();
        // The positions `message-1` set when the format was first written.
        assert_eq!(set, PINNED);
    }

    const PINNED: &[usize] = &[8, 27, 57, 76, 87, 106, 125];
}
