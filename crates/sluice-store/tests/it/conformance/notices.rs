//! Delete notifications: a destination reached through several of the
//! subject's sources is told once, with every source on record.

use super::regulation_job::profile_of_u1;
use super::regulations::{TTL, regulation};
use super::support::{Shared, at, deliveries_to, new_destination, source};
use sluice_store::{NewComputation, RegulationCommit, SubjectPurge};

pub async fn a_destination_reached_through_several_sources_is_notified_once(store: Shared) {
    source(&store, "src_a").await;
    source(&store, "src_b").await;
    for (id, sources) in [
        ("dst_a", &["src_a"][..]),
        ("dst_both", &["src_a", "src_b"][..]),
        ("dst_p", &[][..]),
    ] {
        store
            .create_destination(new_destination(id, sources))
            .await
            .expect("destination");
    }
    store
        .create_computation(NewComputation {
            id: "ct_1".into(),
            class: "trait".into(),
            key: "orders".into(),
            name: "Orders".into(),
            definition: r#"{"kind":"counter","event":"Bought"}"#.into(),
            destination_ids: vec!["dst_both".into(), "dst_p".into()],
        })
        .await
        .expect("computation");
    profile_of_u1(&store, r#"{"userIds":["u1"]}"#, &["src_a", "src_b"]).await;
    store
        .create_regulation(regulation("reg_1", "DELETE_ONLY", &["u1"], None, true))
        .await
        .expect("create");
    assert!(
        store
            .take_regulation_lease("job", at(2), TTL)
            .await
            .expect("job lease")
    );
    let purge = SubjectPurge {
        subject_id: "u1".into(),
        event_seqs: Vec::new(),
        profile_ids: vec!["prf_u1".into()],
        affected_sources: vec!["personas".into(), "src_a".into(), "src_b".into()],
    };
    let committed = store
        .commit_regulation(RegulationCommit {
            owner: "job".into(),
            regulation_id: "reg_1".into(),
            now: at(3),
            subjects: vec![purge],
        })
        .await
        .expect("purge");
    assert!(committed);
    let detail = store
        .get_regulation("reg_1")
        .await
        .expect("get")
        .expect("found");
    let mut sent: Vec<(&str, &str, Vec<&str>)> = detail
        .notifications
        .iter()
        .map(|n| {
            let sources = n.source_ids.iter().map(String::as_str).collect();
            (n.destination_id.as_str(), n.source_id.as_str(), sources)
        })
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("dst_a", "src_a", vec!["src_a"]),
            ("dst_both", "src_a", vec!["personas", "src_a", "src_b"]),
            ("dst_p", "personas", vec!["personas"]),
        ]
    );
    assert_eq!(
        deliveries_to(&store, "dst_both").await.len(),
        1,
        "told once"
    );
}
