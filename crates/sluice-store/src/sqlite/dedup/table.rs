//! A compact set of tagged fingerprints: pure, no I/O.
//!
//! Each entry is 32 bits: 27 bits of a key's hash (its fingerprint) and a
//! 5-bit tag naming the window's generation that holds it. Buckets are 16
//! entries, one cache line; a key may live in either of two buckets chosen
//! by other bits of its hash, and goes into the emptier one ("two
//! choices"), which fills the table to about 95 % before an insert finds
//! both full. A lookup reads the two lines and compares 32 entries; a
//! fingerprint matching another key's (about 32 in 2^27 lookups) costs only
//! a confirming read, since every hit is checked against the events.
//!
//! A table is never resized: the full hashes are gone, so nothing could be
//! moved. When one is full the window starts a larger one beside it, and the
//! smaller one goes once the generations it holds have expired.

/// Entries per bucket: 16 of 4 bytes, one 64-byte cache line.
pub(super) const SLOTS: usize = 16;

/// Tags are 5 bits. Tag 0 is never handed out, so an entry is never 0
/// (which marks an empty slot).
pub(super) const TAGS: usize = 32;
const TAG_MASK: u32 = TAGS as u32 - 1;

/// The share of slots a table is sized to fill: room for traffic to grow
/// by a fifth before the table is full.
const SIZED_LOAD: f64 = 0.8;

/// The fewest buckets a table has (4 KiB).
const MIN_BUCKETS: usize = 64;

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub(super) struct Bucket(pub(super) [u32; SLOTS]);

pub(super) struct Table {
    buckets: Box<[Bucket]>,
    /// Entries per tag, whether its generation is live or not.
    counts: [usize; TAGS],
}

/// A key's two buckets and its entry without the tag.
#[derive(Clone, Copy)]
struct Spot {
    first: usize,
    second: usize,
    print: u32,
}

impl Table {
    /// A table sized for `ids` entries at [`SIZED_LOAD`].
    pub(super) fn for_ids(ids: usize) -> Table {
        let buckets = ((ids as f64 / (SLOTS as f64 * SIZED_LOAD)).ceil() as usize).max(MIN_BUCKETS);
        Table {
            buckets: vec![Bucket::default(); buckets].into_boxed_slice(),
            counts: [0; TAGS],
        }
    }

    /// Entries the table has room for.
    pub(super) fn slots(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// A table of `buckets` as [`Table::entries`] listed them: a saved
    /// table. `None` for no buckets.
    pub(super) fn from_buckets(buckets: Vec<Bucket>) -> Option<Table> {
        if buckets.is_empty() {
            return None;
        }
        let mut counts = [0; TAGS];
        for &e in buckets.iter().flat_map(|b| &b.0).filter(|&&e| e != 0) {
            counts[(e & TAG_MASK) as usize] += 1;
        }
        Some(Table {
            buckets: buckets.into_boxed_slice(),
            counts,
        })
    }

    /// Every slot, bucket by bucket (0 for an empty one).
    pub(super) fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().flat_map(|b| b.0)
    }

    /// Buckets of the table.
    pub(super) fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The memory the table holds, in bytes.
    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets) + std::mem::size_of::<Table>()
    }

    /// Entries of the tags in `tags` (a bit mask).
    pub(super) fn entries_of(&self, tags: u32) -> usize {
        (0..TAGS)
            .filter(|t| tags & (1 << t) != 0)
            .map(|t| self.counts[t])
            .sum()
    }

    fn spot(&self, key: u64) -> Spot {
        let n = self.buckets.len() as u64;
        let high = key >> 32;
        Spot {
            first: ((high * n) >> 32) as usize,
            second: ((u64::from(mix32(high as u32)) * n) >> 32) as usize,
            print: (key as u32) & !TAG_MASK,
        }
    }

    /// Asks the processor for `key`'s two buckets and goes on without
    /// waiting: a batch's keys are all asked for first, and the lookups
    /// that follow, between the batch's inserts into SQLite, find the lines
    /// in the cache.
    pub(super) fn prefetch(&self, key: u64) {
        let spot = self.spot(key);
        prefetch_line(&self.buckets[spot.first]);
        prefetch_line(&self.buckets[spot.second]);
    }

    /// The tags (a bit mask) of the entries with `key`'s fingerprint.
    pub(super) fn tags_of(&self, key: u64) -> u32 {
        let spot = self.spot(key);
        let mut tags = 0;
        for bucket in [spot.first, spot.second] {
            for &entry in &self.buckets[bucket].0 {
                if entry != 0 && entry & !TAG_MASK == spot.print {
                    tags |= 1 << (entry & TAG_MASK);
                }
            }
        }
        tags
    }

    /// Adds `key` under `tag` (1..32) into a free slot of the emptier of its
    /// buckets; a slot holding a tag of `dead` (a mask) counts as free.
    /// Returns `false`, changing nothing, when both buckets are full.
    pub(super) fn insert(&mut self, key: u64, tag: u8, dead: u32) -> bool {
        let spot = self.spot(key);
        let free = |b: &Bucket| {
            b.0.iter()
                .filter(|&&e| e == 0 || dead & (1 << (e & TAG_MASK)) != 0)
                .count()
        };
        let first = free(&self.buckets[spot.first]);
        let second = free(&self.buckets[spot.second]);
        let bucket = match (first, second) {
            (0, 0) => return false,
            (a, b) if a >= b => spot.first,
            _ => spot.second,
        };
        let Some(slot) = self.buckets[bucket]
            .0
            .iter_mut()
            .find(|e| **e == 0 || dead & (1 << (**e & TAG_MASK)) != 0)
        else {
            return false;
        };
        if *slot != 0 {
            self.counts[(*slot & TAG_MASK) as usize] -= 1;
        }
        *slot = spot.print | (u32::from(tag) & TAG_MASK);
        self.counts[usize::from(tag) & (TAGS - 1)] += 1;
        true
    }

    /// Takes out one entry of `key` under `tag`; whether there was one.
    pub(super) fn remove(&mut self, key: u64, tag: u8) -> bool {
        let spot = self.spot(key);
        let entry = spot.print | (u32::from(tag) & TAG_MASK);
        for bucket in [spot.first, spot.second] {
            if let Some(slot) = self.buckets[bucket].0.iter_mut().find(|e| **e == entry) {
                *slot = 0;
                self.counts[usize::from(tag) & (TAGS - 1)] -= 1;
                return true;
            }
        }
        false
    }

    /// Empties the slots holding a tag of `dead` in up to `n` buckets from
    /// `from`; returns where the next sweep starts (`None`: past the end).
    pub(super) fn sweep(&mut self, from: usize, n: usize, dead: u32) -> Option<usize> {
        let to = from.saturating_add(n).min(self.buckets.len());
        for bucket in self.buckets.get_mut(from..to).into_iter().flatten() {
            for slot in &mut bucket.0 {
                if *slot != 0 && dead & (1 << (*slot & TAG_MASK)) != 0 {
                    self.counts[(*slot & TAG_MASK) as usize] -= 1;
                    *slot = 0;
                }
            }
        }
        (to < self.buckets.len()).then_some(to)
    }
}

/// A hint to fetch `bucket`'s cache line.
#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "a prefetch is a hint: it reads nothing the program sees and cannot fault"
)]
fn prefetch_line(bucket: &Bucket) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: SSE is part of every x86_64 processor, and a prefetch neither
    // reads into the program nor faults, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(bucket).cast()) }
}

/// A read of `bucket`'s first word: loads of a batch's keys issued one
/// after another wait for memory together.
#[cfg(not(target_arch = "x86_64"))]
fn prefetch_line(bucket: &Bucket) {
    std::hint::black_box(bucket.0[0]);
}

/// MurmurHash3's 32-bit finalizer: the second bucket from the same bits as
/// the first, spread independently of it.
fn mix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}
