//! The engine's side: lease, input events, profiles and the step commit.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get, ms, opt_time, sql_limit};
use super::scheduled;
use crate::queries::engine::{self, Removal};
use crate::sql::postgres::PgRef;
use crate::{ProfileCommit, ProfileRecord, Result};

// The engine's reads by unique key are one index lookup per key, whatever
// the table's statistics say: `unnest … CROSS JOIN LATERAL` over a
// subquery the planner cannot flatten into a join (`LIMIT 1`). With
// `= ANY($1)`, or a lateral join it could flatten, it chose sequential
// scans of `profile_identities` while the table grew faster than
// autovacuum analysed it, so each step read all of it.

pub(super) async fn resolve(
    c: &impl GenericClient,
    identities: &[String],
) -> Result<Vec<(String, String)>> {
    let rows = c
        .query(
            "SELECT i.identity, i.profile_id
             FROM (SELECT DISTINCT unnest($1::text[])) AS k(id)
             CROSS JOIN LATERAL (
                 SELECT identity, profile_id FROM profile_identities WHERE identity = k.id LIMIT 1
             ) i",
            &[&identities],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
}

pub(super) async fn load(
    c: &impl GenericClient,
    ids: &[String],
    events: bool,
) -> Result<Vec<ProfileRecord>> {
    let rows = c
        .query(
            "SELECT p.id, p.doc, p.next_change_at, p.version
             FROM (SELECT DISTINCT unnest($1::text[])) AS k(id)
             CROSS JOIN LATERAL (
                 SELECT id, doc, next_change_at, version FROM profiles WHERE id = k.id LIMIT 1
             ) p",
            &[&ids],
        )
        .await
        .map_err(backend)?;
    let mut out = rows
        .iter()
        .map(|r| {
            Ok(ProfileRecord {
                id: get(r, 0)?,
                doc: get(r, 1)?,
                next_change_at: opt_time(r, 2)?,
                events: Vec::new(),
                version: get(r, 3)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if events && !out.is_empty() {
        let mut by_id: std::collections::HashMap<String, Vec<crate::ProfileEventRow>> =
            std::collections::HashMap::new();
        for (id, e) in super::events::of(c, ids).await? {
            by_id.entry(id).or_default().push(e);
        }
        for r in &mut out {
            r.events = by_id.remove(&r.id).unwrap_or_default();
        }
    }
    Ok(out)
}

pub(super) async fn due(
    c: &impl GenericClient,
    now: DateTime<Utc>,
    limit: u32,
    partitions: &[u16],
) -> Result<Vec<String>> {
    let rows = c
        .query(
            "SELECT id FROM profiles WHERE next_change_at IS NOT NULL AND next_change_at <= $1
               AND (cardinality($3::smallint[]) = 0 OR ((hashtext(id) & 2147483647) % $4)::smallint = ANY($3))
             ORDER BY next_change_at LIMIT $2",
            &[&ms(now), &sql_limit(limit), &small(partitions), &n_partitions()],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| get(r, 0)).collect()
}

/// Partition ids as `smallint`s.
pub(super) fn small(partitions: &[u16]) -> Vec<i16> {
    partitions
        .iter()
        .map(|p| i16::try_from(*p).unwrap_or(i16::MAX))
        .collect()
}

/// [`crate::POSTGRES_PARTITIONS`] as the `integer` `hashtext` is taken
/// modulo of.
pub(super) fn n_partitions() -> i32 {
    i32::from(crate::POSTGRES_PARTITIONS)
}

/// One engine step in one transaction. The engine row is locked first, so a
/// node that lost the lease writes nothing; then the computations it relies
/// on (see `scheduled.rs`).
pub(super) async fn commit(
    client: &mut deadpool_postgres::Object,
    c: &ProfileCommit,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    if !super::partitions::hold(&tx, &c.owner, &c.partitions).await? {
        return Ok(false);
    }
    // Another partition committed one of these profiles or identities
    // since the step read them: refused, and the step is redone. A node
    // holding every partition has no other partition to race with (one
    // that took a partition from it meanwhile made the check above fail).
    let alone =
        c.partitions.is_empty() || c.partitions.len() >= usize::from(crate::POSTGRES_PARTITIONS);
    if !alone && !super::commit::versions(&tx, c).await? {
        return Ok(false);
    }
    let now = ms(c.now);
    let touched: Vec<&str> = c
        .settle
        .iter()
        .chain(&c.removed_profiles)
        .map(String::as_str)
        .collect();
    let computations: Vec<&str> = (c.values.iter().map(|v| &v.computation_id))
        .chain(c.messages.iter().map(|m| &m.computation_id))
        .chain(c.scheduled.iter().map(|s| &s.change.computation_id))
        .chain(&c.computed)
        .map(String::as_str)
        .collect();
    scheduled::lock(&tx, &touched, &computations).await?;
    scheduled::settle(&tx, &c.settle, now).await?;
    super::events::write(&tx, c).await?;
    if !c.removed_profiles.is_empty() {
        scheduled::remove_profiles(&tx, &c.removed_profiles).await?;
        engine::remove_profiles(&PgRef(&tx), &c.removed_profiles, Removal::Merged).await?;
    }
    let created = super::commit::profiles(&tx, c).await?;
    if !super::commit::identities(&tx, c, !alone).await? {
        return Ok(false);
    }
    super::commit::values(&tx, c, &created).await?;
    // Changes prepared from a definition edited since are not written.
    let (fresh, stale) = scheduled::fresh(&tx, c).await?;
    let (seqs, silent) = super::outbox::write(&tx, c, &stale).await?;
    scheduled::insert(&tx, &fresh, &seqs, &silent).await?;
    if let Some(cursor) = c.cursor {
        super::partitions::advance(&tx, &c.partitions, cursor).await?;
    }
    if let Some(log) = &c.log {
        super::partitions::advance_log(&tx, log).await?;
    }
    engine::record(&PgRef(&tx), c).await?;
    tx.commit().await.map_err(backend)?;
    Ok(true)
}
