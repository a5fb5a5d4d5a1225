//! `sluice import`'s progress output, by where standard error goes.

use super::{run, source};
use crate::process::start;

/// Progress: a bar with ETA when standard error is a terminal (run under
/// `script`, which gives the command a pseudo-terminal), plain periodic
/// lines when it is not, and neither with `--quiet`.
#[tokio::test]
async fn import_progress_is_a_bar_on_a_terminal_and_plain_lines_otherwise() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = server.base.clone();
    let (_, key) = source(&base, "progress").await;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("events.jsonl");
    let mut text = String::new();
    for i in 0..6000 {
        text.push_str(&format!(
            "{{\"type\":\"track\",\"userId\":\"u\",\"event\":\"E\",\"messageId\":\"p-{i}\"}}\n"
        ));
    }
    std::fs::write(&input, text).unwrap();
    let args = |run: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "import",
            "--write-key",
            &key,
            "--checkpoint",
            work.path()
                .join(format!("{run}.checkpoint"))
                .to_str()
                .unwrap(),
            "--rejects",
            work.path().join(format!("{run}.rejects")).to_str().unwrap(),
            "--batch-lines",
            "100",
            "--concurrency",
            "1",
            "--progress-every-ms",
            "1",
        ]
        .map(str::to_owned)
        .to_vec();
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v.push(input.to_str().unwrap().to_owned());
        v
    };

    // Not a terminal: plain lines, then the summary.
    let plain = args("plain", &[]);
    let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
    let (code, _, stderr) = run(&base, &plain).await;
    assert_eq!(code, 0, "{stderr}");
    let lines = stderr
        .lines()
        .filter(|l| l.starts_with("import: ") && l.contains("% of input)"))
        .count();
    assert!(lines >= 2, "periodic lines expected:\n{stderr}");
    assert!(!stderr.contains("ETA"), "{stderr}");

    // --quiet: the summary alone.
    let quiet = args("quiet", &["--quiet"]);
    let quiet: Vec<&str> = quiet.iter().map(String::as_str).collect();
    let (code, _, stderr) = run(&base, &quiet).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("% of input)"), "{stderr}");

    // A terminal: the bar, drawn with its ETA (its frames stay in the
    // captured output even though it is cleared at the end).
    let bar = args("bar", &["--fresh"]);
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_sluice").to_owned())
        .chain(bar)
        .map(|a| format!("'{a}'"))
        .collect();
    let out = tokio::process::Command::new("script")
        .args(["-qefc", &quoted.join(" "), "/dev/null"])
        .env("SLUICE_URL", &base)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("script");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("ETA"), "no bar drawn:\n{shown}");
    assert!(!shown.contains("% of input)"), "{shown}");
}
