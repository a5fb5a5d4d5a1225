//! Where each top-level member of a stored message sits in its text.
//!
//! Why: a destination filter on `properties.coupon` needs one value, and
//! finding it in the text means stepping over every member before and after
//! `properties` (a repeated key could come later). Ingest writes the stored
//! text itself ([`crate::Event::json`]), so it can note where each top-level
//! key and value went as it writes them, and a reader jumps straight to the
//! value it needs. The stored text's top-level keys are unique (the parse
//! keeps the last value of a repeated key), so the first match is the only
//! one.
//!
//! An outline is only meaningful with the exact text it was taken from; a
//! caller that rewrites the text (a rule stripping traits) drops it.

use std::ops::Range;

/// The byte ranges of each top-level key and value in a message's text, in
/// text order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    members: Vec<Member>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    /// The key's text without its quotes.
    key: Range<usize>,
    /// Whether that text has escapes (so differs from the key itself).
    escaped: bool,
    value: Range<usize>,
}

impl Outline {
    pub(crate) fn with_capacity(members: usize) -> Outline {
        Outline {
            members: Vec::with_capacity(members),
        }
    }

    /// Notes a member whose quoted key (`escaped`: written with escapes)
    /// and value are at these ranges of the text.
    pub(crate) fn push(&mut self, key: Range<usize>, escaped: bool, value: Range<usize>) {
        self.members.push(Member {
            key: key.start + 1..key.end.saturating_sub(1),
            escaped,
            value,
        });
    }

    /// The text of the top-level value under `key` in `text`, the text this
    /// outline was taken from; `None` when there is no such member (or
    /// `text` is not that text).
    pub fn value<'t>(&self, text: &'t str, key: &str) -> Option<&'t str> {
        let member = self.members.iter().find(|m| {
            if m.escaped {
                let quoted = m.key.start.saturating_sub(1)..m.key.end + 1;
                text.get(quoted)
                    .and_then(|q| serde_json::from_str::<String>(q).ok())
                    .is_some_and(|k| k == key)
            } else {
                text.as_bytes().get(m.key.clone()) == Some(key.as_bytes())
            }
        })?;
        text.get(member.value.clone())
    }

    /// How many top-level members the text has.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}
