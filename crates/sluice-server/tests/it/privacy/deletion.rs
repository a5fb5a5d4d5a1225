//! Delete notifications: one per destination however many affected sources
//! reach it, exact shape, signed; scope; running a regulation twice.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use super::{deletes, finished, hook, regulate, send, start, stored_mentions, wait_deletes};
use crate::support::eventually;

#[tokio::test]
async fn delete_only_notifies_each_destination_once_however_many_sources_reach_it() {
    let (s, _dir) = start().await;
    let (a, key_a) = s.source("a").await;
    let (b, key_b) = s.source("b").await;
    let (c, key_c) = s.source("c").await;
    let (rx_all, rx_ab) = (Receiver::start().await, Receiver::start().await);
    hook(&s, &[&a, &b, &c], &rx_all).await;
    hook(&s, &[&a, &b], &rx_ab).await;
    // u1 is seen on a by userId and on c only by an anonymousId that an
    // identify on a links to them; b only sees someone else.
    send(
        &s,
        &key_c,
        "track",
        json!({"anonymousId": "anon-1", "event": "Viewed"}),
    )
    .await;
    send(
        &s,
        &key_a,
        "identify",
        json!({"userId": "u1", "anonymousId": "anon-1"}),
    )
    .await;
    send(
        &s,
        &key_b,
        "track",
        json!({"userId": "u2", "event": "Viewed"}),
    )
    .await;
    eventually(15, || async {
        let (status, body) = s.admin(Method::GET, "/profiles/u1", None).await;
        (status == 200 && body.to_string().contains("anon-1")).then_some(())
    })
    .await;

    let id = regulate(&s, "DELETE_ONLY", &["u1"], None).await;
    let detail = finished(&s, &id).await;
    let mut expected = vec![a.clone(), c.clone()];
    expected.sort();
    assert_eq!(
        detail["subjectDetails"][0]["affectedSources"],
        json!(expected)
    );
    // One per destination; the one connected to both affected sources
    // names both.
    let notes = detail["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(notes.len(), 2, "{notes:?}");
    let mut sources: Vec<Value> = notes.iter().map(|n| n["source_ids"].clone()).collect();
    sources.sort_by_key(|v| v.as_array().map_or(0, Vec::len));
    assert_eq!(sources, [json!([a]), json!(expected)]);

    let to_all = wait_deletes(&rx_all, 1).await;
    assert_eq!(to_all.len(), 1, "one per destination: {to_all:?}");
    assert_eq!(wait_deletes(&rx_ab, 1).await.len(), 1);
    for body in &to_all {
        let keys: BTreeSet<&str> = body
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, BTreeSet::from(["type", "userId", "timestamp"]));
        assert_eq!(body["userId"], json!("u1"));
        assert!(body["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
    assert!(!stored_mentions(&s, &a, "u1").await);
    assert!(!stored_mentions(&s, &c, "anon-1").await);
    assert!(stored_mentions(&s, &b, "u2").await);
    assert_eq!(s.admin(Method::GET, "/profiles/u1", None).await.0, 404);
    let delivered: Value = eventually(15, || async {
        let detail = finished(&s, &id).await;
        let states: Vec<Value> = detail["notifications"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|n| n["state"].clone())
            .collect();
        states.iter().all(|st| st == "succeeded").then_some(detail)
    })
    .await;
    assert_eq!(delivered["subjects"], json!(1));
}

#[tokio::test]
async fn destinations_of_computed_traits_are_told_of_a_deletion_though_no_source_names_them() {
    let (s, _dir) = start().await;
    let (a, key) = s.source("a").await;
    let (rx_source, rx_traits) = (Receiver::start().await, Receiver::start().await);
    hook(&s, &[&a], &rx_source).await;
    let traits_only = hook(&s, &[], &rx_traits).await;
    let (status, body) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Orders", "destination_ids": [traits_only],
                        "definition": {"kind": "counter", "event": "Bought"}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    send(
        &s,
        &key,
        "track",
        json!({"userId": "u1", "event": "Bought"}),
    )
    .await;
    rx_traits
        .wait_for(1, std::time::Duration::from_secs(15))
        .await;

    let id = regulate(&s, "DELETE_ONLY", &["u1"], None).await;
    let detail = finished(&s, &id).await;
    assert_eq!(
        detail["subjectDetails"][0]["affectedSources"],
        json!(["personas", a])
    );
    let told = wait_deletes(&rx_traits, 1).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["userId"], json!("u1"));
    assert_eq!(wait_deletes(&rx_source, 1).await.len(), 1);
}

#[tokio::test]
async fn a_destination_of_a_source_and_a_computed_trait_is_told_of_a_deletion_once() {
    let (s, _dir) = start().await;
    let (a, key) = s.source("a").await;
    let rx = Receiver::start().await;
    let both = hook(&s, &[&a], &rx).await;
    let (status, body) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Orders", "destination_ids": [both],
                        "definition": {"kind": "counter", "event": "Bought"}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    send(
        &s,
        &key,
        "track",
        json!({"userId": "u1", "event": "Bought"}),
    )
    .await;
    // The call itself and the trait's identify.
    rx.wait_for(2, std::time::Duration::from_secs(15)).await;

    let id = regulate(&s, "DELETE_ONLY", &["u1"], None).await;
    let detail = finished(&s, &id).await;
    assert_eq!(
        detail["subjectDetails"][0]["affectedSources"],
        json!(["personas", a])
    );
    let told = wait_deletes(&rx, 1).await;
    assert_eq!(told.len(), 1, "one notification per destination: {told:?}");
    assert_eq!(told[0]["userId"], json!("u1"));
    let notes = detail["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["destination_id"], json!(both));
    assert_eq!(notes[0]["source_id"], json!(a));
    assert_eq!(notes[0]["source_ids"], json!(["personas", a]));
}

#[tokio::test]
async fn source_scoped_regulation_affects_only_that_source_and_a_rerun_changes_nothing() {
    let (s, _dir) = start().await;
    let (a, key_a) = s.source("a").await;
    let (b, key_b) = s.source("b").await;
    let rx = Receiver::start().await;
    hook(&s, &[&a, &b], &rx).await;
    send(&s, &key_a, "track", json!({"userId": "u1", "event": "A"})).await;
    send(&s, &key_b, "track", json!({"userId": "u1", "event": "B"})).await;

    let id = regulate(&s, "DELETE_ONLY", &["u1"], Some(&a)).await;
    let detail = finished(&s, &id).await;
    assert_eq!(detail["source_id"], json!(a));
    assert_eq!(detail["subjectDetails"][0]["affectedSources"], json!([a]));
    assert_eq!(wait_deletes(&rx, 1).await.len(), 1);
    assert!(!stored_mentions(&s, &a, "u1").await);
    assert!(stored_mentions(&s, &b, "u1").await);
    // The profile stays (it is workspace-wide) without a's calls.
    let sources: Vec<Value> = eventually(15, || async {
        let (status, profile) = s.admin(Method::GET, "/profiles/u1", None).await;
        let sources: Vec<Value> = profile["events"]
            .as_array()
            .map(|e| e.iter().map(|e| e["source_id"].clone()).collect())
            .unwrap_or_default();
        (status == 200 && !sources.is_empty()).then_some(sources)
    })
    .await;
    assert_eq!(sources, [json!(b)]);

    // The same regulation again finds nothing left: no second notification.
    let again = finished(&s, &regulate(&s, "DELETE_ONLY", &["u1"], Some(&a)).await).await;
    assert_eq!(again["subjectDetails"][0]["affectedSources"], json!([]));
    assert_eq!(again["notifications"], json!([]));
    assert_eq!(wait_deletes(&rx, 1).await.len(), 1);
    assert_eq!(deletes(&rx).len(), 1);
}

#[tokio::test]
async fn each_regulation_type_suppresses_purges_and_notifies_as_named() {
    let (s, _dir) = start().await;
    let (src, key) = s.source("app").await;
    let rx = Receiver::start().await;
    hook(&s, &[&src], &rx).await;
    // (type, suppressed after, purged, notified)
    let cases = [
        ("DELETE_ONLY", false, true, true),
        ("SUPPRESS_WITH_DELETE", true, true, true),
        ("SUPPRESS_ONLY", true, false, false),
        ("DELETE_INTERNAL", false, true, false),
        ("SUPPRESS_WITH_DELETE_INTERNAL", true, true, false),
    ];
    for (kind, ..) in cases {
        send(
            &s,
            &key,
            "track",
            json!({"userId": format!("user-{kind}"), "event": "E"}),
        )
        .await;
    }
    for (kind, suppressed, purged, notified) in cases {
        let user = format!("user-{kind}");
        let detail = finished(&s, &regulate(&s, kind, &[&user], None).await).await;
        assert_eq!(detail["regulationType"], json!(kind));
        let (_, list) = s.admin(Method::GET, "/suppressions", None).await;
        let listed = list["data"]
            .as_array()
            .is_some_and(|d| d.contains(&json!(user)));
        assert_eq!(listed, suppressed, "{kind} suppression");
        let quoted = format!("\"{user}\"");
        assert_eq!(
            !stored_mentions(&s, &src, &quoted).await,
            purged,
            "{kind} purge"
        );
        let notes = detail["notifications"].as_array().map_or(0, Vec::len);
        assert_eq!(notes, usize::from(notified), "{kind} notifications");
    }
    let sent = wait_deletes(&rx, 2).await;
    let users: BTreeSet<String> = sent.iter().map(|b| b["userId"].to_string()).collect();
    assert_eq!(
        users,
        BTreeSet::from([
            "\"user-DELETE_ONLY\"".to_string(),
            "\"user-SUPPRESS_WITH_DELETE\"".to_string()
        ])
    );
    // UNSUPPRESS lifts SUPPRESS_ONLY.
    finished(
        &s,
        &regulate(&s, "UNSUPPRESS", &["user-SUPPRESS_ONLY"], None).await,
    )
    .await;
    let (_, list) = s.admin(Method::GET, "/suppressions", None).await;
    assert!(!list.to_string().contains("user-SUPPRESS_ONLY"));
}

#[tokio::test]
async fn bad_regulation_requests_are_400s_naming_the_field() {
    let (s, _dir) = start().await;
    let many: Vec<String> = (0..5001).map(|i| format!("u{i}")).collect();
    let cases = [
        (
            json!({"regulationType": "DELETE_ONLY", "subjectIds": []}),
            "subjectIds",
        ),
        (
            json!({"regulationType": "DELETE_ONLY", "subjectIds": many}),
            "subjectIds",
        ),
        (
            json!({"regulationType": "FORGET_ME", "subjectIds": ["u"]}),
            "regulationType",
        ),
        (
            json!({"regulationType": "DELETE_ONLY", "subjectIds": ["u"], "source_id": "src_nope"}),
            "source_id",
        ),
        (
            json!({"regulationType": "DELETE_ONLY", "subjectType": "EMAIL", "subjectIds": ["u"]}),
            "subjectType",
        ),
        // A null in one spelling must not widen the other to every source.
        (
            json!({"regulationType": "DELETE_ONLY", "subjectIds": ["u"],
                   "source_id": null, "sourceId": "src_any"}),
            "source_id",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = s.admin(Method::POST, "/regulations", Some(body)).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["success"], json!(false));
        assert!(
            answer["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(field)),
            "{answer}"
        );
    }
    let (_, list) = s.admin(Method::GET, "/regulations", None).await;
    assert_eq!(list["data"], json!([]));
    assert_eq!(
        s.admin(Method::GET, "/regulations/reg_nope", None).await.0,
        404
    );
}
