//! A group's events as the arrays its insert binds.

use super::super::rows::ms;
use crate::AppendRequest;

/// The events of one group, as arrays bound to `UNNEST`.
#[derive(Default)]
pub(in crate::postgres) struct Columns {
    pub(in crate::postgres) seqs: Vec<i64>,
    source_ids: Vec<String>,
    message_ids: Vec<String>,
    event_types: Vec<String>,
    received_ats: Vec<i64>,
    bodies: Vec<String>,
    blocked: Vec<Option<String>>,
    persons: Vec<i16>,
    /// `events.handed` (`rowless`): the deliveries handed without a row.
    pub(in crate::postgres) handed: Vec<Option<String>>,
    /// `events.counts` (`usage_feed`): what each event adds to usage.
    pub(in crate::postgres) counts: Vec<Option<i16>>,
}

impl Columns {
    pub(super) fn push(&mut self, seq: i64, request: &AppendRequest, event: &crate::NewEvent) {
        self.seqs.push(seq);
        self.source_ids.push(request.source_id.clone());
        self.message_ids.push(event.message_id.clone());
        self.event_types.push(event.event_type.clone());
        self.received_ats.push(ms(request.received_at));
        self.bodies.push(event.body.clone());
        self.persons.push(i16::try_from(event.person).unwrap_or(0));
        self.blocked
            .push(event.blocked.as_ref().map(|b| b.rule.clone()));
        self.handed.push(None);
        self.counts.push(None);
    }

    /// `$1` … `$9` of the events insert.
    pub(in crate::postgres) fn params(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        vec![
            &self.seqs,
            &self.source_ids,
            &self.message_ids,
            &self.event_types,
            &self.received_ats,
            &self.bodies,
            &self.blocked,
            &self.persons,
            &self.counts,
        ]
    }

    /// Puts the rows in (messageId, source) order, the order in which
    /// concurrent groups lock the same ids.
    pub(in crate::postgres) fn sort_by_id(&mut self) {
        let mut order: Vec<usize> = (0..self.seqs.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            (&self.message_ids[a], &self.source_ids[a])
                .cmp(&(&self.message_ids[b], &self.source_ids[b]))
        });
        fn apply<T: Default>(v: &mut Vec<T>, order: &[usize]) {
            let mut taken: Vec<T> = order.iter().map(|&i| std::mem::take(&mut v[i])).collect();
            std::mem::swap(v, &mut taken);
        }
        apply(&mut self.seqs, &order);
        apply(&mut self.source_ids, &order);
        apply(&mut self.message_ids, &order);
        apply(&mut self.event_types, &order);
        apply(&mut self.received_ats, &order);
        apply(&mut self.bodies, &order);
        apply(&mut self.blocked, &order);
        apply(&mut self.persons, &order);
        apply(&mut self.handed, &order);
        apply(&mut self.counts, &order);
    }
}
