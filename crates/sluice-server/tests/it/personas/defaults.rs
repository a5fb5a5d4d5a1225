//! What the documentation says of the engine's settings matches the code.

use sluice_server::config::PersonasConfig;

/// Each number written within a few words after a mention of `setting` in
/// the files under docs/, with the file it is in.
fn documented_numbers(setting: &str) -> Vec<(String, u64)> {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&docs).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        for (at, _) in text.match_indices(setting) {
            // `max_batch_events` is another setting.
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let after: String = text[at + setting.len()..].chars().take(40).collect();
            let digits: String = after
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse() {
                found.push((path.display().to_string(), n));
            }
        }
    }
    found
}

#[test]
fn every_documented_default_of_batch_events_is_the_one_in_the_code() {
    let default = u64::from(PersonasConfig::default().batch_events);
    let found = documented_numbers("batch_events`");
    assert!(found.len() >= 3, "{found:?}");
    let wrong: Vec<_> = found.iter().filter(|(_, n)| *n != default).collect();
    assert!(wrong.is_empty(), "default is {default}: {wrong:?}");
}
