//! Recognising JSON text that `JSON.stringify(JSON.parse(text))` returns
//! unchanged, so it can be copied instead of parsed and rendered again.
//!
//! Why: the delivery engine renders every stored event in the
//! `JSON.stringify` form before signing it. Parsing each nested value into a
//! `serde_json::Value` (an allocation per key, string and map) was about a
//! tenth of the CPU time of draining a backlog, yet most clients (every
//! JavaScript one, and most others for most values) already send text in
//! that form. [`is_fixed_point`] checks the text in one pass without
//! allocating; when it says yes, the bytes are the rendering.
//!
//! It may say no to text that is in fact a fixed point (the caller then
//! takes the full path); it must never say yes to text that is not. It
//! accepts:
//! - no whitespace between tokens;
//! - strings whose escapes are only `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
//!   `\t` (any `\u` escape or `\/` is refused, though a few are canonical);
//! - numbers without an exponent, with at most 15 significant digits, no
//!   trailing zero in a fraction, not `-0`, and not below 10^-6 (where
//!   JavaScript switches to exponent form). Any decimal of at most 15
//!   significant digits survives the round trip through an f64 unchanged
//!   and no shorter decimal names the same f64, so the shortest round-trip
//!   form JavaScript prints is the text itself;
//! - objects without duplicate keys, without "array index" keys (which
//!   JavaScript moves to the front) and with at most [`MAX_KEYS`] keys;
//! - nesting up to [`MAX_DEPTH`].

use super::keys::array_index;

/// Deeper text is left to the full path (which has its own limit).
const MAX_DEPTH: usize = 64;

/// Objects with more keys are left to the full path, bounding the
/// quadratic duplicate check.
const MAX_KEYS: usize = 64;

/// Most significant digits a number may have to be copied as it is.
const MAX_DIGITS: usize = 15;

/// Whether `text` is exactly what `JSON.stringify(JSON.parse(text))`
/// returns. `false` also for anything that is not one JSON value.
pub fn is_fixed_point(text: &str) -> bool {
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        keys: Vec::new(),
    };
    scan.value(0) && scan.at == scan.bytes.len()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Keys of the objects being scanned, innermost last.
    keys: Vec<&'a [u8]>,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let hit = self.bytes[self.at..].starts_with(word);
        if hit {
            self.at += word.len();
        }
        hit
    }

    fn object(&mut self, depth: usize) -> bool {
        if depth >= MAX_DEPTH {
            return false;
        }
        self.at += 1;
        if self.eat(b'}') {
            return true;
        }
        let base = self.keys.len();
        loop {
            let Some(key) = self.string() else {
                return false;
            };
            let index_key = std::str::from_utf8(key).is_ok_and(|k| array_index(k).is_some());
            if index_key || self.keys.len() - base >= MAX_KEYS || self.keys[base..].contains(&key) {
                return false;
            }
            if self.keys.capacity() == 0 {
                // One allocation for the usual object, not one per doubling.
                self.keys.reserve(16);
            }
            self.keys.push(key);
            if !self.eat(b':') || !self.value(depth + 1) {
                return false;
            }
            if self.eat(b'}') {
                break;
            }
            if !self.eat(b',') {
                return false;
            }
        }
        self.keys.truncate(base);
        true
    }

    fn array(&mut self, depth: usize) -> bool {
        if depth >= MAX_DEPTH {
            return false;
        }
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth + 1) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string in canonical form; returns its text between the quotes.
    /// With only the short escapes allowed, equal texts mean equal strings.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at - 1);
                }
                b'\\' => match self.bytes.get(self.at + 1)? {
                    b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                    _ => return None,
                },
                0x00..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    fn number(&mut self) -> bool {
        let negative = self.eat(b'-');
        let int_start = self.at;
        if self.eat(b'0') {
            // A leading zero stands alone.
        } else {
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.at += 1;
            }
        }
        let int_digits = self.at - int_start;
        if int_digits == 0 {
            return false;
        }
        let zero_int = self.bytes[int_start] == b'0';
        let mut significant = if zero_int { 0 } else { int_digits };
        if self.eat(b'.') {
            let frac_start = self.at;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.at += 1;
            }
            let frac = &self.bytes[frac_start..self.at];
            match frac.last() {
                None | Some(b'0') => return false,
                Some(_) => {}
            }
            if zero_int {
                let leading = frac.iter().take_while(|&&b| b == b'0').count();
                // 0.000001 is JavaScript's smallest fixed-notation magnitude.
                if leading > 5 {
                    return false;
                }
                significant = frac.len() - leading;
            } else {
                significant += frac.len();
            }
        } else if zero_int && negative {
            return false;
        }
        !matches!(self.peek(), Some(b'e' | b'E')) && significant <= MAX_DIGITS
    }
}
