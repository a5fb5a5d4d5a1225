//! Keys of computed traits and audiences: the name a value is sent under
//! (`traits.<key>`), derived from the definition's name unless given.
//!
//! The derivation follows the common snake_case implementations (lodash's
//! `snakeCase`, Python's `inflection.underscore` after its
//! `transliterate`), so a key is what a user who knows them expects:
//! - accents are folded, not dropped: each character is decomposed
//!   (Unicode compatibility decomposition, as `inflection.transliterate`
//!   does) and what is not ASCII afterwards (the accents) is left out:
//!   `Käufer über 18` → `kaufer_uber_18`. The few Latin letters that have
//!   no decomposition, being letters of their own rather than letters
//!   with a mark (`ß`, `æ`, `ø`, `ł`…), are spelled out as lodash's
//!   `deburr` spells them (`Straße` → `strasse`);
//! - words are runs of letters and digits; a lower-case letter or digit
//!   followed by an upper-case letter starts a word (`ordersCount` →
//!   `orders_count`), and so does the last capital of a run of capitals
//!   followed by a lower-case letter (`HTTPServer` → `http_server`); a
//!   digit stays with the letters before it (`V2 Users` → `v2_users`, as
//!   `inflection` does; lodash would write `v_2_users`);
//! - apostrophes join (`Don't Email` → `dont_email`, as lodash); any other
//!   character, and letters of scripts without a Latin spelling, separate.
//!
//! Case is read from the character before folding, so `ÆTHER` and `Æther`
//! are one word each (`aether`).

use unicode_normalization::char::{decompose_compatible, is_combining_mark};

/// The longest key.
pub const MAX_KEY_CHARS: usize = 100;

/// Why a name gives no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No letter or digit with a Latin spelling, or a digit first.
    #[error("must start with a letter to derive a key (or give `key`)")]
    NoLetterFirst,
    /// The derived key is longer than [`MAX_KEY_CHARS`].
    #[error(
        "gives a key of {0} characters, over the {MAX_KEY_CHARS} a key may have: \
         give a shorter `key`"
    )]
    TooLong(usize),
}

/// The snake_case key of a name, checked: what a definition created without
/// `key` is sent under.
pub fn derive_key(name: &str) -> Result<String, KeyError> {
    let key = snake_case(name);
    if !key.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(KeyError::NoLetterFirst);
    }
    if key.len() > MAX_KEY_CHARS {
        return Err(KeyError::TooLong(key.len()));
    }
    Ok(key)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
}

/// The snake_case form of a name (see the module docs); possibly empty or
/// starting with a digit.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<(char, String)> = name
        .chars()
        .filter(|c| !is_combining_mark(*c) && !matches!(c, '\'' | '\u{2019}'))
        .map(|c| (c, fold(c)))
        .collect();
    let class = |i: usize| -> Option<Class> {
        let (c, f) = chars.get(i)?;
        Some(if f.is_empty() {
            return None;
        } else if c.is_uppercase() {
            Class::Upper
        } else if f.bytes().all(|b| b.is_ascii_digit()) {
            Class::Digit
        } else {
            Class::Lower
        })
    };
    let mut out = String::new();
    for (i, (_, folded)) in chars.iter().enumerate() {
        let Some(cur) = class(i) else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            continue;
        };
        let prev = i.checked_sub(1).and_then(class);
        let boundary = match (prev, cur) {
            (Some(Class::Lower | Class::Digit), Class::Upper) => true,
            (Some(Class::Upper), Class::Upper) => class(i + 1) == Some(Class::Lower),
            _ => false,
        };
        if boundary && !out.ends_with('_') {
            out.push('_');
        }
        out.push_str(&folded.to_ascii_lowercase());
    }
    out.trim_end_matches('_').to_owned()
}

/// The ASCII letters and digits a character is written with (see the
/// module docs); empty for punctuation and for scripts without a Latin
/// spelling.
fn fold(c: char) -> String {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() {
            c.to_string()
        } else {
            String::new()
        };
    }
    if let Some(spelled) = spelled_out(c) {
        return spelled.to_owned();
    }
    let mut out = String::new();
    decompose_compatible(c, |d| {
        if d.is_ascii_alphanumeric() {
            out.push(d);
        }
    });
    out
}

/// Latin letters without a decomposition, spelled as lodash's `deburr`.
fn spelled_out(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'æ' => "ae",
        'Æ' => "Ae",
        'œ' => "oe",
        'Œ' => "Oe",
        'ø' => "o",
        'Ø' => "O",
        'đ' | 'ð' => "d",
        'Đ' | 'Ð' => "D",
        'þ' => "th",
        'Þ' => "Th",
        'ł' => "l",
        'Ł' => "L",
        'ı' => "i",
        'ħ' => "h",
        'Ħ' => "H",
        _ => return None,
    })
}

/// Whether `key` is already snake_case (what a given key must be).
pub fn is_snake_case(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_CHARS
        && key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
#[path = "key_tests.rs"]
mod tests;
