use rusqlite::{Connection, params};

use super::{dirty_pages, page, rewrite};

fn user(u: u64) -> String {
    format!("zq-subject-{u:04}-x")
}

/// Random inserts, updates and deletes of rows of varied sizes under
/// `secure_delete`, then the deletion of every fourth user: what SQLite's
/// page rebuilds leave behind.
fn churned(path: &std::path::Path) -> (Connection, Vec<String>) {
    let c = Connection::open(path).unwrap();
    c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .unwrap();
    c.execute_batch(
        "PRAGMA secure_delete = ON;
         CREATE TABLE kv (k TEXT PRIMARY KEY, user TEXT, doc TEXT) WITHOUT ROWID;
         CREATE INDEX kv_user ON kv (user);",
    )
    .unwrap();
    let mut x: u64 = 12_345;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20 {
        c.execute_batch("BEGIN").unwrap();
        for _ in 0..2_000 {
            let id = user(next() % 400);
            let key = format!("{:016x}", next() % 20_000);
            let pad = "p".repeat((next() % 1_200) as usize);
            if next() % 3 == 0 {
                c.execute("DELETE FROM kv WHERE k = ?1", [&key]).unwrap();
            } else {
                c.execute(
                    "INSERT INTO kv VALUES (?1, ?2, ?3)
                     ON CONFLICT (k) DO UPDATE SET user = excluded.user, doc = excluded.doc",
                    params![key, id, format!("{{\"u\":\"{id}\",\"pad\":\"{pad}\"}}")],
                )
                .unwrap();
            }
        }
        c.execute_batch("COMMIT").unwrap();
    }
    let purged: Vec<String> = (0..400).step_by(4).map(user).collect();
    for id in &purged {
        c.execute("DELETE FROM kv WHERE user = ?1", [id]).unwrap();
    }
    (c, purged)
}

fn left_in_files(path: &std::path::Path, ids: &[String]) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
    let len = user(0).len();
    let found: std::collections::HashSet<&[u8]> = (0..bytes.len().saturating_sub(len))
        .filter(|&i| bytes[i..].starts_with(b"zq-subject-"))
        .map(|i| &bytes[i..i + len])
        .collect();
    ids.iter()
        .filter(|id| found.contains(id.as_bytes()))
        .count()
}

#[test]
fn deleted_rows_left_in_rebuilt_pages_are_zeroed_and_the_database_stays_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let (c, purged) = churned(&path);
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let before = left_in_files(&path, &purged);
    assert!(before > 0, "secure_delete alone leaves stale copies");
    let rows: i64 = c
        .query_row("SELECT count(*) FROM kv", [], |r| r.get(0))
        .unwrap();

    let (pages, dirty) = dirty_pages(&c).unwrap();
    assert!(!dirty.is_empty() && dirty.len() < pages);
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert_eq!(rewrite(&c, &dirty).unwrap(), dirty.len());
    c.execute_batch("COMMIT").unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();

    assert_eq!(left_in_files(&path, &purged), 0, "{before} before");
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let after: i64 = c
        .query_row("SELECT count(*) FROM kv", [], |r| r.get(0))
        .unwrap();
    assert_eq!(after, rows);
    assert!(
        dirty_pages(&c).unwrap().1.is_empty(),
        "nothing left to zero"
    );
}

#[test]
fn a_page_that_is_not_a_consistent_btree_page_is_left_alone() {
    // An overflow page: a page number, then payload.
    let mut overflow = vec![7u8; 4096];
    overflow[..4].copy_from_slice(&[0, 0, 0, 9]);
    assert!(!page(&mut overflow, false, 4096));
    assert!(overflow[4..].iter().all(|&b| b == 7));
    // A leaf whose content area would start inside its cell pointers.
    let mut leaf = vec![7u8; 4096];
    leaf[..8].copy_from_slice(&[13, 0, 0, 0, 100, 0, 20, 0]);
    assert!(!page(&mut leaf, false, 4096));
    // A consistent empty leaf: everything past the header is a gap.
    let mut empty = vec![7u8; 4096];
    empty[..8].copy_from_slice(&[13, 0, 0, 0, 0, 0x10, 0, 0]);
    assert!(page(&mut empty, false, 4096));
    assert!(empty[8..].iter().all(|&b| b == 0));
}

#[test]
fn the_bundled_sqlite_has_the_page_table() {
    let c = Connection::open_in_memory().unwrap();
    let on: bool = c
        .query_row(
            "SELECT count(*) > 0 FROM pragma_compile_options WHERE compile_options = 'ENABLE_DBPAGE_VTAB'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(on);
}
