//! Many definitions: an event evaluates only the definitions it can
//! change, and the definition lists (API and dashboard) are paged.

use std::collections::BTreeSet;

use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use super::{create, setup, track, wait_bodies};
use crate::dashboard::{client, session_cookie};
use crate::support::{TestServer, eventually, metric};

async fn evaluations(s: &TestServer) -> f64 {
    metric(&s.metrics().await, "sluice_profile_evaluations_total")
}

#[tokio::test]
async fn an_event_evaluates_only_the_definitions_reading_its_name_or_traits() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/computed-traits",
        json!({"name": "Orders", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Order Completed"}}),
    )
    .await;
    for n in 0..10 {
        create(
            &s,
            "/computed-traits",
            json!({"name": format!("Other {n}"), "destination_ids": [dest],
                   "definition": {"kind": "counter", "event": format!("Other {n}")}}),
        )
        .await;
        create(
            &s,
            "/audiences",
            json!({"name": format!("Plan {n}"), "destination_ids": [dest],
                   "definition": {"condition": {"trait": {"key": format!("plan_{n}"),
                                                          "op": "equals", "value": "pro"}}}}),
        )
        .await;
    }
    // Every definition's first computation (over nobody yet) is done.
    eventually(10, || async {
        let mut done = 0;
        for path in ["/computed-traits", "/audiences"] {
            let (_, list) = s.admin(Method::GET, path, None).await;
            done += list["data"]
                .as_array()?
                .iter()
                .filter(|c| !c["status"]["last_computed_at"].is_null())
                .count();
        }
        let text = s.metrics().await;
        (done == 21 && metric(&text, "sluice_profile_definitions") == 21.0).then_some(())
    })
    .await;
    track(&s, &key, "u1", "Order Completed", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"orders": 1}));
    // A known person's next order: the one counter reading it, no other.
    let before = evaluations(&s).await;
    track(&s, &key, "u1", "Order Completed", json!({})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"orders": 2}));
    assert_eq!(evaluations(&s).await - before, 1.0);
    // A trait nobody compares, and an event nobody counts: nothing at all.
    let before = evaluations(&s).await;
    let call = json!({"userId": "u1", "traits": {"age": 30}});
    let (code, _) = s
        .collect("/v1/identify", Some(&key), call.to_string())
        .await;
    assert_eq!(code, 200);
    track(&s, &key, "u1", "Page Scrolled", json!({})).await;
    eventually(10, || async {
        let (_, p) = s.admin(Method::GET, "/profiles/u1", None).await;
        (p["traits"]["age"] == json!(30) && p["events"].as_array().map(Vec::len) == Some(3))
            .then_some(())
    })
    .await;
    assert_eq!(evaluations(&s).await - before, 0.0);
    // The trait one audience compares: that audience alone.
    let call = json!({"userId": "u1", "traits": {"plan_3": "pro"}});
    s.collect("/v1/identify", Some(&key), call.to_string())
        .await;
    let got = wait_bodies(&rx, 3).await;
    assert_eq!(got[2]["traits"], json!({"plan_3": true}));
    assert_eq!(evaluations(&s).await - before, 1.0);
    s.stop().await;
}

#[tokio::test]
async fn a_new_person_joins_an_audience_of_people_without_an_event_they_never_sent() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/audiences",
        json!({"name": "Never Refunded", "destination_ids": [dest],
               "definition": {"condition": {"not_performed": {"event": "Refund"}}}}),
    )
    .await;
    track(&s, &key, "u1", "Order Completed", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"never_refunded": true}));
    track(&s, &key, "u1", "Refund", json!({})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"never_refunded": false}));
    s.stop().await;
}

/// Every id of `path`, walked `limit` at a time; also checks `total`.
async fn walk(s: &TestServer, path: &str, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = String::new();
    loop {
        let (code, page) = s
            .admin(Method::GET, &format!("{path}?limit={limit}{after}"), None)
            .await;
        assert_eq!(code, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit);
        ids.extend(data.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
        match page["next_after"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn definition_lists_are_paged_and_a_cursor_walk_returns_each_once() {
    let (s, _dir, _key, _dest, _rx) = setup().await;
    let mut made = Vec::new();
    for n in 0..7 {
        let c = create(
            &s,
            "/computed-traits",
            json!({"name": format!("Count {n}"),
                   "definition": {"kind": "counter", "event": format!("E{n}")}}),
        )
        .await;
        made.push(c["id"].as_str().unwrap().to_owned());
    }
    create(
        &s,
        "/audiences",
        json!({"name": "Buyers", "definition": {"condition": {"performed": {"event": "E1"}}}}),
    )
    .await;
    for limit in [1, 2, 3, 7] {
        assert_eq!(
            walk(&s, "/computed-traits", limit).await,
            made,
            "limit {limit}"
        );
    }
    // Without `limit`: the first 100, so a client that never pages sees all of these.
    let (_, all) = s.admin(Method::GET, "/computed-traits", None).await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(7));
    assert_eq!(
        (all["total"].clone(), all["next_after"].clone()),
        (json!(7), Value::Null)
    );
    let (_, audiences) = s.admin(Method::GET, "/audiences", None).await;
    assert_eq!(audiences["total"], json!(1));
    // A definition deleted mid-walk leaves the rest of the walk intact.
    let (_, first) = s.admin(Method::GET, "/computed-traits?limit=3", None).await;
    let cursor = first["next_after"].as_str().unwrap().to_owned();
    s.admin(Method::DELETE, &format!("/computed-traits/{cursor}"), None)
        .await;
    let (_, rest) = s
        .admin(
            Method::GET,
            &format!("/computed-traits?limit=10&after={cursor}"),
            None,
        )
        .await;
    let rest: Vec<&str> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rest,
        made[3..].iter().map(String::as_str).collect::<Vec<_>>()
    );
    for bad in ["limit=0", "limit=1001", "limit=x"] {
        let (code, body) = s
            .admin(Method::GET, &format!("/audiences?{bad}"), None)
            .await;
        assert_eq!(
            (code, body["code"].clone()),
            (400, json!("invalid_query")),
            "{bad}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn the_dashboard_lists_definitions_a_page_at_a_time() {
    let (s, _dir, _key, _dest, _rx) = setup().await;
    for n in 0..51 {
        create(
            &s,
            "/audiences",
            json!({"name": format!("Group {n:02}"),
                   "definition": {"condition": {"performed": {"event": "E"}}}}),
        )
        .await;
    }
    let cookie = session_cookie(&s).await;
    let http = client();
    let get = |path: String| {
        let req = http.get(s.url(&path)).header(COOKIE, cookie.clone());
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    let first = get("/audiences".into()).await;
    assert!(first.contains("51 in all"), "{first}");
    let names = |html: &str| -> BTreeSet<String> {
        (0..51)
            .map(|n| format!("Group {n:02}"))
            .filter(|name| html.contains(&format!(">{name}<")))
            .collect()
    };
    assert_eq!(names(&first).len(), 50);
    let next = first
        .split("href=\"?after=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a next page link")
        .to_owned();
    let second = get(format!("/audiences?after={next}")).await;
    assert_eq!(names(&second).len(), 1);
    assert!(names(&first).is_disjoint(&names(&second)));
    assert!(!second.contains("href=\"?after="));
    s.stop().await;
}

#[tokio::test]
async fn sources_and_destinations_are_paged_the_same_way() {
    let (s, _dir, _key, dest, _rx) = setup().await;
    let (third, _) = s.source("third").await;
    let sources = walk(&s, "/sources", 2).await;
    let distinct: BTreeSet<&String> = sources.iter().collect();
    assert_eq!(
        (sources.len(), distinct.len()),
        (3, 3),
        "app, quiet, third once each"
    );
    assert!(distinct.contains(&third));
    assert_eq!(walk(&s, "/destinations", 1).await, [dest]);
    let (_, all) = s.admin(Method::GET, "/sources", None).await;
    assert_eq!(
        (all["total"].clone(), all["next_after"].clone()),
        (json!(3), Value::Null)
    );
    s.stop().await;
}

#[tokio::test]
async fn the_dashboard_lists_sources_a_page_at_a_time() {
    let (s, _dir, _key, _dest, _rx) = setup().await;
    for n in 0..99 {
        s.source(&format!("Site {n:02}")).await;
    }
    let cookie = session_cookie(&s).await;
    let http = client();
    let get = |path: String| {
        let req = http.get(s.url(&path)).header(COOKIE, cookie.clone());
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    // With app and quiet from the set-up: 101 sources, 100 a page.
    let first = get("/sources".into()).await;
    assert!(first.contains("101 in all"), "{first}");
    let names = |html: &str| -> BTreeSet<String> {
        (0..99)
            .map(|n| format!("Site {n:02}"))
            .filter(|name| html.contains(&format!(">{name}<")))
            .collect()
    };
    let next = first
        .split("href=\"/sources?after=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a next page link")
        .to_owned();
    let second = get(format!("/sources?after={next}")).await;
    assert_eq!(names(&first).len() + names(&second).len(), 99);
    assert!(names(&first).is_disjoint(&names(&second)));
    assert!(second.contains("First page"));
    assert!(!second.contains("?after="), "no page after the last");
    s.stop().await;
}
