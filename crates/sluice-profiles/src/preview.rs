//! A definition evaluated over the stored profiles without saving it.

use chrono::Utc;
use serde_json::Value;
use sluice_store::Store;

use crate::compute::{Evaluation, evaluate};
use crate::definition::Definition;
use crate::engine::Defs;
use crate::error::ProfileError;
use crate::profile::Profile;

/// Profiles a preview looks at, at most.
pub const MAX_SCANNED: usize = 100_000;
const SAMPLE: usize = 10;

/// How many people would have a value (audiences: be members), and a few.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    pub count: u64,
    pub scanned: u64,
    /// (profile id, userId, value).
    pub sample: Vec<(String, Option<String>, Value)>,
}

pub async fn preview(
    store: &dyn Store,
    key: &str,
    definition: &Definition,
) -> Result<Preview, ProfileError> {
    // Only what the definition refers to (its inputs) is evaluated with it.
    let defs = Defs::new(
        crate::refs::closure(store, definition, key).await?,
        String::new(),
    );
    let now = Utc::now().timestamp_millis();
    let mut out = Preview::default();
    let mut after = String::new();
    while (out.scanned as usize) < MAX_SCANNED {
        let ids = store.profile_ids_after(&after, 500).await?;
        let Some(last) = ids.last().cloned() else {
            break;
        };
        for r in store.load_profiles(ids, true).await? {
            let Ok(p) = Profile::from_record(&r, None) else {
                continue;
            };
            out.scanned += 1;
            let mut eval = Evaluation::default();
            for i in &defs.items {
                evaluate(&i.c.key, &i.d, &p, now, &mut eval);
            }
            if let Some(v) = evaluate(key, definition, &p, now, &mut eval) {
                out.count += 1;
                if out.sample.len() < SAMPLE {
                    out.sample.push((r.id, p.user_id().map(str::to_owned), v));
                }
            }
        }
        after = last;
    }
    Ok(out)
}
