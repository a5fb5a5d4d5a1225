//! Repairs of raw JSON text that real clients send but strict parsers refuse.
//!
//! Browsers' `JSON.stringify` happily emits a lone UTF-16 surrogate escape
//! (`"\ud83d"`) when a string was cut in the middle of an emoji. serde_json
//! rejects such text, and PostgreSQL `jsonb` cannot store it either. Rejecting
//! the request would drop a whole batch for one broken character, so we
//! replace each lone surrogate escape with `\ufffd` (U+FFFD REPLACEMENT
//! CHARACTER) before parsing, exactly as a lossy UTF-16 decoder would.

use std::borrow::Cow;

/// Length in bytes of one `\uXXXX` escape.
const ESCAPE_LEN: usize = 6;
/// What a lone surrogate escape becomes. Same length as any `\uXXXX`
/// escape, so byte offsets and sizes measured on the input stay valid.
const REPLACEMENT: &[u8; ESCAPE_LEN] = b"\\ufffd";

/// Replaces every `\uD800`–`\uDFFF` escape (any hex case) that is not part of
/// a valid high+low surrogate pair with `\ufffd`.
///
/// Returns the input borrowed, without allocating, when there is nothing to
/// replace: a cheap pre-scan looks for `\u` followed by `d`/`D` and `8`–`f`,
/// and only when one exists is the text walked escape by escape. The walk
/// tracks escapes from their backslash, so `\\ud800` (an escaped backslash
/// followed by the text `ud800`) is left alone. The output always has the
/// same length as the input.
pub fn replace_lone_surrogates(json: &[u8]) -> Cow<'_, [u8]> {
    if !may_contain_surrogate_escape(json) {
        return Cow::Borrowed(json);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < json.len() {
        if json[i] != b'\\' {
            i += 1;
            continue;
        }
        // `json[i]` starts an escape; the escape is at least two bytes long,
        // so whatever follows the backslash never starts an escape itself.
        let Some(unit) = escape_unit(json, i) else {
            i += 2;
            continue;
        };
        if is_high(unit) && escape_unit(json, i + ESCAPE_LEN).is_some_and(is_low) {
            i += 2 * ESCAPE_LEN;
        } else if is_high(unit) || is_low(unit) {
            let buf = out.get_or_insert_with(|| json.to_vec());
            buf[i..i + ESCAPE_LEN].copy_from_slice(REPLACEMENT);
            i += ESCAPE_LEN;
        } else {
            i += ESCAPE_LEN;
        }
    }
    match out {
        Some(buf) => Cow::Owned(buf),
        None => Cow::Borrowed(json),
    }
}

/// Whether `json` has any `\u` followed by `d`/`D` and `8`–`f`: a superset
/// of the escapes that might need replacing (it ignores backslash parity).
fn may_contain_surrogate_escape(json: &[u8]) -> bool {
    json.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && (w[2] | 0x20) == b'd'
            && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

/// The UTF-16 code unit of the `\uXXXX` escape starting at `at`, if there is
/// a well-formed one there.
fn escape_unit(json: &[u8], at: usize) -> Option<u16> {
    let esc = json.get(at..at.checked_add(ESCAPE_LEN)?)?;
    if esc[0] != b'\\' || esc[1] != b'u' {
        return None;
    }
    esc[2..]
        .iter()
        .try_fold(0u16, |acc, &b| Some(acc << 4 | hex_value(b)?))
}

fn hex_value(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some(u16::from(b - b'0')),
        b'a'..=b'f' => Some(u16::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(b - b'A' + 10)),
        _ => None,
    }
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(input: &str) -> String {
        String::from_utf8(replace_lone_surrogates(input.as_bytes()).into_owned())
            .unwrap_or_default()
    }

    #[test]
    fn text_without_escapes_is_borrowed() {
        let input = br#"{"a":"plain text \u00e9 \n"}"#;
        assert!(matches!(replace_lone_surrogates(input), Cow::Borrowed(_)));
    }

    #[test]
    fn valid_pair_is_untouched_and_borrowed() {
        let input = r#"{"e":"\ud83d\ude00 and \uD83D\uDE00"}"#;
        let out = replace_lone_surrogates(input.as_bytes());
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(out.as_ref(), input.as_bytes());
        let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(parsed["e"], "😀 and 😀");
    }

    #[test]
    fn lone_high_surrogate_is_replaced() {
        assert_eq!(fixed(r#"["a\ud83db"]"#), r#"["a\ufffdb"]"#);
    }

    #[test]
    fn lone_low_surrogate_is_replaced_in_any_case() {
        assert_eq!(fixed(r#"["\uDE00","\uDe00"]"#), r#"["\ufffd","\ufffd"]"#);
    }

    #[test]
    fn high_surrogate_at_end_of_string_is_replaced() {
        assert_eq!(fixed(r#"{"t":"cut\uD83D"}"#), r#"{"t":"cut\ufffd"}"#);
    }

    #[test]
    fn high_surrogate_at_end_of_input_is_replaced() {
        assert_eq!(fixed(r"\ud800"), r"\ufffd");
    }

    #[test]
    fn high_followed_by_high_then_low_keeps_the_pair() {
        assert_eq!(
            fixed(r#"["\ud800\ud83d\ude00"]"#),
            r#"["\ufffd\ud83d\ude00"]"#
        );
    }

    #[test]
    fn low_before_high_are_both_replaced() {
        assert_eq!(fixed(r#"["\ude00\ud83d"]"#), r#"["\ufffd\ufffd"]"#);
    }

    #[test]
    fn high_followed_by_non_surrogate_escape_is_replaced() {
        assert_eq!(fixed(r#"["\ud83d\u0041"]"#), r#"["\ufffd\u0041"]"#);
    }

    #[test]
    fn escaped_backslash_before_u_is_not_an_escape() {
        let input = r#"["\\ud800","\\\\uDC00"]"#;
        let out = replace_lone_surrogates(input.as_bytes());
        assert_eq!(out.as_ref(), input.as_bytes());
        assert!(matches!(out, Cow::Borrowed(_)));
    }

    #[test]
    fn odd_backslash_run_before_surrogate_is_an_escape() {
        assert_eq!(fixed(r#"["\\\ud800"]"#), r#"["\\\ufffd"]"#);
    }

    #[test]
    fn escaped_backslash_between_pair_halves_breaks_the_pair() {
        assert_eq!(fixed(r#"["\ud83d\\ude00"]"#), r#"["\ufffd\\ude00"]"#);
    }

    #[test]
    fn truncated_escape_is_left_for_the_parser() {
        assert_eq!(fixed(r#"["\ud8"#), r#"["\ud8"#);
    }

    #[test]
    fn repaired_text_parses_with_replacement_character() {
        let out = replace_lone_surrogates(br#"{"t":"x\ud800y"}"#);
        let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(parsed["t"], "x\u{fffd}y");
    }

    #[test]
    fn output_length_equals_input_length() {
        let input = r#"["\ud800\udc00\ud800x\udfff\\ud800"]"#;
        assert_eq!(fixed(input).len(), input.len());
    }
}
