//! Semantic checks of a decoded definition (pure).
//!
//! Every refusal names the field by its JSON path under `definition`, in
//! the form the decoder's refusals use (`definition.condition.and[1]
//! .performed.window`): the condition's operator is a segment of the path,
//! as it is a key of the JSON.

use crate::definition::{Condition, Definition, Performed, TraitDefinition, TraitKind};
use crate::error::DefinitionError;
use crate::filter::{Filter, check_property_path};

/// Checks what the decoder cannot: required fields, windows, property
/// paths, comparisons, and fields a kind or operator does not read.
pub(crate) fn definition(d: &Definition) -> Result<(), DefinitionError> {
    match d {
        Definition::Trait(t) => computed_trait(t),
        Definition::Audience(a) => condition("definition.condition", &a.condition),
    }
}

fn computed_trait(t: &TraitDefinition) -> Result<(), DefinitionError> {
    if t.event.trim().is_empty() {
        return Err(DefinitionError::new(
            "definition.event",
            "must not be empty",
        ));
    }
    // An empty property is no property (the dashboard sends the field as
    // typed); a counter reads none, so one given is refused, not ignored.
    let property = t.property.as_deref().filter(|p| !p.trim().is_empty());
    match (t.kind, property) {
        (TraitKind::Counter, Some(_)) => {
            return Err(DefinitionError::new(
                "definition.property",
                "is not read by a counter, which counts events: leave it out",
            ));
        }
        (TraitKind::Counter, None) => {}
        (_, Some(p)) => check_property_path("definition.property", p)?,
        (_, None) => {
            return Err(DefinitionError::new(
                "definition.property",
                "is required for this kind",
            ));
        }
    }
    filters("definition.where", &t.filters)?;
    if let Some(w) = &t.window {
        w.check("definition.window")?;
    }
    Ok(())
}

fn filters(field: &str, filters: &[Filter]) -> Result<(), DefinitionError> {
    for (i, f) in filters.iter().enumerate() {
        f.check(&format!("{field}[{i}]"))?;
    }
    Ok(())
}

/// Checks the condition at `field` (the path of its JSON object).
fn condition(field: &str, c: &Condition) -> Result<(), DefinitionError> {
    match c {
        Condition::And(items) => list(&format!("{field}.and"), items),
        Condition::Or(items) => list(&format!("{field}.or"), items),
        Condition::Not(inner) => condition(&format!("{field}.not"), inner),
        Condition::Performed(p) => performed(&format!("{field}.performed"), p),
        Condition::NotPerformed(p) => {
            let field = format!("{field}.not_performed");
            if p.count.is_some() {
                return Err(DefinitionError::new(
                    &format!("{field}.count"),
                    "is not allowed: not_performed holds when no matching event was \
                     performed (in the window); use performed with a count",
                ));
            }
            performed(&field, p)
        }
        Condition::Trait(cmp) => cmp.check(&format!("{field}.trait")),
        Condition::ComputedTrait(cmp) => cmp.check(&format!("{field}.computed_trait")),
        Condition::Audience(key) => {
            if key.trim().is_empty() {
                return Err(DefinitionError::new(
                    &format!("{field}.audience"),
                    "must not be empty",
                ));
            }
            Ok(())
        }
    }
}

/// An `and`/`or` list at `field`.
fn list(field: &str, items: &[Condition]) -> Result<(), DefinitionError> {
    if items.is_empty() {
        return Err(DefinitionError::new(field, "needs at least one condition"));
    }
    for (i, item) in items.iter().enumerate() {
        condition(&format!("{field}[{i}]"), item)?;
    }
    Ok(())
}

/// A `performed` or `not_performed` object at `field`.
fn performed(field: &str, p: &Performed) -> Result<(), DefinitionError> {
    if !["track", "page", "screen"].contains(&p.kind.as_str()) {
        return Err(DefinitionError::new(
            &format!("{field}.type"),
            "must be track, page or screen",
        ));
    }
    if p.kind == "track" && p.event.as_deref().is_none_or(|e| e.trim().is_empty()) {
        return Err(DefinitionError::new(
            &format!("{field}.event"),
            "is required",
        ));
    }
    filters(&format!("{field}.where"), &p.filters)?;
    if let Some(w) = &p.window {
        w.check(&format!("{field}.window"))?;
    }
    Ok(())
}

/// Which references [`reference_field`] looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refers {
    ComputedTrait,
    Audience,
}

/// The JSON path of the first `computed_trait` (or `audience`) condition
/// under `c` (at `field`) that names `key`.
pub(crate) fn reference_field(c: &Condition, field: &str, key: &str, to: Refers) -> Option<String> {
    let within = |op: &str, items: &[Condition]| {
        items
            .iter()
            .enumerate()
            .find_map(|(i, item)| reference_field(item, &format!("{field}.{op}[{i}]"), key, to))
    };
    match c {
        Condition::And(items) => within("and", items),
        Condition::Or(items) => within("or", items),
        Condition::Not(inner) => reference_field(inner, &format!("{field}.not"), key, to),
        Condition::ComputedTrait(cmp) if to == Refers::ComputedTrait && cmp.key == key => {
            Some(format!("{field}.computed_trait.key"))
        }
        Condition::Audience(k) if to == Refers::Audience && k == key => {
            Some(format!("{field}.audience"))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
