//! [`IdSet`]: the set of suppressed user ids, laid out for ingest's lookup.
//!
//! Why not `HashSet<String>`: there every id costs a 24-byte `String` in the
//! table plus a heap allocation of its own (32 bytes or more after the
//! allocator rounds up), about 80 MB for 1,000,000 ids, and each lookup pays
//! SipHash. Here the ids' bytes lie end to end in one arena (each after its
//! LEB128 length) and the table holds only a 4-byte arena offset per id
//! (plus hashbrown's control byte), hashed with foldhash, keyed per process
//! so that nobody can pick ids that collide. Looking up an id that is not in
//! the set (every event of a user who is not suppressed) reads the table's
//! control bytes and touches the arena only on a 7-bit tag match.
//!
//! Removing an id leaves its bytes in the arena as garbage; once the garbage
//! outweighs the live bytes (and 1 MiB) the arena and table are rebuilt.

use std::collections::HashSet;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

/// Garbage below this is never worth a rebuild.
const COMPACT_MIN: usize = 1 << 20;

/// A set of strings: offsets in a [`HashTable`] into one byte arena.
#[derive(Default)]
pub struct IdSet {
    table: HashTable<u32>,
    arena: Vec<u8>,
    hasher: DefaultHashBuilder,
    /// Arena bytes of removed ids.
    garbage: usize,
    /// Ids beyond the 4 GiB an offset addresses (not expected in practice).
    overflow: HashSet<Box<str>>,
}

/// The id stored at `offset` (empty if the arena were ever inconsistent).
fn read_id(arena: &[u8], offset: u32) -> &[u8] {
    let mut at = offset as usize;
    let mut len = 0usize;
    let mut shift = 0u32;
    while let Some(&b) = arena.get(at) {
        at += 1;
        len |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return arena.get(at..at + len).unwrap_or_default();
        }
        shift += 7;
    }
    &[]
}

/// Appends `id` after its LEB128 length; returns the bytes written. The
/// arena grows by a quarter rather than doubling: it is most of the set.
fn push_id(arena: &mut Vec<u8>, id: &[u8]) -> usize {
    let start = arena.len();
    let needed = encoded_len(id);
    if arena.capacity() - start < needed {
        arena.reserve_exact(needed.max(start / 4));
    }
    let mut len = id.len();
    loop {
        let low = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            arena.push(low);
            break;
        }
        arena.push(low | 0x80);
    }
    arena.extend_from_slice(id);
    arena.len() - start
}

fn encoded_len(id: &[u8]) -> usize {
    let mut n = 1;
    let mut len = id.len() >> 7;
    while len > 0 {
        n += 1;
        len >>= 7;
    }
    n + id.len()
}

impl IdSet {
    fn hash(&self, id: &[u8]) -> u64 {
        self.hasher.hash_one(id)
    }

    pub fn contains(&self, id: &str) -> bool {
        let id = id.as_bytes();
        let arena = &self.arena;
        self.table
            .find(self.hash(id), |&o| read_id(arena, o) == id)
            .is_some()
            || (!self.overflow.is_empty() && self.overflow.contains(id_str(id)))
    }

    /// Adds `id`; returns whether it was new.
    pub fn insert(&mut self, id: &str) -> bool {
        if self.contains(id) {
            return false;
        }
        let bytes = id.as_bytes();
        let hash = self.hash(bytes);
        let Ok(offset) = u32::try_from(self.arena.len()) else {
            return self.overflow.insert(id.into());
        };
        push_id(&mut self.arena, bytes);
        let (arena, hasher) = (&self.arena, &self.hasher);
        self.table
            .insert_unique(hash, offset, |&o| hasher.hash_one(read_id(arena, o)));
        true
    }

    /// Removes `id`; returns whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        let bytes = id.as_bytes();
        let hash = self.hash(bytes);
        let arena = &self.arena;
        match self.table.find_entry(hash, |&o| read_id(arena, o) == bytes) {
            Ok(entry) => {
                entry.remove();
                self.garbage += encoded_len(bytes);
                self.compact_if_worth_it();
                true
            }
            Err(_) => self.overflow.remove(id),
        }
    }

    pub fn len(&self) -> usize {
        self.table.len() + self.overflow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held: the table's allocation and the arena's capacity
    /// (the overflow set is counted at its ids' length).
    pub fn heap_bytes(&self) -> usize {
        self.table.allocation_size()
            + self.arena.capacity()
            + self.overflow.iter().map(|s| s.len() + 16).sum::<usize>()
    }

    fn compact_if_worth_it(&mut self) {
        let live = self.arena.len() - self.garbage;
        if self.garbage < COMPACT_MIN || self.garbage < live {
            return;
        }
        let mut arena = Vec::with_capacity(live);
        let mut table = HashTable::with_capacity(self.table.len());
        for &old in &self.table {
            let id = read_id(&self.arena, old);
            let offset = arena.len() as u32;
            push_id(&mut arena, id);
            let hash = self.hasher.hash_one(id);
            let hasher = &self.hasher;
            table.insert_unique(hash, offset, |&o| hasher.hash_one(read_id(&arena, o)));
        }
        self.arena = arena;
        self.table = table;
        self.garbage = 0;
    }
}

/// `id` came from a `&str`, so it is UTF-8.
fn id_str(id: &[u8]) -> &str {
    std::str::from_utf8(id).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_the_ids_inserted_and_not_removed() {
        let mut set = IdSet::default();
        assert!(set.insert("u-1"));
        assert!(!set.insert("u-1"));
        assert!(set.insert("u-2"));
        assert!(set.insert(""));
        assert!(set.contains("u-1") && set.contains("u-2") && set.contains(""));
        assert!(!set.contains("u-3") && !set.contains("u-"));
        assert!(set.remove("u-1"));
        assert!(!set.remove("u-1"));
        assert!(!set.contains("u-1"));
        assert_eq!(set.len(), 2);
        assert!(set.insert("u-1"));
        assert!(set.contains("u-1"));
    }

    #[test]
    fn ids_longer_than_one_length_byte_round_trip() {
        let mut set = IdSet::default();
        let long = "x".repeat(300);
        let longer = "é".repeat(20_000);
        set.insert(&long);
        set.insert(&longer);
        assert!(set.contains(&long) && set.contains(&longer));
        assert!(!set.contains(&long[..299]));
        assert_eq!(read_id(&set.arena, 0), long.as_bytes());
    }

    #[test]
    fn rebuilding_after_many_removals_keeps_the_rest_and_frees_the_arena() {
        let mut set = IdSet::default();
        let n = 400_000;
        for i in 0..n {
            set.insert(&format!("user-{i:07}"));
        }
        let full = set.arena.len();
        for i in (0..n).filter(|i| i % 10 != 0) {
            assert!(set.remove(&format!("user-{i:07}")));
        }
        // Garbage never outgrows the live bytes by more than the minimum.
        let live = (n / 10) * encoded_len(b"user-0000000");
        assert!(set.arena.len() < full, "arena was rebuilt");
        assert!(
            set.arena.len() <= 2 * live + COMPACT_MIN,
            "{}",
            set.arena.len()
        );
        assert_eq!(set.len(), n / 10);
        for i in 0..n {
            assert_eq!(set.contains(&format!("user-{i:07}")), i % 10 == 0, "{i}");
        }
    }

    #[test]
    fn a_million_short_ids_take_well_under_a_hash_set_of_strings() {
        let mut set = IdSet::default();
        for i in 0..1_000_000 {
            set.insert(&format!("suppressed-{i:07}"));
        }
        // HashSet<String>: ~2^21 slots of 24 B + 1M allocations of 32 B.
        assert!(set.heap_bytes() < 40 << 20, "{} bytes", set.heap_bytes());
        assert!(set.contains("suppressed-0999999"));
    }
}
