//! What rules and filters decided at ingest, written with the group.

use std::collections::BTreeMap;

use super::super::rows::{backend, day, ms};
use crate::{AppendRequest, Result};

/// What rules and filters decided at ingest, for a whole group: `filtered`
/// deliveries (the filter's name in `last_error`) and blocked calls per
/// (source, day, event). Both statements run only when there is something
/// to write, so a group without rules pays nothing.
#[derive(Default)]
pub(super) struct AtIngest<'a> {
    f_seqs: Vec<i64>,
    f_dests: Vec<&'a str>,
    f_sources: Vec<&'a str>,
    f_filters: Vec<&'a str>,
    f_at: Vec<i64>,
    blocked: BTreeMap<(&'a str, String, &'a str), i64>,
}

impl<'a> AtIngest<'a> {
    pub(super) fn add(&mut self, request: &'a AppendRequest, event: &'a crate::NewEvent, seq: i64) {
        for (destination_id, filter) in &event.filtered {
            self.f_seqs.push(seq);
            self.f_dests.push(destination_id);
            self.f_sources.push(&request.source_id);
            self.f_filters.push(filter);
            self.f_at.push(ms(request.received_at));
        }
        if let Some(b) = &event.blocked {
            let key = (
                request.source_id.as_str(),
                day(request.received_at),
                b.event.as_str(),
            );
            *self.blocked.entry(key).or_default() += 1;
        }
    }

    pub(super) async fn write(
        self,
        tx: &deadpool_postgres::Transaction<'_>,
        shard: i32,
    ) -> Result<()> {
        if !self.f_seqs.is_empty() {
            let insert = tx
                .prepare_cached(
                    "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                             last_error, updated_at)
                     SELECT s, d, src, 'filtered', 0, f, t
                     FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[])
                          AS u(s, d, src, f, t)",
                )
                .await
                .map_err(backend)?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
                &self.f_seqs,
                &self.f_dests,
                &self.f_sources,
                &self.f_filters,
                &self.f_at,
            ];
            tx.execute(&insert, &params).await.map_err(backend)?;
        }
        if !self.blocked.is_empty() {
            let (mut sources, mut days, mut names, mut counts) = (vec![], vec![], vec![], vec![]);
            for ((source, day, event), n) in &self.blocked {
                sources.push(*source);
                days.push(day.as_str());
                names.push(*event);
                counts.push(*n);
            }
            let upsert = tx
                .prepare_cached(
                    "INSERT INTO usage_blocked AS u (source_id, day, event, count, shard)
                     SELECT *, $5::integer
                     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[])
                     ON CONFLICT (source_id, day, event, shard)
                     DO UPDATE SET count = u.count + excluded.count",
                )
                .await
                .map_err(backend)?;
            tx.execute(&upsert, &[&sources, &days, &names, &counts, &shard])
                .await
                .map_err(backend)?;
        }
        Ok(())
    }
}
