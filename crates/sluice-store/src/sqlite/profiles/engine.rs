//! The engine's side: lease, input events, profiles and the step commit.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::super::rows::{EVENT_COLUMNS, ms, opt_time, sql_limit, stored_event};
use super::scheduled;
use crate::queries::engine::{self, Removal};
use crate::sql::sqlite::{Lite, ready};
use crate::{CursorEvent, EventCursor, PERSONAS_SOURCE, ProfileCommit, ProfileRecord, Result};

pub(super) fn take_lease(
    conn: &Connection,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<Option<EventCursor>> {
    let until = ms(now).saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
    let taken = conn
        .prepare_cached(
            "UPDATE profile_engine SET lease_owner = ?1, lease_until = ?2
             WHERE id = 1 AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_until < ?3)",
        )?
        .execute(params![owner, until, ms(now)])?;
    if taken == 0 {
        return Ok(None);
    }
    let seq: i64 = conn
        .prepare_cached("SELECT cursor_seq FROM profile_engine WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    Ok(Some(EventCursor { xact: 0, seq }))
}

pub(super) fn release_lease(conn: &Connection, owner: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE profile_engine SET lease_owner = NULL, lease_until = NULL
         WHERE id = 1 AND lease_owner = ?1",
    )?
    .execute(params![owner])?;
    Ok(())
}

/// One writer: rowids are assigned in commit order, so `seq > cursor` is
/// exactly the events not yet seen. Calls blocked by a source's schema rules
/// are stored for the debugger but feed no profile.
pub(super) fn events_after(
    conn: &Connection,
    cursor: EventCursor,
    limit: u32,
) -> Result<Vec<CursorEvent>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events
         WHERE seq > ?1 AND blocked IS NULL ORDER BY seq LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![cursor.seq, sql_limit(limit)], |row| {
        let event = stored_event(row)?;
        Ok(CursorEvent {
            cursor: EventCursor {
                xact: 0,
                seq: event.seq,
            },
            event,
            elsewhere: false,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn resolve(conn: &Connection, identities: &[String]) -> Result<Vec<(String, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT profile_id FROM profile_identities WHERE identity = ?1")?;
    let mut out = Vec::new();
    for identity in identities {
        if let Some(p) = stmt
            .query_row(params![identity], |r| r.get::<_, String>(0))
            .optional()?
        {
            out.push((identity.clone(), p));
        }
    }
    Ok(out)
}

pub(super) fn load(conn: &Connection, ids: &[String], events: bool) -> Result<Vec<ProfileRecord>> {
    let mut stmt =
        conn.prepare_cached("SELECT id, doc, next_change_at FROM profiles WHERE id = ?1")?;
    let mut out = Vec::new();
    for id in ids {
        let row = stmt
            .query_row(params![id], |r| {
                Ok(ProfileRecord {
                    id: r.get(0)?,
                    doc: r.get(1)?,
                    next_change_at: opt_time(r, 2)?,
                    events: Vec::new(),
                    version: 0,
                })
            })
            .optional()?;
        if let Some(mut record) = row {
            if events {
                record.events = super::events::of(conn, id)?;
            }
            out.push(record);
        }
    }
    Ok(out)
}

pub(super) fn due(conn: &Connection, now: DateTime<Utc>, limit: u32) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM profiles WHERE next_change_at IS NOT NULL AND next_change_at <= ?1
         ORDER BY next_change_at LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![ms(now), sql_limit(limit)], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether `destination` exists and is enabled: the engine's messages go
/// only to destinations that receive, so a disabled one is neither sent
/// nor counted what it would discard; enabling it again gives it a first
/// sync of its own (`queries::computations::resync_destination`).
fn enabled(conn: &Connection, destination: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT enabled FROM destinations WHERE id = ?1")?
        .query_row(params![destination], |r| r.get::<_, bool>(0))
        .optional()?
        .unwrap_or(false))
}

/// Whether `owner` holds the engine lease.
pub(super) fn holds(conn: &Connection, owner: &str) -> Result<bool> {
    let holder: Option<String> = conn
        .prepare_cached("SELECT lease_owner FROM profile_engine WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    Ok(holder.as_deref() == Some(owner))
}

/// Writes one step inside the writer's transaction; refuses (false) when
/// `owner` lost the lease, before writing anything.
/// `stored` holds each of `c.events`' properties compressed, or `None` for
/// the text (see `bodies`).
pub(super) fn commit(
    conn: &Connection,
    c: &ProfileCommit,
    stored: &[Option<Vec<u8>>],
) -> Result<bool> {
    if !holds(conn, &c.owner)? {
        return Ok(false);
    }
    let now = ms(c.now);
    for id in &c.settle {
        scheduled::settle(conn, id, now)?;
    }
    super::events::write(conn, c, stored)?;
    for id in &c.removed_profiles {
        scheduled::remove_profile(conn, id)?;
    }
    ready(engine::remove_profiles(
        &Lite(conn),
        &c.removed_profiles,
        Removal::Merged,
    ))?;
    let mut put = conn.prepare_cached(
        "INSERT INTO profiles (id, doc, next_change_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, next_change_at = excluded.next_change_at",
    )?;
    for p in &c.profiles {
        put.execute(params![p.id, p.doc, p.next_change_at.map(ms)])?;
    }
    for (id, at) in &c.next_changes {
        conn.prepare_cached("UPDATE profiles SET next_change_at = ?2 WHERE id = ?1")?
            .execute(params![id, at.map(ms)])?;
    }
    let mut ident = conn.prepare_cached(
        "INSERT INTO profile_identities (identity, profile_id) VALUES (?1, ?2)
         ON CONFLICT (identity) DO UPDATE SET profile_id = excluded.profile_id",
    )?;
    for (identity, profile) in &c.identities {
        ident.execute(params![identity, profile])?;
    }
    // Whether a computation is live, asked once per computation per step.
    let mut alive: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    let mut live = |id: &str| -> Result<bool> {
        if let Some(&known) = alive.get(id) {
            return Ok(known);
        }
        let known = conn
            .prepare_cached("SELECT 1 FROM computations WHERE id = ?1 AND deleted_at IS NULL")?
            .query_row(params![id], |_| Ok(()))
            .optional()?
            .is_some();
        alive.insert(id.to_owned(), known);
        Ok(known)
    };
    for v in &c.values {
        match &v.value {
            Some(value) if live(&v.computation_id)? => {
                conn.prepare_cached(
                    "INSERT INTO computed_values (computation_id, profile_id, value)
                     VALUES (?1, ?2, ?3)
                     ON CONFLICT (computation_id, profile_id) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![v.computation_id, v.profile_id, value])?;
            }
            Some(_) => {}
            None => {
                conn.prepare_cached(
                    "DELETE FROM computed_values WHERE computation_id = ?1 AND profile_id = ?2",
                )?
                .execute(params![v.computation_id, v.profile_id])?;
            }
        }
    }
    // Changes prepared from a definition edited since are not written.
    let mut stale = std::collections::HashSet::new();
    let mut fresh = Vec::new();
    for s in &c.scheduled {
        let id = &s.change.computation_id;
        if scheduled::current(conn, id, ms(s.computation_updated_at))? {
            fresh.push(s);
        } else {
            stale.extend(s.message_id.as_deref());
            scheduled::due_again(conn, &s.change.profile_id, ms(s.change.at))?;
        }
    }
    let mut seqs = std::collections::HashMap::new();
    // Scheduled messages with no destination receiving: their changes are
    // written without a message.
    let mut silent = std::collections::HashSet::new();
    // Counters are added up here and written once per key, not per message.
    let mut sends: std::collections::BTreeMap<(&str, &str), i64> = Default::default();
    // Whether a destination receives, asked once per destination per step.
    let mut receiving: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    for m in &c.messages {
        if m.destination_ids.is_empty()
            || stale.contains(m.message_id.as_str())
            || !live(&m.computation_id)?
        {
            continue;
        }
        let mut targets = Vec::with_capacity(m.destination_ids.len());
        for d in &m.destination_ids {
            let on = match receiving.get(d.as_str()) {
                Some(&on) => on,
                None => {
                    let on = enabled(conn, d)?;
                    receiving.insert(d, on);
                    on
                }
            };
            if on {
                targets.push(d);
            }
        }
        if targets.is_empty() {
            silent.insert(m.message_id.as_str());
            continue;
        }
        let due = m.deliver_at.map_or(now, ms);
        let seq = conn
            .prepare_cached(
                "INSERT INTO events (source_id, message_id, event_type, received_at, body)
                 VALUES (?1, ?2, 'identify', ?3, ?4)",
            )?
            .insert(params![PERSONAS_SOURCE, m.message_id, due, m.body])?;
        if m.deliver_at.is_some() {
            seqs.insert(m.message_id.as_str(), seq);
        }
        for d in targets {
            conn.prepare_cached(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                         next_attempt_at, updated_at)
                 VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?5)",
            )?
            .execute(params![seq, d, PERSONAS_SOURCE, due, now])?;
            *sends
                .entry((m.computation_id.as_str(), d.as_str()))
                .or_default() += 1;
        }
    }
    for s in fresh {
        let seq = s.message_id.as_deref().and_then(|m| seqs.get(m).copied());
        let unsent = s.message_id.as_deref().is_none_or(|m| silent.contains(m));
        if unsent || seq.is_some() {
            scheduled::insert(conn, &s.change, seq)?;
        }
    }
    let mut per_computation: std::collections::BTreeMap<&str, i64> = Default::default();
    for ((computation, destination), n) in sends {
        conn.prepare_cached(
            "INSERT INTO computation_sends (computation_id, destination_id, sent)
             VALUES (?1, ?2, ?3)
             ON CONFLICT (computation_id, destination_id) DO UPDATE SET sent = sent + excluded.sent",
        )?
        .execute(params![computation, destination, n])?;
        *per_computation.entry(computation).or_default() += n;
    }
    for (computation, n) in per_computation {
        conn.prepare_cached(
            "UPDATE computations SET messages_sent = messages_sent + ?2 WHERE id = ?1",
        )?
        .execute(params![computation, n])?;
    }
    if let Some(cursor) = c.cursor {
        conn.prepare_cached("UPDATE profile_engine SET cursor_seq = ?1 WHERE id = 1")?
            .execute(params![cursor.seq])?;
    }
    ready(engine::record(&Lite(conn), c))?;
    Ok(true)
}
