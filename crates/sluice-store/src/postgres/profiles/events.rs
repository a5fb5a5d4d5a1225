//! `profile_events`: a person's behavioural calls, one row each (version 7;
//! why a table of its own: `sqlite/profiles/events.rs`). Rows are written
//! in bulk (`unnest` of arrays): one statement per step, not one per event.
//! The migration moves the events of older documents into rows.

use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get};
use crate::sql::postgres::PgRef;
use crate::{ProfileCommit, ProfileEventRow, Result};

pub(in crate::postgres) const SCHEMA_V7: &str = r#"
CREATE TABLE profile_events (
    profile_id text COLLATE "C" NOT NULL,
    ts         bigint NOT NULL,
    seq        bigint NOT NULL,
    source_id  text NOT NULL,
    kind       text NOT NULL,
    name       text,
    properties text NOT NULL,
    PRIMARY KEY (profile_id, ts, seq)
);
INSERT INTO profile_events (profile_id, ts, seq, source_id, kind, name, properties)
SELECT p.id, (e->>'ts')::bigint, (e->>'seq')::bigint, e->>'src', e->>'t', e->>'name',
       COALESCE((e->'p')::text, '{}')
FROM profiles p, jsonb_array_elements(p.doc::jsonb->'events') e
WHERE jsonb_typeof(p.doc::jsonb->'events') = 'array'
ON CONFLICT DO NOTHING;
UPDATE profiles SET doc = (doc::jsonb - 'events')::text WHERE doc::jsonb ? 'events';
"#;

/// Version 9: each row keeps a hash of its call's `messageId`, so that the
/// engine counts a call sent twice once (rows stored before have none).
pub(in crate::postgres) const SCHEMA_V9: &str = "
ALTER TABLE profile_events ADD COLUMN message_hash bigint;
";

/// The events of the given profiles, each profile's oldest first.
pub(super) async fn of(
    c: &impl GenericClient,
    ids: &[String],
) -> Result<Vec<(String, ProfileEventRow)>> {
    let rows = c
        .query(
            // One index range per profile (a nested loop over the ids):
            // with `profile_id = ANY($1)` the planner may choose a parallel
            // scan of the whole table once it is large.
            "SELECT k.id, e.seq, e.ts, e.source_id, e.kind, e.name, e.properties, e.message_hash
             FROM unnest($1::text[]) AS k(id)
             CROSS JOIN LATERAL (
                 SELECT seq, ts, source_id, kind, name, properties, message_hash
                 FROM profile_events WHERE profile_id = k.id ORDER BY ts, seq
             ) e
             ORDER BY k.id, e.ts, e.seq",
            &[&ids],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| {
            Ok((
                get(r, 0)?,
                ProfileEventRow {
                    seq: get(r, 1)?,
                    ts: get(r, 2)?,
                    source_id: get(r, 3)?,
                    kind: get(r, 4)?,
                    name: get(r, 5)?,
                    properties: get(r, 6)?,
                    message_hash: get(r, 7)?,
                },
            ))
        })
        .collect()
}

/// Appends, moves and trims a step's events, in that order (inside the
/// step's transaction).
pub(super) async fn write(c: &impl GenericClient, commit: &ProfileCommit) -> Result<()> {
    if !commit.events.is_empty() {
        let n = commit.events.len();
        let (mut profile, mut ts, mut seq) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut source, mut kind, mut name, mut props, mut message) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (p, e) in &commit.events {
            profile.push(p.as_str());
            ts.push(e.ts);
            seq.push(e.seq);
            source.push(e.source_id.as_str());
            kind.push(e.kind.as_str());
            name.push(e.name.as_deref());
            props.push(e.properties.as_str());
            message.push(e.message_hash);
        }
        c.execute(
            "INSERT INTO profile_events
                 (profile_id, ts, seq, source_id, kind, name, properties, message_hash)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[],
                                  $5::text[], $6::text[], $7::text[], $8::bigint[])
             ON CONFLICT DO NOTHING",
            &[&profile, &ts, &seq, &source, &kind, &name, &props, &message],
        )
        .await
        .map_err(backend)?;
    }
    crate::queries::engine::move_events(&PgRef(c), &commit.moved_events).await?;
    if !commit.trimmed_events.is_empty() {
        let profiles: Vec<&str> = commit.trimmed_events.iter().map(|t| t.0.as_str()).collect();
        let ts: Vec<i64> = commit.trimmed_events.iter().map(|t| t.1).collect();
        let seq: Vec<i64> = commit.trimmed_events.iter().map(|t| t.2).collect();
        c.execute(
            "DELETE FROM profile_events e USING unnest($1::text[], $2::bigint[], $3::bigint[])
                 AS k(p, ts, seq)
             WHERE e.profile_id = k.p AND (e.ts, e.seq) < (k.ts, k.seq)",
            &[&profiles, &ts, &seq],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}
