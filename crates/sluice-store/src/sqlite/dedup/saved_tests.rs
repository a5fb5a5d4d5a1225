use std::time::Duration;

use super::saved::{self, decode, encode};
use super::tests::{HOUR, day_window, insert, store};
use super::{restore, save};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A window of `n` ids over ten hours, committed.
fn filled(n: i64) -> super::Window {
    let mut w = day_window();
    for i in 0..n {
        w.insert(
            w.key("src", &format!("m-{i}")),
            10 * HOUR + i * 10 * HOUR / n,
            i,
        );
    }
    w.commit();
    w
}

#[test]
fn a_saved_window_reads_back_with_the_same_ids_generations_and_keys() {
    let w = filled(30_000);
    let mut bytes = Vec::new();
    encode(&mut bytes, &w, 29_999, 77).unwrap();
    let back = decode(bytes.as_slice(), DAY).unwrap().expect("a window");
    assert_eq!((back.seq, back.check), (29_999, 77));
    let r = back.window;
    assert_eq!((r.len(), r.tables()), (w.len(), w.tables()));
    assert_eq!(r.key("src", "m-5"), w.key("src", "m-5"));
    for i in (0..30_000).step_by(97) {
        let key = w.key("src", &format!("m-{i}"));
        assert_eq!(r.seqs_of(key), w.seqs_of(key), "m-{i}");
    }
    assert_eq!(r.seqs_of(w.key("src", "never")), None);
    // It goes on as the one saved: new ids, expiry.
    let mut r = r;
    r.insert(r.key("src", "new"), 20 * HOUR, 30_000);
    assert!(r.seqs_of(r.key("src", "new")).is_some());
    r.expire(10 * HOUR + 25 * HOUR);
    assert!(r.seqs_of(w.key("src", "m-0")).is_none());
}

#[test]
fn a_damaged_or_foreign_saved_window_is_refused() {
    let w = filled(2_000);
    let mut bytes = Vec::new();
    encode(&mut bytes, &w, 1, 2).unwrap();
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    assert!(decode(flipped.as_slice(), DAY).unwrap().is_none());
    let hour = Duration::from_secs(3600);
    assert!(
        decode(bytes.as_slice(), hour).unwrap().is_none(),
        "another span"
    );
    let short = &bytes[..bytes.len() - 3];
    assert!(decode(short, DAY).is_err(), "cut short");
    assert!(decode(&b"SQLite format 3\0"[..], DAY).unwrap().is_none());
}

#[test]
fn a_cut_short_file_is_removed_and_counts_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w");
    let w = filled(2_000);
    saved::write(&path, &w, 1, 2).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    assert!(saved::take(&path, DAY).is_none());
    assert!(!path.exists());
}

#[test]
fn restore_loads_the_saved_window_and_reads_only_the_events_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sluice.db");
    let conn = store();
    let now = 30 * HOUR;
    for i in 0..100 {
        insert(&conn, "src", &format!("m-{i}"), now - HOUR);
    }
    let w = restore(&conn, &db, DAY, now).unwrap();
    assert_eq!(w.len(), 100);
    // An event the window never saw, at the seq it is saved at: loading
    // the saved window leaves it out, where a rebuild would read it.
    insert(&conn, "src", "unseen", now - HOUR);
    save(&conn, &db, &w).unwrap();
    assert!(saved::path_for(&db).exists());
    insert(&conn, "src", "after", now - HOUR);

    let loaded = restore(&conn, &db, DAY, now).unwrap();
    assert!(!saved::path_for(&db).exists(), "used once");
    assert_eq!(loaded.len(), 101);
    assert!(loaded.seqs_of(loaded.key("src", "after")).is_some());
    assert!(loaded.seqs_of(loaded.key("src", "unseen")).is_none());
    assert!(loaded.seqs_of(loaded.key("src", "m-42")).is_some());
}

#[test]
fn a_saved_window_of_another_database_is_rebuilt_from_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sluice.db");
    let now = 30 * HOUR;
    let first = store();
    insert(&first, "src", "a", now - HOUR);
    let w = restore(&first, &db, DAY, now).unwrap();
    save(&first, &db, &w).unwrap();
    // Another database under the same name: its event at that seq differs.
    let second = store();
    insert(&second, "src", "b", now - HOUR);
    insert(&second, "src", "c", now - HOUR);
    let rebuilt = restore(&second, &db, DAY, now).unwrap();
    assert_eq!(rebuilt.len(), 2);
    assert!(rebuilt.seqs_of(rebuilt.key("src", "b")).is_some());
    assert!(rebuilt.seqs_of(rebuilt.key("src", "a")).is_none());
}
