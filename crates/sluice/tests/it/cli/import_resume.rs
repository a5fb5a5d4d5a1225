//! `sluice import` killed with `kill -9` and resumed from a checkpoint that
//! trails what the server committed: the lines sent again are dropped by
//! the server's deduplication, so no line is stored twice.

use std::time::Duration;

use super::import::{LINES, done_lines, stored_in_db, write_input};
use super::{run, sluice, source};
use crate::process::start;

async fn wait_for_lines(checkpoint: &std::path::Path, lines: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while done_lines(checkpoint) < lines {
        assert!(
            tokio::time::Instant::now() < deadline,
            "import made no progress"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_killed_and_resumed_from_a_trailing_checkpoint_stores_each_line_once() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = server.base.clone();
    let (source_id, key) = source(&base, "import").await;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("events.jsonl.gz");
    let (expected, _) = write_input(&input);
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
        "--batch-lines",
        "2000",
        "--concurrency",
        "3",
        input.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let mut first = sluice(&base, &args).spawn().unwrap();
    // An old copy of the checkpoint stands for the worst a kill can leave:
    // every line after it was committed by the server but not recorded.
    wait_for_lines(&checkpoint, LINES / 20).await;
    let trailing = std::fs::read(&checkpoint).unwrap();
    wait_for_lines(&checkpoint, LINES / 5).await;
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let recorded = done_lines(&checkpoint);
    std::fs::write(&checkpoint, &trailing).unwrap();
    assert!(
        recorded - done_lines(&checkpoint) >= LINES / 10,
        "the resume re-sends committed lines ({recorded} recorded at the kill)"
    );

    let (code, _, stderr) = run(&base, &args).await;
    assert_eq!(
        code, 3,
        "finishes, with the input's rejected lines: {stderr}"
    );
    assert_eq!(done_lines(&checkpoint), LINES);
    let stored = stored_in_db(data.path(), &source_id);
    let twice: Vec<_> = stored.iter().filter(|(_, (n, _))| *n > 1).collect();
    assert!(
        twice.is_empty(),
        "{} stored twice, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(3)]
    );
    assert_eq!(stored.len(), expected.len(), "every good line, once");
}
