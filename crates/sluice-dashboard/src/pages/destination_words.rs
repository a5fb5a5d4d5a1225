//! The destination form's error messages in the form's own words: the
//! admin API's message names a field by its JSON path, the form by its
//! label.

/// An admin API message as the form words it: the field path it starts
/// with becomes the field's label (`settings.urls[1].url: …` → `URL 2: …`,
/// `settings.urls[0].headers.X-A: …` → `Headers for URL 1, X-A: …`); the
/// reason stays the API's. A message without a known path is unchanged.
pub fn worded(message: &str) -> String {
    let Some((path, reason)) = message.split_once(": ") else {
        return message.to_owned();
    };
    let row = |rest: &str| -> Option<(usize, String)> {
        let i: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n = i.parse::<usize>().ok()?;
        let after = rest[i.len()..].strip_prefix(']')?;
        Some((n + 1, after.to_owned()))
    };
    let label = match path {
        "name" => "Name".to_owned(),
        "settings.urls" => "URLs".to_owned(),
        "settings.caBundle" => "CA certificates".to_owned(),
        "settings.standardWebhooks.rotationOverlapSeconds" => {
            "Old secret keeps signing for".to_owned()
        }
        p if p.starts_with("source_ids") => "Sources".to_owned(),
        p if p.starts_with("settings.sharedSecret") => "Shared secret".to_owned(),
        p if p.starts_with("settings.standardWebhooks") => "Standard Webhooks secret".to_owned(),
        p => match p.strip_prefix("settings.urls[").and_then(row) {
            Some((n, after)) => match after.strip_prefix(".headers") {
                Some("") => format!("Headers for URL {n}"),
                Some(name) => format!("Headers for URL {n}, {}", name.trim_start_matches('.')),
                None => format!("URL {n}"),
            },
            None => return message.to_owned(),
        },
    };
    format!("{label}: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_worded_as_the_form_labels_them() {
        let cases = [
            (
                "settings.urls[1].url: must use the http or https protocol",
                "URL 2: must use the http or https protocol",
            ),
            (
                "settings.urls[0].headers.X-Signature: is set by Sluice and cannot be overridden",
                "Headers for URL 1, X-Signature: is set by Sluice and cannot be overridden",
            ),
            (
                "settings.urls[4].headers: each line must be 'Name: value'",
                "Headers for URL 5: each line must be 'Name: value'",
            ),
            (
                "settings.urls: at most 5 webhook URLs are allowed, got 6",
                "URLs: at most 5 webhook URLs are allowed, got 6",
            ),
            (
                "settings.sharedSecret: too short",
                "Shared secret: too short",
            ),
            ("settings.caBundle: not PEM", "CA certificates: not PEM"),
            ("name: must not be empty", "Name: must not be empty"),
            ("Too long: the whole form", "Too long: the whole form"),
        ];
        for (api, shown) in cases {
            assert_eq!(worded(api), shown, "{api}");
        }
    }
}
