//! Request bodies of computed traits and audiences, checked. Each failure is
//! a 400 naming the field.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use sluice_profiles::definition::find_cycle;
use sluice_profiles::key::{MAX_KEY_CHARS, derive_key, is_snake_case};
use sluice_profiles::refs::closure;
use sluice_profiles::{AUDIENCE, Definition};
use sluice_store::{Computation, Store};

use crate::admin::extract::{opt_field, required_name};
use crate::error::{ApiError, ApiResult};

/// A body's definition, checked against the store (sources, destinations,
/// referenced audiences, cycles).
pub async fn definition(
    store: &dyn Store,
    class: &str,
    key: &str,
    body: &Map<String, Value>,
    existing_id: Option<&str>,
) -> ApiResult<Definition> {
    let raw = body
        .get("definition")
        .ok_or_else(|| ApiError::invalid("definition", "is required"))?;
    let def = Definition::parse(class, raw).map_err(|e| ApiError::invalid(&e.field, e.message))?;
    let sources = match &def {
        Definition::Trait(t) => &t.source_ids,
        Definition::Audience(a) => &a.source_ids,
    };
    for s in sources {
        if store.get_source(s).await?.is_none() {
            return Err(ApiError::invalid(
                "definition.source_ids",
                format!("unknown source {s:?}"),
            ));
        }
    }
    if class == AUDIENCE {
        check_graph(store, key, &def, existing_id).await?;
    }
    Ok(def)
}

/// Referenced audiences and computed traits must exist, and the audience
/// graph must stay acyclic. Only the definitions this one refers to
/// (directly or through others) are read, by key: a check costs the same
/// with 10 definitions or 10,000.
async fn check_graph(
    store: &dyn Store,
    key: &str,
    def: &Definition,
    existing_id: Option<&str>,
) -> ApiResult<()> {
    let reached: Vec<Computation> = closure(store, def, key)
        .await?
        .into_iter()
        .filter(|c| Some(c.id.as_str()) != existing_id)
        .collect();
    let (live, traits): (Vec<&Computation>, Vec<&Computation>) =
        reached.iter().partition(|c| c.class == AUDIENCE);
    if let Some(missing) = def
        .computed_trait_refs()
        .into_iter()
        .find(|r| !traits.iter().any(|t| &t.key == r))
    {
        return Err(ApiError::invalid(
            &def.computed_trait_ref_field(&missing),
            format!("computed trait {missing:?} does not exist"),
        ));
    }
    let mut refs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in &live {
        if let Ok(d) = Definition::from_stored(&c.class, &c.definition) {
            refs.insert(c.key.clone(), d.audience_refs());
        }
    }
    let mine = def.audience_refs();
    for r in &mine {
        if r != key && !refs.contains_key(r) {
            return Err(ApiError::invalid(
                &def.audience_ref_field(r),
                format!("audience {r:?} does not exist"),
            ));
        }
    }
    refs.insert(key.to_owned(), mine);
    if let Some(cycle) = find_cycle(&refs) {
        return Err(ApiError::invalid(
            "definition.condition",
            format!(
                "audiences would refer to each other in a cycle: {}",
                cycle.join(" -> ")
            ),
        ));
    }
    Ok(())
}

/// The key: given (must be snake_case) or the snake_case of the name.
pub fn key(body: &Map<String, Value>, name: &str) -> ApiResult<String> {
    match opt_field(body, "key", Value::as_str, "a string")? {
        Some(k) if is_snake_case(k) => Ok(k.to_owned()),
        Some(k) if k.len() > MAX_KEY_CHARS => Err(ApiError::invalid(
            "key",
            format!("must be at most {MAX_KEY_CHARS} characters"),
        )),
        Some(_) => Err(ApiError::invalid(
            "key",
            "must be snake_case: lower-case letters, digits and _, starting with a letter",
        )),
        // A name that gives no key says why: no letter to start it, or a
        // key longer than a key may be.
        None => derive_key(name).map_err(|e| ApiError::invalid("name", e)),
    }
}

pub fn name(body: &Map<String, Value>) -> ApiResult<String> {
    required_name(body, "name")
}

/// `destination_ids`: existing Webhooks destinations.
pub async fn destinations(
    store: &dyn Store,
    body: &Map<String, Value>,
) -> ApiResult<Option<Vec<String>>> {
    let Some(list) = opt_field(body, "destination_ids", Value::as_array, "an array of ids")? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for v in list {
        let id = v
            .as_str()
            .ok_or_else(|| ApiError::invalid("destination_ids", "must be an array of ids"))?;
        if store.get_destination(id).await?.is_none() {
            return Err(ApiError::invalid(
                "destination_ids",
                format!("unknown destination {id:?}"),
            ));
        }
        out.push(id.to_owned());
    }
    Ok(Some(out))
}
