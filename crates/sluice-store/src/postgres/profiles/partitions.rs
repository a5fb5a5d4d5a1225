//! The engine's partitions on PostgreSQL (version 18): every node computes
//! a share of the people.
//!
//! # Layout
//! - `profile_engine`: one row per partition (`id` = partition + 1), each
//!   with its own event cursor and lease. Row 1 is partition 0, the one
//!   that also settles scheduled changes and runs whole-population jobs.
//! - `profile_engine_nodes`: the engine nodes seen lately; each node's
//!   share is the ceiling of partitions over those seen within the TTL.
//! - `events.person`: the slot of the call's person
//!   ([`crate::person_slot`]), set at ingest; partition `p` of `n` reads
//!   the events whose slot is `p` modulo `n`. Events without one (stored
//!   before this version, and the engine's own messages) are partition 0's.
//! - `profiles.version`: bumped by every step that touches the profile.
//!
//! # Invariants
//! - A commit locks the rows of the partitions it names, in id order, and
//!   writes nothing unless its node holds them all; cursors only move
//!   forward (`GREATEST`), so a partition taken over keeps its place.
//! - People are not confined to one partition (a person's calls before and
//!   after they are identified may hash apart), so steps of two partitions
//!   may touch one profile. Each step names the versions of the profiles
//!   it read and the identities it found; the commit bumps those versions
//!   only where they are unchanged and writes identities only where they
//!   still point where they did, or refuses, so the step is redone on
//!   fresh reads. Profiles touched from two partitions at once are rare:
//!   the calls of one identity always share a slot. A commit naming every
//!   partition skips the checks (and the bumps): nothing else can write.
//!
//! # Recovery
//! A dead node's partitions lapse after the TTL; the others take them at
//! their next renewal (a third of the TTL), at the committed cursors.

use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

use super::super::rows::{backend, big, get, ms, sql_limit, time};
use crate::{CursorEvent, EventCursor, POSTGRES_PARTITIONS, Partition, Result, StoredEvent};

pub(in crate::postgres) const SCHEMA_PARTITIONS: &str = "
ALTER TABLE events ADD COLUMN person smallint;
ALTER TABLE profiles ADD COLUMN version bigint NOT NULL DEFAULT 0;
ALTER TABLE profile_engine DROP CONSTRAINT IF EXISTS profile_engine_id_check;
ALTER TABLE profile_engine ADD CONSTRAINT profile_engine_partition CHECK (id BETWEEN 1 AND 16);
INSERT INTO profile_engine (id, cursor_xact, cursor_seq)
SELECT g, e.cursor_xact, e.cursor_seq FROM profile_engine e, generate_series(2, 16) g
WHERE e.id = 1;
CREATE TABLE profile_engine_nodes (
    node    text PRIMARY KEY,
    seen_at bigint NOT NULL
);
";

/// Where the engine has read the Kafka shape's event log up to (version
/// 24): a row per partition of the topic, moved by the step that read it.
pub(in crate::postgres) const SCHEMA_LOG: &str = r#"
CREATE TABLE profile_log_read (
    topic text COLLATE "C" NOT NULL, part integer NOT NULL, next bigint NOT NULL,
    PRIMARY KEY (topic, part)
);
"#;

/// The rows of `partitions`; every row when empty.
fn rows_of(partitions: &[u16]) -> Vec<i32> {
    if partitions.is_empty() {
        (1..=i32::from(POSTGRES_PARTITIONS)).collect()
    } else {
        partitions.iter().map(|p| i32::from(*p) + 1).collect()
    }
}

/// A node's share: the ceiling of partitions over engine nodes.
pub(crate) fn share(nodes: usize) -> usize {
    usize::from(POSTGRES_PARTITIONS).div_ceil(nodes.max(1))
}

/// Which partitions `owner` keeps and takes: given the rows as
/// `(partition, holder if unexpired)`, those it holds, up to `want`, then
/// free ones by id until it has `want`. Pure, so the rule is tested alone.
pub(crate) fn choose(rows: &[(u16, Option<String>)], owner: &str, want: usize) -> Vec<u16> {
    let mut keep: Vec<u16> = rows
        .iter()
        .filter(|(_, h)| h.as_deref() == Some(owner))
        .map(|(p, _)| *p)
        .take(want)
        .collect();
    for (p, h) in rows {
        if keep.len() >= want {
            break;
        }
        if h.is_none() {
            keep.push(*p);
        }
    }
    keep.sort_unstable();
    keep
}

pub(super) async fn take(
    client: &mut deadpool_postgres::Object,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<Vec<Partition>> {
    let now = ms(now);
    let ttl = big(ttl.as_millis());
    let tx = client.transaction().await.map_err(backend)?;
    tx.execute(
        "INSERT INTO profile_engine_nodes (node, seen_at) VALUES ($1, $2)
         ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at",
        &[&owner, &now],
    )
    .await
    .map_err(backend)?;
    let nodes: i64 = get(
        &tx.query_one(
            "SELECT count(*) FROM profile_engine_nodes WHERE seen_at >= $1",
            &[&now.saturating_sub(ttl)],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    let rows = tx
        .query(
            "SELECT id, lease_owner, lease_until FROM profile_engine ORDER BY id FOR UPDATE",
            &[],
        )
        .await
        .map_err(backend)?;
    let mut seen = Vec::with_capacity(rows.len());
    for r in &rows {
        let id: i32 = get(r, 0)?;
        let holder: Option<String> = get(r, 1)?;
        let until: Option<i64> = get(r, 2)?;
        let live = holder.filter(|_| until.is_some_and(|u| u >= now));
        seen.push((u16::try_from(id - 1).unwrap_or(0), live));
    }
    let keep = choose(&seen, owner, share(usize::try_from(nodes).unwrap_or(1)));
    let ids = rows_of(&keep);
    tx.execute(
        "UPDATE profile_engine SET lease_owner = NULL, lease_until = NULL
         WHERE lease_owner = $1 AND NOT (id = ANY($2))",
        &[&owner, &ids],
    )
    .await
    .map_err(backend)?;
    let held = if keep.is_empty() {
        Vec::new()
    } else {
        tx.query(
            "UPDATE profile_engine SET lease_owner = $1, lease_until = $2 WHERE id = ANY($3)
             RETURNING id, cursor_xact, cursor_seq",
            &[&owner, &now.saturating_add(ttl), &ids],
        )
        .await
        .map_err(backend)?
    };
    // Nodes silent for many TTLs are forgotten.
    tx.execute(
        "DELETE FROM profile_engine_nodes WHERE seen_at < $1",
        &[&now.saturating_sub(ttl.saturating_mul(20))],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    let mut out = held
        .iter()
        .map(|r| {
            Ok(Partition {
                id: u16::try_from(get::<i32>(r, 0)? - 1).unwrap_or(0),
                cursor: EventCursor {
                    xact: get(r, 1)?,
                    seq: get(r, 2)?,
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|p| p.id);
    Ok(out)
}

pub(super) async fn release(c: &impl GenericClient, owner: &str) -> Result<()> {
    c.execute(
        "UPDATE profile_engine SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1",
        &[&owner],
    )
    .await
    .map_err(backend)?;
    c.execute(
        "DELETE FROM profile_engine_nodes WHERE node = $1",
        &[&owner],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Whether `owner` holds every one of `partitions` (all when empty);
/// locks their rows, in id order, until the transaction ends.
pub(super) async fn hold(c: &impl GenericClient, owner: &str, partitions: &[u16]) -> Result<bool> {
    let ids = rows_of(partitions);
    let rows = c
        .query(
            "SELECT lease_owner FROM profile_engine WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&ids],
        )
        .await
        .map_err(backend)?;
    if rows.len() != ids.len() {
        return Ok(false);
    }
    for r in &rows {
        if get::<Option<String>>(r, 0)?.as_deref() != Some(owner) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Moves the cursors of `partitions` (all when empty) forward to `cursor`.
pub(super) async fn advance(
    c: &impl GenericClient,
    partitions: &[u16],
    cursor: EventCursor,
) -> Result<()> {
    c.execute(
        "UPDATE profile_engine SET cursor_xact = $1, cursor_seq = $2
         WHERE id = ANY($3) AND (cursor_xact, cursor_seq) < ($1, $2)",
        &[&cursor.xact, &cursor.seq, &rows_of(partitions)],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// `(partition, next offset)` of each partition of `topic` a step read.
pub(super) async fn log_positions(c: &impl GenericClient, topic: &str) -> Result<Vec<(i32, i64)>> {
    let rows = c
        .query(
            "SELECT part, next FROM profile_log_read WHERE topic = $1 ORDER BY part",
            &[&topic],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
}

/// Moves the positions a step read the event log up to; only forward, so
/// a step of a node that lost the partition (refused before this) or an
/// older read never moves one back.
pub(super) async fn advance_log(c: &impl GenericClient, log: &crate::LogAdvance) -> Result<()> {
    let (parts, next): (Vec<i32>, Vec<i64>) = log.next.iter().copied().unzip();
    c.execute(
        "INSERT INTO profile_log_read AS r (topic, part, next)
         SELECT $1, * FROM UNNEST($2::integer[], $3::bigint[])
         ON CONFLICT (topic, part) DO UPDATE SET next = GREATEST(r.next, excluded.next)",
        &[&log.topic, &parts, &next],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// The sources of the messages Sluice writes itself, which the engine
/// does not read.
const OWN_SOURCES: [&str; 2] = [crate::PERSONAS_SOURCE, crate::PRIVACY_SOURCE];

/// How many rows a read may walk per event it may return: the engine's
/// own identify messages sit in the log between the calls it reads (two
/// per call when two connected definitions change), and a step capped by
/// rows rather than by calls would shrink to a third of its size.
const WALK: u32 = 4;

/// The read of [`events_in`]: at most `$3` rows walked in log order after
/// (`$1`, `$2`), each marked `mine` by the condition given, cut after the
/// `$5`th row that is; other rows' bodies are left out.
fn walk_sql(mine: &str) -> String {
    format!(
        "SELECT seq, source_id, message_id, event_type, received_at,
                CASE WHEN mine THEN body ELSE '' END, xact, mine
         FROM (
             SELECT w.*, count(*) FILTER (WHERE w.mine) OVER (ORDER BY w.xact, w.seq) AS taken
             FROM (
                 SELECT e.seq, e.source_id, e.message_id, e.event_type, e.received_at, e.body,
                        e.xact, {mine} AS mine
                 FROM events e
                 WHERE (e.xact, e.seq) > ($1, $2)
                   AND e.xact < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                 ORDER BY e.xact, e.seq LIMIT $3
             ) w
         ) x
         WHERE taken <= $5
         ORDER BY xact, seq"
    )
}

/// Events after the lowest of the given partitions' cursors, in
/// `(xact, seq)` order below the oldest running transaction: every writer
/// of those rows has ended, so nothing can appear behind a cursor later
/// (see the V2 migration notes). Those of other partitions, or at or before
/// their own partition's cursor, come marked [`CursorEvent::elsewhere`],
/// without their bodies.
///
/// The read is one walk of `events_xact_seq` stopped by the limit. Nothing
/// but the index range is in its `WHERE`: any other condition (the slot,
/// `blocked IS NULL`) has a selectivity the planner guesses (0.5 % for
/// `IS NULL` on a table not yet analysed), and a guess below the limit
/// made it read everything after the cursor in a bitmap scan and sort it,
/// on every step of a catch-up. Blocked calls, and the messages Sluice
/// wrote itself (Personas identifies, deletion notifications), come marked
/// like other partitions' events, without their bodies. A read returns at
/// most `limit` events of its own, walking up to [`WALK`] times as many
/// rows, further widened by the share of the partitions held.
pub(super) async fn events_in(
    c: &impl GenericClient,
    partitions: &[Partition],
    limit: u32,
) -> Result<Vec<CursorEvent>> {
    let Some(from) = partitions.iter().map(|p| p.cursor).min() else {
        return Ok(Vec::new());
    };
    let n = i16::try_from(POSTGRES_PARTITIONS).unwrap_or(i16::MAX);
    let ids: Vec<i16> = partitions
        .iter()
        .map(|p| i16::try_from(p.id).unwrap_or(0))
        .collect();
    let xacts: Vec<i64> = partitions.iter().map(|p| p.cursor.xact).collect();
    let seqs: Vec<i64> = partitions.iter().map(|p| p.cursor.seq).collect();
    let own: &[&str] = &OWN_SOURCES;
    let held = u32::try_from(partitions.len()).unwrap_or(1).max(1);
    let wide = limit.saturating_mul(u32::from(POSTGRES_PARTITIONS)) / held;
    let walk = sql_limit(wide.saturating_mul(WALK));
    let cap = i64::from(limit);
    // Every partition at one cursor (one engine node): every event is its.
    let whole =
        held >= u32::from(POSTGRES_PARTITIONS) && partitions.iter().all(|p| p.cursor == from);
    let rows = if whole {
        let sql = walk_sql("e.blocked IS NULL AND e.source_id <> ALL($4)");
        c.query(&sql, &[&from.xact, &from.seq, &walk, &own, &cap])
            .await
            .map_err(backend)?
    } else {
        let sql = walk_sql(
            "e.blocked IS NULL AND e.source_id <> ALL($4) AND EXISTS (
                 SELECT 1 FROM unnest($6::smallint[], $8::bigint[], $9::bigint[]) AS k(p, x, s)
                 WHERE k.p = COALESCE(e.person, 0) % $7::smallint
                   AND (e.xact, e.seq) > (k.x, k.s))",
        );
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
            &from.xact, &from.seq, &walk, &own, &cap, &ids, &n, &xacts, &seqs,
        ];
        c.query(&sql, &params).await.map_err(backend)?
    };
    rows.iter()
        .map(|row| {
            let event = StoredEvent {
                blocked: None,
                seq: get(row, 0)?,
                source_id: get(row, 1)?,
                message_id: get(row, 2)?,
                event_type: get(row, 3)?,
                received_at: time(row, 4)?,
                body: get(row, 5)?,
            };
            Ok(CursorEvent {
                cursor: EventCursor {
                    xact: get(row, 6)?,
                    seq: event.seq,
                },
                event,
                elsewhere: !get::<bool>(row, 7)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{choose, share};

    fn rows(holders: &[Option<&str>]) -> Vec<(u16, Option<String>)> {
        (0u16..)
            .zip(holders)
            .map(|(p, h)| (p, h.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn a_lone_node_takes_every_free_partition() {
        let all = rows(&[None, None, None, None]);
        assert_eq!(choose(&all, "a", 4), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_node_over_its_share_keeps_its_first_partitions_only() {
        let all = rows(&[Some("a"), Some("a"), Some("a"), Some("a")]);
        assert_eq!(choose(&all, "a", 2), vec![0, 1]);
    }

    #[test]
    fn a_newcomer_takes_only_free_partitions_up_to_its_share() {
        let all = rows(&[Some("a"), Some("a"), None, None]);
        assert_eq!(choose(&all, "b", 2), vec![2, 3]);
        let busy = rows(&[Some("a"), Some("a"), Some("a"), None]);
        assert_eq!(choose(&busy, "b", 2), vec![3]);
    }

    #[test]
    fn each_of_three_nodes_gets_a_ceiling_share_of_sixteen() {
        assert_eq!(share(1), 16);
        assert_eq!(share(2), 8);
        assert_eq!(share(3), 6);
        assert_eq!(share(0), 16);
    }
}
