//! `sluice import`: 100,000 lines, interrupted with SIGINT and resumed,
//! land exactly once; rejected lines are reported with the server's message.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{run, sluice, source};
use crate::process::{all_events, start};

pub(super) const LINES: u64 = 100_000;
const NOT_JSON_LINE: u64 = 12_345;

/// Every 20,000th line lacks `event` (the server refuses it); one line is
/// not JSON (refused before sending); line 3 is blank.
pub(super) fn write_input(path: &Path) -> (HashMap<String, String>, Vec<u64>) {
    let file = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut expected = HashMap::new();
    let mut rejected = Vec::new();
    for i in 1..=LINES {
        let ts = format!("2015-01-01T00:00:{:02}.{:03}Z", i % 60, i % 1000);
        let line = if i == 3 {
            String::new()
        } else if i == NOT_JSON_LINE {
            rejected.push(i);
            "this is not json".to_owned()
        } else if i % 20_000 == 0 {
            rejected.push(i);
            format!(r#"{{"type":"track","userId":"u{i}","messageId":"bad-{i}"}}"#)
        } else {
            expected.insert(format!("imp-{i}"), ts.clone());
            format!(
                r#"{{"type":"track","userId":"u{i}","event":"Imported","messageId":"imp-{i}","timestamp":"{ts}"}}"#
            )
        };
        writeln!(gz, "{line}").unwrap();
    }
    gz.finish().unwrap();
    (expected, rejected)
}

pub(super) fn done_lines(checkpoint: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(checkpoint) else {
        return 0;
    };
    let Ok(cp) = serde_json::from_str::<Value>(&text) else {
        return 0;
    };
    cp["inputs"][0]["done"]
        .as_array()
        .map(|ranges| {
            ranges
                .iter()
                .map(|r| r[1].as_u64().unwrap() - r[0].as_u64().unwrap() + 1)
                .sum()
        })
        .unwrap_or(0)
}

/// Every stored event's messageId (with how often it is stored) and timestamp.
async fn stored(base: &str, source_id: &str) -> HashMap<String, (u32, String)> {
    let mut seen: HashMap<String, (u32, String)> = HashMap::new();
    for row in all_events(base, source_id).await {
        let id = row["message_id"].as_str().unwrap_or_default().to_owned();
        let ts = row["event"]["timestamp"].as_str().unwrap_or("").to_owned();
        seen.entry(id).or_insert((0, ts)).0 += 1;
    }
    seen
}

/// The same, read from the server's SQLite file (opened read-only beside
/// the running server): paging 100,000 events through the debugger takes
/// about a minute in a debug build.
pub(super) fn stored_in_db(data_dir: &Path, source_id: &str) -> HashMap<String, (u32, String)> {
    let db = rusqlite::Connection::open_with_flags(
        data_dir.join("sluice.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    sluice_store::sqlite::register_functions(&db).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT message_id, COUNT(*), MIN(json_extract(body_json(body), '$.timestamp'))
             FROM events WHERE source_id = ?1 GROUP BY message_id",
        )
        .unwrap();
    stmt.query_map([source_id], |row| {
        Ok((row.get::<_, String>(0)?, (row.get(1)?, row.get(2)?)))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_interrupted_by_sigint_and_resumed_lands_every_line_exactly_once() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = server.base.clone();
    let (source_id, key) = source(&base, "import").await;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("events.jsonl.gz");
    let (expected, rejected_lines) = write_input(&input);
    let checkpoint = work.path().join("import.checkpoint");
    let rejects = work.path().join("rejects.jsonl");
    let args: Vec<String> = [
        "import",
        "--write-key",
        &key,
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--rejects",
        rejects.to_str().unwrap(),
        // Smaller batches than the default 2500, so that the interruption
        // lands mid-way with room to spare.
        "--batch-lines",
        "2000",
        "--concurrency",
        "3",
        input.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // First run: SIGINT once a tenth of the lines are recorded.
    let first = sluice(&base, &args).spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while done_lines(&checkpoint) < LINES / 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "import made no progress"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = first.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let out = tokio::time::timeout(Duration::from_secs(60), first.wait_with_output())
        .await
        .expect("exits after SIGINT")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("rerun the same command to resume"),
        "{stderr}"
    );
    let after_first = done_lines(&checkpoint);
    assert!(
        after_first < LINES - 1,
        "the interruption must leave lines to send (recorded {after_first})"
    );

    // Second run: the same command finishes; some lines were rejected.
    let (code, _, stderr) = run(&base, &args).await;
    assert_eq!(code, 3, "exit code says lines were rejected: {stderr}");
    assert_eq!(done_lines(&checkpoint), LINES);

    // Each good line is stored exactly once, with its own timestamp.
    let stored = stored_in_db(data.path(), &source_id);
    let duplicates: Vec<_> = stored.iter().filter(|(_, (n, _))| *n > 1).collect();
    assert!(
        duplicates.is_empty(),
        "stored twice: {:?}",
        &duplicates[..duplicates.len().min(5)]
    );
    assert_eq!(
        stored.len(),
        expected.len(),
        "every good line, nothing else"
    );
    for (id, ts) in &expected {
        let (_, got) = stored.get(id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(got, ts, "{id} keeps its timestamp");
    }

    // Every rejected line is in the reject file once, with the server's
    // message (without the batch index, which means nothing to the user).
    let text = std::fs::read_to_string(&rejects).unwrap();
    let mut records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    records.sort_by_key(|r| r["line"].as_u64());
    let lines: Vec<u64> = records
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, rejected_lines);
    for r in &records {
        if r["line"] == NOT_JSON_LINE {
            assert_eq!(r["code"], "invalid_json");
            assert_eq!(r["text"], "this is not json");
        } else {
            assert_eq!(r["code"], "missing_field", "{r}");
            assert_eq!(r["message"], "track requires 'event'", "{r}");
        }
    }

    // A third run has nothing left to send.
    let (code, _, stderr) = run(&base, &args).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("0 lines imported, 0 rejected"), "{stderr}");
}

#[tokio::test]
async fn import_reads_stdin_and_fails_with_the_servers_message_on_a_wrong_key() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("one.jsonl");
    std::fs::write(
        &input,
        "{\"type\":\"track\",\"userId\":\"u\",\"event\":\"E\"}\n",
    )
    .unwrap();
    let checkpoint = work.path().join("cp");
    let (code, _, stderr) = run(
        &server.base,
        &[
            "import",
            "--write-key",
            "not-a-key",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
            input.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("invalid write key"), "{stderr}");
    assert_eq!(done_lines(&checkpoint), 0, "nothing recorded as done");

    let (source_id, key) = source(&server.base, "stdin").await;
    let mut child = sluice(&server.base, &["import", "--write-key", &key, "-"])
        .current_dir(work.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(
        &mut stdin,
        b"{\"type\":\"identify\",\"userId\":\"s1\",\"messageId\":\"from-stdin\"}\n",
    )
    .await
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = stored(&server.base, &source_id).await;
    assert_eq!(stored.keys().collect::<Vec<_>>(), ["from-stdin"]);
}

/// A server with a batch limit below the command's: its `400
/// body_too_large` names no line, so the command splits batches until they
/// fit, and every line lands without a reject.
#[tokio::test]
async fn import_splits_batches_a_stricter_server_refuses_and_loses_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = start(
        data.path(),
        &[
            ("SLUICE_LIMITS__MAX_BATCH_BYTES", "2000"),
            ("SLUICE_LIMITS__MAX_CALL_BYTES", "2000"),
        ],
    )
    .await;
    let (source_id, key) = source(&server.base, "strict").await;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("small.jsonl");
    let text: String = (1..=60)
        .map(|i| format!("{{\"type\":\"track\",\"userId\":\"u{i}\",\"event\":\"E\",\"messageId\":\"s-{i}\"}}\n"))
        .collect();
    std::fs::write(&input, text).unwrap();
    let (code, _, stderr) = run(
        &server.base,
        &[
            "import",
            "--write-key",
            &key,
            "--checkpoint",
            work.path().join("cp").to_str().unwrap(),
            "--rejects",
            work.path().join("rejects").to_str().unwrap(),
            input.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("60 lines imported, 0 rejected"), "{stderr}");
    assert!(!work.path().join("rejects").exists());
    let stored = stored(&server.base, &source_id).await;
    assert_eq!(stored.len(), 60);
    assert!(stored.values().all(|(n, _)| *n == 1));
}
