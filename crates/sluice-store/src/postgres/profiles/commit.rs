//! The writes of one engine step, inside its transaction: every kind of
//! row in one statement over arrays (`unnest`), not one statement per row.
//! A step of 250 events touches hundreds of profiles, identities and
//! values; one round trip each kept the engine near 1,000 events/s.
//!
//! A key may appear twice in one commit (a profile written, then written
//! again after a merge in the same batch); the last write wins, as it did
//! when rows were written one by one, and `ON CONFLICT DO UPDATE` may not
//! touch a row twice in one statement, so keys are made unique first.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get, ms};
use crate::{ProfileCommit, ProfileRecord, Result};

/// The items of `items` whose key comes last, in their original order.
pub(super) fn last_per_key<'a, T, K: Eq + Hash>(
    items: &'a [T],
    key: impl Fn(&'a T) -> K,
) -> Vec<&'a T> {
    let mut last: HashMap<K, usize> = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        last.insert(key(item), i);
    }
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| last.get(&key(item)) == Some(i))
        .map(|(_, item)| item)
        .collect()
}

/// Profiles inserted or replaced, then moved `next_change_at`s. Returns
/// the profiles inserted: new people, whose values need no conflict check.
///
/// Those the step read (its `expected` versions) exist and are upserted as
/// before. The others are inserted if absent, and only those found present
/// (a sweep's or a job's profiles) are upserted after them.
pub(super) async fn profiles(
    c: &impl GenericClient,
    commit: &ProfileCommit,
) -> Result<Vec<String>> {
    let read: HashSet<&str> = commit.expected.iter().map(|(id, _)| id.as_str()).collect();
    let (known, unknown): (Vec<&ProfileRecord>, Vec<&ProfileRecord>) =
        last_per_key(&commit.profiles, |p| p.id.as_str())
            .into_iter()
            .partition(|p| read.contains(p.id.as_str()));
    let mut inserted: Vec<String> = Vec::new();
    let mut upsert = known;
    if !unknown.is_empty() {
        let (ids, docs, next) = columns(&unknown);
        inserted = c
            .query(
                "INSERT INTO profiles (id, doc, next_change_at)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
                 ON CONFLICT (id) DO NOTHING RETURNING id",
                &[&ids, &docs, &next],
            )
            .await
            .map_err(backend)?
            .iter()
            .map(|r| get(r, 0))
            .collect::<Result<_>>()?;
        let new: HashSet<&str> = inserted.iter().map(String::as_str).collect();
        upsert.extend(unknown.into_iter().filter(|p| !new.contains(p.id.as_str())));
    }
    if !upsert.is_empty() {
        let (ids, docs, next) = columns(&upsert);
        c.execute(
            "INSERT INTO profiles (id, doc, next_change_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
             ON CONFLICT (id) DO UPDATE
             SET doc = excluded.doc, next_change_at = excluded.next_change_at",
            &[&ids, &docs, &next],
        )
        .await
        .map_err(backend)?;
    }
    let moved = last_per_key(&commit.next_changes, |(id, _)| id.as_str());
    if !moved.is_empty() {
        let ids: Vec<&str> = moved.iter().map(|(id, _)| id.as_str()).collect();
        let ats: Vec<Option<i64>> = moved.iter().map(|(_, at)| at.map(ms)).collect();
        c.execute(
            "UPDATE profiles p SET next_change_at = k.at
             FROM unnest($1::text[], $2::bigint[]) AS k(id, at) WHERE p.id = k.id",
            &[&ids, &ats],
        )
        .await
        .map_err(backend)?;
    }
    Ok(inserted)
}

/// Ids, documents and next changes of `profiles`, as statement arrays.
fn columns<'a>(profiles: &[&'a ProfileRecord]) -> (Vec<&'a str>, Vec<&'a str>, Vec<Option<i64>>) {
    (
        profiles.iter().map(|p| p.id.as_str()).collect(),
        profiles.iter().map(|p| p.doc.as_str()).collect(),
        profiles.iter().map(|p| p.next_change_at.map(ms)).collect(),
    )
}

/// Bumps the version of every profile the step read, if none moved since
/// (see `partitions.rs`); false when one did (or is gone).
pub(super) async fn versions(c: &impl GenericClient, commit: &ProfileCommit) -> Result<bool> {
    let mut expected = last_per_key(&commit.expected, |(id, _)| id.as_str());
    if expected.is_empty() {
        return Ok(true);
    }
    // In id order, as every step locks them: two steps touching the same
    // profiles wait for each other rather than deadlock.
    expected.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let ids: Vec<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
    let versions: Vec<i64> = expected.iter().map(|(_, v)| *v).collect();
    let bumped = c
        .execute(
            "UPDATE profiles p SET version = p.version + 1
             FROM unnest($1::text[], $2::bigint[]) AS k(id, v)
             WHERE p.id = k.id AND p.version = k.v",
            &[&ids, &versions],
        )
        .await
        .map_err(backend)?;
    Ok(bumped == ids.len() as u64)
}

/// Identities inserted or repointed. With `checked`, those the step read
/// (its `identities_before`) are written only if they still point where
/// they did, or are still absent; false, writing nothing more, when one
/// moved.
pub(super) async fn identities(
    c: &impl GenericClient,
    commit: &ProfileCommit,
    checked: bool,
) -> Result<bool> {
    let identities = last_per_key(&commit.identities, |(identity, _)| identity.as_str());
    if identities.is_empty() {
        return Ok(true);
    }
    let before: HashMap<&str, Option<&str>> = if checked {
        commit
            .identities_before
            .iter()
            .map(|(i, p)| (i.as_str(), p.as_deref()))
            .collect()
    } else {
        HashMap::new()
    };
    let (mut fresh, mut moved, mut any) = (Vec::new(), Vec::new(), Vec::new());
    for (identity, profile) in identities {
        match before.get(identity.as_str()) {
            Some(None) => fresh.push((identity.as_str(), profile.as_str())),
            Some(Some(old)) => moved.push((identity.as_str(), profile.as_str(), *old)),
            None => any.push((identity.as_str(), profile.as_str())),
        }
    }
    if !fresh.is_empty() {
        let (keys, profiles): (Vec<&str>, Vec<&str>) = fresh.iter().copied().unzip();
        let n = c
            .execute(
                "INSERT INTO profile_identities (identity, profile_id)
                 SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (identity) DO NOTHING",
                &[&keys, &profiles],
            )
            .await
            .map_err(backend)?;
        if n != keys.len() as u64 {
            return Ok(false);
        }
    }
    if !moved.is_empty() {
        let keys: Vec<&str> = moved.iter().map(|m| m.0).collect();
        let profiles: Vec<&str> = moved.iter().map(|m| m.1).collect();
        let olds: Vec<&str> = moved.iter().map(|m| m.2).collect();
        let n = c
            .execute(
                "UPDATE profile_identities i SET profile_id = k.p
                 FROM unnest($1::text[], $2::text[], $3::text[]) AS k(i, p, old)
                 WHERE i.identity = k.i AND i.profile_id = k.old",
                &[&keys, &profiles, &olds],
            )
            .await
            .map_err(backend)?;
        if n != keys.len() as u64 {
            return Ok(false);
        }
    }
    if !any.is_empty() {
        let (keys, profiles): (Vec<&str>, Vec<&str>) = any.iter().copied().unzip();
        c.execute(
            "INSERT INTO profile_identities (identity, profile_id)
             SELECT * FROM unnest($1::text[], $2::text[])
             ON CONFLICT (identity) DO UPDATE SET profile_id = excluded.profile_id",
            &[&keys, &profiles],
        )
        .await
        .map_err(backend)?;
    }
    Ok(true)
}

/// Value changes, each key once (see `scheduled::apply`); `created` are
/// the profiles this transaction inserted.
pub(super) async fn values(
    c: &impl GenericClient,
    commit: &ProfileCommit,
    created: &[String],
) -> Result<()> {
    let changes: Vec<(String, String, Option<String>)> = last_per_key(&commit.values, |v| {
        (v.computation_id.as_str(), v.profile_id.as_str())
    })
    .into_iter()
    .map(|v| {
        (
            v.computation_id.clone(),
            v.profile_id.clone(),
            v.value.clone(),
        )
    })
    .collect();
    let fresh: HashSet<&str> = created.iter().map(String::as_str).collect();
    super::scheduled::apply(c, &changes, &fresh).await
}

#[cfg(test)]
mod tests {
    use super::last_per_key;

    #[test]
    fn keeps_the_last_item_of_each_key_in_order() {
        let items = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)];
        let kept: Vec<_> = last_per_key(&items, |(k, _)| *k);
        assert_eq!(kept, vec![&("a", 3), &("c", 4), &("b", 5)]);
    }
}
