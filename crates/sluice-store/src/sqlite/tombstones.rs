//! Deleting an event or a delivery without freeing its id.
//!
//! Seqs and delivery ids are rowids, handed out as max + 1 (`schema.rs`).
//! Deleting the row that holds the highest id would hand that id out
//! again, to another event or delivery, behind every cursor that had passed
//! it: the profile engine's, the delivery log's pages, a block's message-id
//! filter. So the newest row is emptied into a tombstone instead, the one a
//! purge has always left: an event of the privacy source typed `purged`
//! with an empty body (no consumer acts on it), and a delivery `discarded`
//! and detached from any event (`event_seq = 0`, so no listing joins it).
//! Every other row is deleted. Retention needs none of this: it never
//! selects the newest event or the newest delivery's event.

use rusqlite::{Connection, params};

use crate::{PRIVACY_SOURCE, Result};

/// Deletes event `seq`, or empties it when it is the newest.
pub(super) fn delete_event(c: &Connection, seq: i64) -> Result<()> {
    let newest: Option<i64> = c
        .prepare_cached("SELECT max(seq) FROM events")?
        .query_row([], |r| r.get(0))?;
    if newest == Some(seq) {
        c.prepare_cached(
            "UPDATE events SET source_id = ?2, message_id = '', event_type = 'purged',
                    body = '{\"type\":\"purged\"}'
             WHERE seq = ?1",
        )?
        .execute(params![seq, PRIVACY_SOURCE])?;
    } else {
        c.prepare_cached("DELETE FROM events WHERE seq = ?1")?
            .execute([seq])?;
    }
    Ok(())
}

/// Deletes delivery `id` (not its rows in `attempts`), or detaches and
/// discards it when it is the newest, with the attempts its row kept.
pub(super) fn delete_delivery(c: &Connection, id: i64) -> Result<()> {
    let newest: Option<i64> = c
        .prepare_cached("SELECT max(id) FROM deliveries")?
        .query_row([], |r| r.get(0))?;
    if newest == Some(id) {
        c.prepare_cached(
            "UPDATE deliveries SET event_seq = 0, state = 'discarded', last_error = NULL,
                    lease_until = NULL, next_attempt_at = NULL, settled_attempts = NULL
             WHERE id = ?1",
        )?
        .execute([id])?;
    } else {
        c.prepare_cached("DELETE FROM deliveries WHERE id = ?1")?
            .execute([id])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::{delete_delivery, delete_event};
    use crate::sqlite::schema::MIGRATIONS;

    fn store() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        MIGRATIONS.to_latest(&mut conn).unwrap();
        for m in ["a", "b", "c"] {
            conn.execute(
                "INSERT INTO events (source_id, message_id, event_type, received_at, body)
                 VALUES ('src', ?1, 'track', 0, '{}')",
                [m],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state, updated_at)
                 VALUES (last_insert_rowid(), 'dst', 'src', 'pending', 0)",
                [],
            )
            .unwrap();
        }
        conn
    }

    fn next_ids(conn: &Connection) -> (i64, i64) {
        conn.execute(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES ('src', 'next', 'track', 0, '{}')",
            [],
        )
        .unwrap();
        let seq = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO deliveries (event_seq, destination_id, source_id, state, updated_at)
             VALUES (?1, 'dst', 'src', 'pending', 0)",
            [seq],
        )
        .unwrap();
        (seq, conn.last_insert_rowid())
    }

    #[test]
    fn deleting_the_newest_rows_never_frees_their_ids() {
        let conn = store();
        delete_event(&conn, 3).unwrap();
        delete_delivery(&conn, 3).unwrap();
        let (kind, message): (String, String) = conn
            .query_row(
                "SELECT event_type, message_id FROM events WHERE seq = 3",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((kind.as_str(), message.as_str()), ("purged", ""));
        let (event, state): (i64, String) = conn
            .query_row(
                "SELECT event_seq, state FROM deliveries WHERE id = 3",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((event, state.as_str()), (0, "discarded"));
        assert_eq!(next_ids(&conn), (4, 4), "ids 3 are still taken");
    }

    #[test]
    fn other_rows_are_deleted() {
        let conn = store();
        delete_event(&conn, 2).unwrap();
        delete_delivery(&conn, 2).unwrap();
        let events: i64 = conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        let deliveries: i64 = conn
            .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
            .unwrap();
        assert_eq!((events, deliveries), (2, 2));
        assert_eq!(next_ids(&conn), (4, 4));
    }
}
