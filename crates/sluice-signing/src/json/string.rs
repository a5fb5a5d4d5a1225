//! String literals as `JSON.stringify` writes them (`QuoteJSONString`).
//!
//! Only `"`, `\` and U+0000–U+001F are escaped; `/`, DEL, U+2028/U+2029 and
//! all other non-ASCII text pass through as UTF-8. Lone surrogates, which
//! JavaScript would escape as `\udxxx`, cannot occur in a Rust `str`.

use super::Sink;

/// The escape for an ASCII byte that needs one, if any.
///
/// The five short forms are the ones ECMAScript uses; every other control
/// character becomes `\u00xx` with lowercase hex digits.
fn escape(byte: u8) -> Option<&'static str> {
    const CONTROL: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011",
        "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019",
        "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    ];
    match byte {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0x00..=0x1f => CONTROL.get(usize::from(byte)).copied(),
        _ => None,
    }
}

/// Writes `s` as a quoted JSON string, copying unescaped runs in one piece.
///
/// Scanning bytes is safe for UTF-8: every byte that needs escaping is ASCII,
/// and ASCII bytes never occur inside a multi-byte sequence, so each split
/// point is a char boundary.
pub(super) fn write_quoted<S: Sink>(s: &str, out: &mut S) {
    out.put("\"");
    let mut start = 0;
    for (i, &byte) in s.as_bytes().iter().enumerate() {
        if let Some(esc) = escape(byte) {
            if start < i {
                out.put(&s[start..i]);
            }
            out.put(esc);
            start = i + 1;
        }
    }
    if start < s.len() {
        out.put(&s[start..]);
    }
    out.put("\"");
}
