//! The unallocated bytes of one B-tree page: pure, no I/O.
//!
//! Layout (SQLite's file format, "B-tree Pages"): a header of 8 bytes (leaf)
//! or 12 (interior) at offset 0, or 100 on page 1 after the file header:
//! type, first free block (2 bytes), cell count (2), start of the cell
//! content area (2; 0 means 65536), fragmented bytes (1), the right child
//! (4, interior only). Then the cell pointer array, 2 bytes per cell, then
//! the gap, then the cell content area up to the usable size. Free blocks
//! inside the content area form a chain, each starting with the offset of
//! the next (2) and its own size (2).

/// Zeroes the gap and the bodies of the free blocks of `data`, a page of
/// `usable` bytes (page 1 when `first`); returns whether a byte changed.
/// Anything that is not a consistent B-tree page is left alone.
pub(in crate::sqlite) fn page(data: &mut [u8], first: bool, usable: usize) -> bool {
    let hdr = if first { 100 } else { 0 };
    if usable > data.len() || usable < hdr + 12 {
        return false;
    }
    let header = match data[hdr] {
        2 | 5 => 12,
        10 | 13 => 8,
        _ => return false,
    };
    let word = |at: usize| usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
    let cells = word(hdr + 3);
    let content = match word(hdr + 5) {
        0 => 65_536,
        n => n,
    };
    let gap = hdr + header + 2 * cells;
    if gap > content || content > usable {
        return false;
    }
    // The free blocks: ascending, inside the content area, at least 4 bytes.
    let mut blocks = Vec::new();
    let mut at = word(hdr + 1);
    while at != 0 {
        if at < content || at + 4 > usable {
            return false;
        }
        let (next, size) = (word(at), word(at + 2));
        if size < 4 || at + size > usable || (next != 0 && next < at + size) {
            return false;
        }
        blocks.push((at + 4, at + size));
        at = next;
    }
    let mut changed = zero(&mut data[gap..content]);
    for (from, to) in blocks {
        changed |= zero(&mut data[from..to]);
    }
    changed
}

fn zero(bytes: &mut [u8]) -> bool {
    let dirty = bytes.iter().any(|&b| b != 0);
    if dirty {
        bytes.fill(0);
    }
    dirty
}
