//! `DefinitionStore`: definitions by page, key,
//! id and change version.

use super::support::Shared;
use sluice_store::{ComputationPage, ComputationPatch, NewComputation};

fn new(id: &str, class: &str) -> NewComputation {
    NewComputation {
        id: id.into(),
        class: class.into(),
        key: format!("key_{id}"),
        name: id.into(),
        definition: r#"{"kind":"counter","event":"E"}"#.into(),
        destination_ids: Vec::new(),
    }
}

pub async fn definition_changes_are_read_once_each_by_version(store: Shared) {
    let (start, all) = store.computations_changed(-1).await.expect("changed");
    assert!(all.is_empty());
    for id in ["c1", "c2", "c3"] {
        store
            .create_computation(new(id, "trait"))
            .await
            .expect("create");
    }
    let (v1, created) = store.computations_changed(start).await.expect("changed");
    let ids: Vec<&str> = created.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"], "in change order");
    assert!(v1 > start);
    let (same, none) = store.computations_changed(v1).await.expect("changed");
    assert_eq!((same, none.len()), (v1, 0), "nothing changed");
    let patch = ComputationPatch {
        definition: Some(r#"{"kind":"counter","event":"F"}"#.into()),
        ..ComputationPatch::default()
    };
    store.update_computation("c2", patch).await.expect("update");
    store.delete_computation("c3").await.expect("delete");
    let (v2, changed) = store.computations_changed(v1).await.expect("changed");
    let ids: Vec<(&str, bool)> = changed
        .iter()
        .map(|c| (c.id.as_str(), c.deleted_at.is_some()))
        .collect();
    assert_eq!(ids, [("c2", false), ("c3", true)]);
    assert!(v2 > v1);
    assert_eq!(changed[0].revision, 2);
}

pub async fn a_cursor_walk_lists_every_live_definition_of_a_class_once(store: Shared) {
    for n in 0..7 {
        let class = if n % 2 == 0 { "audience" } else { "trait" };
        store
            .create_computation(new(&format!("d{n}"), class))
            .await
            .expect("create");
    }
    store.delete_computation("d2").await.expect("delete");
    assert_eq!(
        store.count_computations("audience").await.expect("count"),
        3
    );
    assert_eq!(store.count_computations("trait").await.expect("count"), 3);
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = ComputationPage {
            class: "audience".into(),
            after: after.clone(),
            limit: 2,
        };
        let rows = store.computations_page(page).await.expect("page");
        seen.extend(rows.iter().map(|c| c.id.clone()));
        match rows.last() {
            Some(last) if rows.len() == 2 => after = Some(last.id.clone()),
            _ => break,
        }
    }
    assert_eq!(seen, ["d0", "d4", "d6"], "creation order, deleted left out");
    let unknown = ComputationPage {
        class: "audience".into(),
        after: Some("nothing".into()),
        limit: 10,
    };
    assert!(
        store
            .computations_page(unknown)
            .await
            .expect("page")
            .is_empty()
    );
    let by_key = store
        .computations_by_key(vec!["key_d1".into(), "key_d2".into(), "key_x".into()])
        .await
        .expect("by key");
    let keys: Vec<&str> = by_key.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["key_d1"], "live ones only");
    let by_id = store
        .computations_by_id(vec!["d2".into(), "d3".into()])
        .await
        .expect("by id");
    assert_eq!(by_id.len(), 2, "deleted ones too");
}
