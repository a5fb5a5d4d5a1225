//! JavaScript's property order for object keys.
//!
//! `OrdinaryOwnPropertyKeys` lists "array index" keys first, ascending by
//! numeric value, then string keys in creation order. An array index is a
//! key whose canonical numeric string is itself and whose value is below
//! 2^32 − 1: `"0"`, `"7"`, `"4294967294"`, but not `"01"`, `"-1"`, `"+1"`,
//! `"1.0"` or `"4294967295"`.

use serde_json::{Map, Value};

/// The largest array index, 2^32 − 2.
const MAX_ARRAY_INDEX: u32 = u32::MAX - 1;

/// The numeric value of `key` if JavaScript treats it as an array index.
pub(super) fn array_index(key: &str) -> Option<u32> {
    let bytes = key.as_bytes();
    match bytes {
        [] => None,
        [b'0'] => Some(0),
        // A leading zero is not canonical; 11+ digits always exceed u32.
        [b'0', ..] => None,
        _ if bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) => None,
        _ => {
            let n = bytes
                .iter()
                .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
            u32::try_from(n).ok().filter(|&n| n <= MAX_ARRAY_INDEX)
        }
    }
}

/// The array-index entries of `map`, ascending by index.
///
/// Only called for objects that have at least one such key, so ordinary
/// objects never pay for the allocation or the sort.
pub(super) fn sorted_index_entries(map: &Map<String, Value>) -> Vec<(u32, &str, &Value)> {
    let mut entries: Vec<(u32, &str, &Value)> = map
        .iter()
        .filter_map(|(k, v)| array_index(k).map(|i| (i, k.as_str(), v)))
        .collect();
    // Keys are unique in a map, so indices are too; unstable sort is exact.
    entries.sort_unstable_by_key(|&(i, _, _)| i);
    entries
}
