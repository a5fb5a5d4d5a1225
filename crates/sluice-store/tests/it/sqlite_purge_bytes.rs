//! The end of a purge leaves no byte of its subject in the SQLite files,
//! including the stale cell copies SQLite's page rebuilds leave in a
//! page's unallocated space, which `secure_delete` does not zero.

use std::path::Path;
use std::time::Duration;

use chrono::Utc;
use rusqlite::{Connection, params};
use sluice_store::{
    AppendRequest, CatalogStore, EventStore, NewEvent, NewRegulation, NewSource, RegulationCommit,
    RegulationStore, SubjectPurge,
};

use crate::sqlite::{db_path, fresh};

const SUBJECT: &str = "zq-purge-subject-4417";
const KEPT: &str = "zq-kept-user-9023";
const TTL: Duration = Duration::from_secs(60);

fn body(user: &str, n: usize) -> String {
    let pad = "p".repeat((n * 7919) % 700);
    format!(
        r#"{{"type":"track","userId":"{user}","event":"Viewed","properties":{{"pad":"{pad}"}}}}"#
    )
}

/// Every file of the database, concatenated.
fn files(path: &Path) -> Vec<u8> {
    let mut all = std::fs::read(path).unwrap();
    all.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
    all
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Writes `text` into the unallocated gap of a B-tree leaf page, as a page
/// rebuild leaves a stale copy of a cell there; returns the page.
fn plant(path: &Path, text: &str) -> i64 {
    let c = Connection::open(path).unwrap();
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    let pages: Vec<(i64, Vec<u8>)> = c
        .prepare("SELECT pgno, data FROM sqlite_dbpage WHERE pgno > 1")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let word = |d: &[u8], at: usize| usize::from(u16::from_be_bytes([d[at], d[at + 1]]));
    let (pgno, mut data) = pages
        .into_iter()
        .find(|(_, d)| d[0] == 13 && word(d, 5) > 8 + 2 * word(d, 3) + text.len() + 16)
        .expect("a table leaf with room in its gap");
    let at = 8 + 2 * word(&data, 3) + 8;
    data[at..at + text.len()].copy_from_slice(text.as_bytes());
    c.execute(
        "UPDATE sqlite_dbpage SET data = ?2 WHERE pgno = ?1",
        params![pgno, data],
    )
    .unwrap();
    c.execute_batch("COMMIT").unwrap();
    c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .map(|ok| assert_eq!(ok, "ok"))
        .unwrap();
    pgno
}

#[tokio::test]
async fn a_finished_purge_leaves_no_byte_of_its_subject_in_the_files() {
    let (dir, store) = fresh().await;
    let path = db_path(&dir);
    store
        .create_source(NewSource {
            id: "src_a".into(),
            name: "src_a".into(),
            enabled: true,
            write_key_hash: "hash".into(),
            write_key_hint: "abcd…".into(),
        })
        .await
        .unwrap();
    for chunk in 0..20 {
        let events = (0..100)
            .map(|i| {
                let n = chunk * 100 + i;
                let user = if n % 10 == 0 { SUBJECT } else { KEPT };
                NewEvent {
                    message_id: format!("m-{n}"),
                    event_type: "track".into(),
                    body: body(user, n),
                    ..NewEvent::default()
                }
            })
            .collect();
        store
            .append(AppendRequest {
                source_id: "src_a".into(),
                received_at: Utc::now(),
                events,
            })
            .await
            .unwrap();
    }
    // A stale copy of one of the subject's events where no row owns the
    // bytes: what SQLite's page rebuilds leave and `secure_delete` misses.
    let stale = format!(r#"{{"userId":"{SUBJECT}","event":"Stale copy"}}"#);
    plant(&path, &stale);
    assert!(holds(&files(&path), &stale), "planted");

    let now = Utc::now();
    store
        .create_regulation(NewRegulation {
            id: "reg_1".into(),
            regulation_type: "DELETE_INTERNAL".into(),
            subject_ids: vec![SUBJECT.into()],
            source_id: None,
            suppress: None,
            purge: true,
            notify: false,
            now,
        })
        .await
        .unwrap();
    assert!(store.take_regulation_lease("job", now, TTL).await.unwrap());
    store.seize_profile_lease("job", now, TTL).await.unwrap();
    let (_, pending) = store.next_regulation(10).await.unwrap().unwrap();
    let found = store.find_subject_data(pending, None).await.unwrap();
    assert_eq!(found[0].events.len(), 200);
    let step = |subjects| RegulationCommit {
        owner: "job".into(),
        regulation_id: "reg_1".into(),
        now,
        subjects,
    };
    let purge = SubjectPurge {
        subject_id: SUBJECT.into(),
        event_seqs: found[0].events.iter().map(|(seq, _)| *seq).collect(),
        profile_ids: Vec::new(),
        affected_sources: vec!["src_a".into()],
    };
    assert!(store.commit_regulation(step(vec![purge])).await.unwrap());
    assert!(store.commit_regulation(step(Vec::new())).await.unwrap());
    let detail = store.get_regulation("reg_1").await.unwrap().unwrap();
    assert_eq!(detail.regulation.status, "FINISHED");

    let bytes = files(&path);
    assert!(
        !holds(&bytes, SUBJECT),
        "the subject's id is still in the files"
    );
    assert!(holds(&bytes, KEPT), "another user's events are kept");
    let check: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}
