//! Pure core of the import: turning lines into batch items, packing items
//! into batches under the collection API's limits, and reading which item a
//! refused batch blamed. No I/O.

use sha2::{Digest, Sha256};

/// Where a line came from: the input's index on the command line and its
/// 1-based line number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineRef {
    pub input: usize,
    pub line: u64,
}

/// One line ready to send: its JSON object text, as read (plus a
/// `messageId` when it had none).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub at: LineRef,
    pub text: String,
}

/// A line that cannot be sent: not UTF-8, not JSON, or not an object.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalReject {
    pub code: &'static str,
    pub message: String,
}

/// Checks one line and makes it an item. Blank lines give `Ok(None)`.
///
/// A line without `messageId` gets a stable one derived from its line
/// number and content, so a line sent twice (a retry after a lost answer, a
/// rerun after a crash) reaches receivers with the same id they deduplicate
/// on, instead of a fresh server-made UUID each time.
pub fn prepare(at: LineRef, raw: &str) -> Result<Option<Item>, LocalReject> {
    let text = raw.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !text.starts_with('{') {
        return Err(LocalReject {
            code: "invalid_json",
            message: "a line must be one JSON object".into(),
        });
    }
    let probe: Probe = serde_json::from_str(text).map_err(|e| LocalReject {
        code: "invalid_json",
        message: format!("invalid JSON: {e}"),
    })?;
    let text = if probe.message_id.is_some() {
        text.to_owned()
    } else {
        with_message_id(text, &stable_message_id(at.line, text))
    };
    Ok(Some(Item { at, text }))
}

#[derive(serde::Deserialize)]
struct Probe {
    #[serde(rename = "messageId")]
    message_id: Option<serde::de::IgnoredAny>,
}

/// `import-` and 32 hex digits of SHA-256 over the line number and text.
pub fn stable_message_id(line: u64, text: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(line.to_be_bytes());
    hash.update(text.as_bytes());
    format!("import-{}", &hex::encode(hash.finalize())[..32])
}

/// Appends `"messageId"` as the object's last key, leaving the rest of the
/// text (key order, number forms, whitespace) exactly as it was.
fn with_message_id(object: &str, id: &str) -> String {
    let body = object[..object.len() - 1].trim_end();
    let sep = if body.trim_start_matches('{').trim().is_empty() {
        ""
    } else {
        ","
    };
    format!("{body}{sep}\"messageId\":\"{id}\"}}")
}

/// Batch limits: the collection API's defaults, with headroom.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_items: usize,
}

/// `{"batch":[` and `]}`.
const FRAME: usize = 12;

/// Packs items into batches: a batch is closed when the next item would
/// take its body over `max_body_bytes` or its count over `max_items`. An
/// item too large for any batch travels alone, and the server decides.
pub struct Packer {
    limits: Limits,
    items: Vec<Item>,
    bytes: usize,
}

impl Packer {
    pub fn new(limits: Limits) -> Packer {
        Packer {
            limits,
            items: Vec::new(),
            bytes: FRAME,
        }
    }

    /// Adds `item`; returns the batch it closed, if any.
    pub fn push(&mut self, item: Item) -> Option<Vec<Item>> {
        let cost = item.text.len() + usize::from(!self.items.is_empty());
        let full = !self.items.is_empty()
            && (self.bytes + cost > self.limits.max_body_bytes
                || self.items.len() >= self.limits.max_items);
        let closed = full.then(|| self.take());
        self.bytes += item.text.len() + usize::from(!self.items.is_empty());
        self.items.push(item);
        closed
    }

    /// The open batch, if it has items.
    pub fn take(&mut self) -> Vec<Item> {
        self.bytes = FRAME;
        std::mem::take(&mut self.items)
    }
}

/// The request body for `items`: their texts joined as they are.
pub fn body(items: &[Item]) -> Vec<u8> {
    let len = FRAME + items.iter().map(|i| i.text.len() + 1).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(b"{\"batch\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.text.as_bytes());
    }
    out.extend_from_slice(b"]}");
    out
}

/// The item a `400` blamed: the server prefixes item errors with
/// `batch[i]: `. Returns the index and the message without the prefix
/// (which would be meaningless in a reject file).
pub fn blamed_item(message: &str) -> Option<(usize, &str)> {
    let rest = message.strip_prefix("batch[")?;
    let (index, rest) = rest.split_once(']')?;
    let index = index.parse().ok()?;
    Some((index, rest.strip_prefix(':').unwrap_or(rest).trim_start()))
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
