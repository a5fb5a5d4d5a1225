//! Where to go after sign-in: only a path of this dashboard.

use percent_encoding::percent_decode_str;
use url::Url;

/// Where to go after sign-in: `next` when it is a path (and query) of this
/// dashboard, otherwise `/`. Anything else could send a signed-in user to
/// another site (an open redirect).
pub fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n) if is_local_path(n) => n,
        _ => "/",
    }
}

/// A same-origin relative path: one `/`, then visible ASCII only, no `#`,
/// and no `\` before the query. Browsers drop tabs and newlines from a URL
/// and read `\` in a path as `/`, so `/\t/evil.example` would become the
/// scheme-relative `//evil.example`; refusing every control character,
/// space and path backslash leaves nothing for them to rewrite (a query's
/// `\` stays a `\`: `/profiles?id=CORP\alice`). The path is checked again
/// percent-decoded (for a proxy that decodes it) and resolved as a browser
/// resolves it (WHATWG URL), which must stay on this origin and not start
/// with `//`.
fn is_local_path(n: &str) -> bool {
    let plain = |s: &str| {
        s.starts_with('/')
            && !s[1..].starts_with(['/', '\\'])
            && !s.contains('\\')
            && !s.chars().any(|c| c.is_control() || c.is_whitespace())
    };
    let path = n.split('?').next().unwrap_or("");
    if !plain(path) || !n.chars().all(|c| c.is_ascii_graphic() && c != '#') {
        return false;
    }
    if !plain(&percent_decode_str(path).decode_utf8_lossy()) {
        return false;
    }
    let Ok(base) = Url::parse("http://dashboard.invalid/") else {
        return false;
    };
    base.join(n)
        .is_ok_and(|u| u.origin() == base.origin() && !u.path().starts_with("//"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_refuses_every_way_off_this_origin() {
        for hostile in [
            "",
            "evil.example",
            "https://evil.example/x",
            "http:evil.example",
            "javascript:alert(1)",
            "//evil.example/x",
            "///evil.example",
            "/\\evil.example",
            "\\/evil.example",
            "/\\/evil.example",
            // What a browser strips or reads as `/`.
            "/\t/evil.example/x",
            "/\n/evil.example/x",
            "/\r/evil.example/x",
            "/\r\n/evil.example",
            "\t//evil.example",
            " //evil.example",
            "/ /evil.example",
            "/\u{0}/evil.example",
            "/\u{7f}/evil.example",
            "/\u{a0}/evil.example",
            "/\u{2028}/evil.example",
            "/\u{ff0f}evil.example",
            // Percent-encoded, for a proxy that decodes the path once.
            "/%09/evil.example",
            "/%2F/evil.example",
            "/%2fevil.example",
            "/%5Cevil.example",
            "/%0a/evil.example",
            // Resolved by the browser to a path starting with `//`.
            "/..//evil.example",
            "/.//evil.example",
            "/a/../..//evil.example",
            // Not a plain path and query.
            "/sources#frag",
            "?next=/",
        ] {
            assert_eq!(safe_next(Some(hostile)), "/", "{hostile:?}");
        }
        assert_eq!(safe_next(None), "/");
    }

    #[test]
    fn next_keeps_the_dashboards_own_paths() {
        for good in [
            "/",
            "/sources",
            "/sources/src_abc123/schema?kind=track&sort=name",
            "/profiles?id=a%2Fb%20c&before=12",
            "/profiles?id=%C3%A9",
            "/usage?source=src_x",
            "/destinations/dst_x/deliveries?state=failed",
            "/sources/%FF",
            "/a/b/../c",
            "/profiles?id=CORP\\alice",
        ] {
            assert_eq!(safe_next(Some(good)), good, "{good:?}");
        }
    }
}
