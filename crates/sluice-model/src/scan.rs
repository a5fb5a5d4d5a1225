//! Stepping through JSON text without building it: the members of an object,
//! each value as its text.
//!
//! Why: the shape needs the keys of `properties` and the types of their
//! values, and a filter needs a value or two from each stored event; the
//! text is JSON that ingest has already validated (or wrote). Skipping the
//! rest byte by byte (strings to their closing quote, objects and arrays by
//! bracket depth) costs a fraction of a tokenizing parser, which dispatches
//! on every token it throws away.
//!
//! The text is trusted to be valid JSON. What the scan does check is enough
//! to never read past the end or split a character: text that ends early, or
//! a member that is not `"key": value`, is [`Malformed`]. It does not check
//! what it skips (a bad number or a mismatched bracket inside a value goes
//! unnoticed); the caller parses, with serde_json, only the values it keeps.

use std::borrow::Cow;

/// The text is not the JSON the scan expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The members of the object `text` holds (surrounding whitespace allowed),
/// in text order, or `None` when `text` is not an object.
pub fn members(text: &str) -> Option<Members<'_>> {
    let start = skip_ws(text.as_bytes(), 0);
    (text.as_bytes().get(start) == Some(&b'{')).then_some(Members {
        text,
        at: start + 1,
        first: true,
        done: false,
    })
}

/// Iterator over an object's members: each key (unescaped) and the text of
/// its value. Stops after the first [`Malformed`].
pub struct Members<'a> {
    text: &'a str,
    /// Just past the `{` or the previous value.
    at: usize,
    first: bool,
    done: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<(Cow<'a, str>, &'a str), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.member() {
            Ok(Some(member)) => Some(Ok(member)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<'a> Members<'a> {
    /// The next member, or `None` at the closing brace.
    fn member(&mut self) -> Result<Option<(Cow<'a, str>, &'a str)>, Malformed> {
        let b = self.text.as_bytes();
        let mut i = skip_ws(b, self.at);
        match b.get(i) {
            Some(b'}') => return Ok(None),
            Some(b',') if !self.first => i = skip_ws(b, i + 1),
            Some(b'"') if self.first => {}
            _ => return Err(Malformed),
        }
        self.first = false;
        if b.get(i) != Some(&b'"') {
            return Err(Malformed);
        }
        let (key_end, escaped) = string_end(b, i)?;
        let key = key(self.text, i, key_end, escaped)?;
        let colon = skip_ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return Err(Malformed);
        }
        let value_start = skip_ws(b, colon + 1);
        let value_end = value_end(b, value_start)?;
        self.at = value_end;
        Ok(Some((key, slice(self.text, value_start, value_end)?)))
    }
}

/// The key whose quoted text is `text[from..to]`, unescaped: borrowed unless
/// it has escapes.
fn key(text: &str, from: usize, to: usize, escaped: bool) -> Result<Cow<'_, str>, Malformed> {
    if escaped {
        serde_json::from_str::<String>(slice(text, from, to)?)
            .map(Cow::Owned)
            .map_err(|_| Malformed)
    } else {
        slice(text, from + 1, to - 1).map(Cow::Borrowed)
    }
}

fn slice(text: &str, from: usize, to: usize) -> Result<&str, Malformed> {
    text.get(from..to).ok_or(Malformed)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// With `b[i]` an opening quote: the index just past the closing one, and
/// whether the string has escapes.
fn string_end(b: &[u8], i: usize) -> Result<(usize, bool), Malformed> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j = plain_run_end(b, j);
        match b.get(j) {
            Some(b'"') => return Ok((j + 1, escaped)),
            // The escaped character is never the closing quote; `\uXXXX`'s
            // digits are plain characters.
            Some(b'\\') => {
                escaped = true;
                j += 2;
            }
            Some(_) => j += 1,
            None => return Err(Malformed),
        }
    }
}

/// From `j`, skips eight bytes at a time while none is a quote or a
/// backslash; the rest is left to the byte-by-byte loop.
fn plain_run_end(b: &[u8], mut j: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A high bit set where a byte of `x` is zero (exact for the lowest).
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(chunk) = b.get(j..j + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let hits =
            zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\')));
        if hits != 0 {
            return j + (hits.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    j
}

/// With a value starting at `b[i]`: the index just past it.
fn value_end(b: &[u8], i: usize) -> Result<usize, Malformed> {
    match b.get(i) {
        Some(b'"') => string_end(b, i).map(|(end, _)| end),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j) {
                    Some(b'"') => {
                        j = string_end(b, j)?.0;
                        continue;
                    }
                    Some(b'{' | b'[') => depth += 1,
                    Some(b'}' | b']') => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    Some(_) => {}
                    None => return Err(Malformed),
                }
                j += 1;
            }
        }
        Some(_) => {
            // A number, `true`, `false` or `null`: up to the next delimiter.
            let mut j = i;
            while !matches!(
                b.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            if j == i { Err(Malformed) } else { Ok(j) }
        }
        None => Err(Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Option<Vec<(String, String)>> {
        members(text)?
            .map(|m| m.map(|(k, v)| (k.into_owned(), v.to_owned())))
            .collect::<Result<_, _>>()
            .ok()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn yields_each_member_with_its_value_text() {
        let text =
            r#"{"a":1,"b":"x}\"]","c":{"d":[1,{"e":"]"}],"f":null},"g":[],"h":-2.5e3,"i":true}"#;
        assert_eq!(
            all(text),
            Some(pairs(&[
                ("a", "1"),
                ("b", r#""x}\"]""#),
                ("c", r#"{"d":[1,{"e":"]"}],"f":null}"#),
                ("g", "[]"),
                ("h", "-2.5e3"),
                ("i", "true"),
            ]))
        );
    }

    #[test]
    fn allows_whitespace_and_unescapes_keys() {
        let text = " {\n \"p\\u0072ops\" : { \"a\" : 1 } ,\t\"b\\\"\":[ 1 , 2 ] } ";
        assert_eq!(
            all(text),
            Some(pairs(&[("props", "{ \"a\" : 1 }"), ("b\"", "[ 1 , 2 ]")]))
        );
        assert_eq!(all("{}"), Some(vec![]));
        assert_eq!(all(" { } "), Some(vec![]));
    }

    #[test]
    fn a_value_that_is_not_an_object_has_no_members() {
        for text in ["[1]", "\"{\"", "1", "", "  "] {
            assert!(members(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn text_that_ends_early_or_is_not_members_is_malformed() {
        for text in [
            r#"{"a":1"#,
            r#"{"a":"x"#,
            r#"{"a":{"b":1}"#,
            r#"{"a":[1,2"#,
            r#"{"a""#,
            r#"{"a" 1}"#,
            r#"{"a":}"#,
            r#"{"a":1 "b":2}"#,
            r#"{,"a":1}"#,
            r#"{a:1}"#,
            "{\"a\":\"\\",
        ] {
            assert_eq!(all(text), None, "{text}");
        }
    }

    #[test]
    fn strings_end_at_their_closing_quote_wherever_it_falls() {
        // Escapes and quotes at every offset, across the eight-byte steps.
        for len in 0..40 {
            for at in 0..=len {
                let plain: Vec<char> = "abécdefgh".chars().cycle().take(len).collect();
                let value: String = plain[..at]
                    .iter()
                    .chain(r#"\"\\"#.chars().collect::<Vec<_>>().iter())
                    .chain(&plain[at..])
                    .collect();
                let text = format!(r#"{{"k{len}":"{value}","next":[{{"x":"{value}"}}]}}"#);
                let parsed: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&text).unwrap();
                let got = all(&text).unwrap();
                assert_eq!(got.len(), 2, "{text}");
                for (key, value) in got {
                    let expected = parsed.get(&key).unwrap();
                    let read: serde_json::Value = serde_json::from_str(&value).unwrap();
                    assert_eq!(&read, expected, "{text}");
                }
            }
        }
    }

    #[test]
    fn multibyte_text_is_never_split() {
        let text = r#"{"é":"ü\"ß","ñ":{"€":"😀"}}"#;
        assert_eq!(
            all(text),
            Some(pairs(&[("é", r#""ü\"ß""#), ("ñ", r#"{"€":"😀"}"#)]))
        );
        // A stray byte outside a string still ends a slice on a delimiter.
        assert!(all("{\"a\":é}").is_some());
    }
}
