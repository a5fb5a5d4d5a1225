//! `sqlite::backup`: an online copy that holds whole commits only, reopens
//! as a store, is private, and never replaces a file.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sluice_store::EventStore;
use sluice_store::sqlite::{BackupError, backup};
use sluice_store::{SqliteConfig, SqliteStore};

use crate::sqlite::{db_path, fresh, request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_appends_commit_reopens_with_whole_appends_only() {
    let (dir, store) = fresh().await;
    let store = Arc::new(store);
    let appended = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, appended, stop) = (store.clone(), appended.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = appended.load(Ordering::Relaxed);
                let ids: Vec<String> = (0..10).map(|i| format!("a{n}-{i}")).collect();
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                store.append(request("src_1", &ids)).await.expect("append");
                appended.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    while appended.load(Ordering::Relaxed) < 20 {
        tokio::task::yield_now().await;
    }
    let before = appended.load(Ordering::Relaxed);
    let out = dir.path().join("backups/first.db");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("dir");
    let (db, target) = (db_path(&dir), out.clone());
    let report = tokio::task::spawn_blocking(move || backup(&db, &target))
        .await
        .expect("join")
        .expect("backup");
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("writer");
    assert!(appended.load(Ordering::Relaxed) > before, "appends went on");
    assert_eq!(report.bytes, std::fs::metadata(&out).expect("stat").len());
    assert!(report.schema_version > 0);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "it holds secrets");
    }
    let names: Vec<_> = std::fs::read_dir(out.parent().expect("parent"))
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["first.db"], "no partial file is left");

    let copy = SqliteStore::open(SqliteConfig::new(out.clone()))
        .await
        .expect("the copy opens as a store");
    let events = copy
        .recent_events("src_1", None, 100_000)
        .await
        .expect("events");
    assert!(
        events.len() >= before * 10,
        "{} < {}",
        events.len(),
        before * 10
    );
    assert_eq!(events.len() % 10, 0, "only whole appends: {}", events.len());
    copy.close().await;
}

#[tokio::test]
async fn a_backup_never_replaces_a_file_and_names_a_missing_database() {
    let (dir, store) = fresh().await;
    store
        .append(request("src_1", &["m1"]))
        .await
        .expect("append");
    let out = dir.path().join("taken.db");
    std::fs::write(&out, b"precious").expect("write");
    let err = backup(&db_path(&dir), &out).expect_err("exists");
    assert!(matches!(err, BackupError::Exists(_)), "{err}");
    assert_eq!(std::fs::read(&out).expect("read"), b"precious");

    let err =
        backup(&dir.path().join("nope/sluice.db"), &dir.path().join("b.db")).expect_err("missing");
    assert_eq!(
        err.to_string(),
        format!(
            "no Sluice database at {}",
            dir.path().join("nope/sluice.db").display()
        )
    );
    assert!(!dir.path().join("b.db").exists());
}
