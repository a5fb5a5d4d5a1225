//! The admin API's delivery lists searched as the dashboard's delivery log
//! is: by time window, by what the call carries (type, event or page name,
//! userId or anonymousId) and by what its URLs answered (a status, a class,
//! or `error`), with a cursor that goes on where the reading stopped. Run
//! on SQLite, and on PostgreSQL with `postgres-tests`.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sluice_testkit::{Receiver, Reply};

use crate::support::{TestServer, eventually};

/// `(message_id, destination_id)` of every delivery a query lists,
/// following `next_before` to the end; and the pages it took.
async fn all(s: &TestServer, query: &str) -> (Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let mut before: Option<i64> = None;
    let mut pages = 0;
    loop {
        let cursor = before.map_or(String::new(), |b| format!("&before={b}"));
        let (status, body) = s
            .admin(Method::GET, &format!("{query}{cursor}"), None)
            .await;
        assert_eq!(status, 200, "{query}: {body}");
        pages += 1;
        for d in body["data"].as_array().unwrap() {
            out.push((
                d["message_id"].as_str().unwrap().to_owned(),
                d["destination_id"].as_str().unwrap().to_owned(),
            ));
        }
        match body["next_before"].as_i64() {
            Some(b) => before = Some(b),
            None => return (out, pages),
        }
        assert!(pages < 50, "{query} does not end");
    }
}

async fn messages(s: &TestServer, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = all(s, query).await.0.into_iter().map(|(m, _)| m).collect();
    ids.sort();
    ids
}

async fn refused(s: &TestServer, query: &str) -> String {
    let (status, body) = s.admin(Method::GET, query, None).await;
    assert_eq!(status, 400, "{query}: {body}");
    assert_eq!(body["code"], json!("invalid_query"), "{query}");
    body["message"].as_str().unwrap().to_owned()
}

async fn searches_by_window_call_and_status(s: TestServer) {
    let (src, key) = s.source("web").await;
    let ok = Receiver::start().await;
    let bad = Receiver::start().await;
    bad.set_default(Reply::status(400));
    let dst_ok = s.webhook(&src, json!([ok.url()]), None).await;
    let dst_bad = s.webhook(&src, json!([bad.url()]), None).await;
    // Nothing listens on port 1: every attempt is a connection error.
    let dst_down = s
        .webhook(&src, json!(["http://127.0.0.1:1/hook"]), None)
        .await;
    let started = chrono::Utc::now() - chrono::TimeDelta::seconds(2);
    for (path, call) in [
        (
            "/v1/track",
            json!({"userId": "u1", "event": "Order Completed", "messageId": "m-track"}),
        ),
        (
            "/v1/identify",
            json!({"userId": "u2", "messageId": "m-identify"}),
        ),
        (
            "/v1/page",
            json!({"anonymousId": "a3", "name": "Home", "messageId": "m-page"}),
        ),
    ] {
        assert_eq!(s.collect(path, Some(&key), call.to_string()).await.0, 200);
    }
    // Every delivery tried at least once; the good and bad ones finished.
    eventually(20, || async {
        let (_, body) = s.admin(Method::GET, "/deliveries?limit=500", None).await;
        let list = body["data"].as_array().cloned().unwrap_or_default();
        let settled = list.len() == 9
            && list.iter().all(|d| {
                d["attempts"].as_u64().unwrap_or(0) >= 1
                    && (d["destination_id"] == json!(dst_down) || d["state"] != json!("pending"))
            });
        settled.then_some(())
    })
    .await;
    ok.wait_for(3, Duration::from_secs(5)).await;

    let m = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        messages(&s, "/deliveries?type=track").await,
        m(&["m-track"; 3])
    );
    assert_eq!(
        messages(&s, "/deliveries?event=Order%20Completed").await,
        m(&["m-track"; 3])
    );
    assert_eq!(
        messages(&s, "/deliveries?event=Home").await,
        m(&["m-page"; 3]),
        "a page's name"
    );
    assert_eq!(
        messages(&s, "/deliveries?user=u2").await,
        m(&["m-identify"; 3])
    );
    assert_eq!(
        messages(&s, "/deliveries?user=a3").await,
        m(&["m-page"; 3]),
        "an anonymousId"
    );
    let by_status = |q: &'static str| {
        let s = &s;
        async move {
            let mut d: Vec<String> = all(s, q).await.0.into_iter().map(|(_, d)| d).collect();
            d.dedup();
            d
        }
    };
    assert_eq!(
        by_status("/deliveries?status=400").await,
        [dst_bad.as_str()]
    );
    assert_eq!(
        by_status("/deliveries?status=4xx").await,
        [dst_bad.as_str()]
    );
    assert_eq!(by_status("/deliveries?status=2xx").await, [dst_ok.as_str()]);
    assert_eq!(
        by_status("/deliveries?status=error").await,
        [dst_down.as_str()]
    );
    assert!(by_status("/deliveries?status=5xx").await.is_empty());
    assert_eq!(
        all(&s, "/deliveries?type=track&status=4xx").await.0,
        [("m-track".to_owned(), dst_bad.clone())]
    );
    assert_eq!(
        all(&s, "/deliveries?state=dead&type=identify").await.0,
        [("m-identify".to_owned(), dst_bad.clone())]
    );
    assert_eq!(
        messages(&s, &format!("/destinations/{dst_bad}/deliveries?user=u1")).await,
        m(&["m-track"])
    );

    // The time window is on each delivery's last change.
    assert_eq!(all(&s, "/deliveries?since=1h").await.0.len(), 9);
    let before_start = started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(
        all(&s, &format!("/deliveries?until={before_start}"))
            .await
            .0
            .is_empty()
    );
    assert!(all(&s, "/deliveries?since=2099-01-01").await.0.is_empty());
    assert_eq!(
        all(&s, "/deliveries?since=2020-01-01T00:00&until=2099-01-01")
            .await
            .0
            .len(),
        9
    );

    // A page of one at a time: the cursor goes on where the reading stopped.
    let (one_by_one, pages) = all(&s, "/deliveries?type=page&limit=1").await;
    assert_eq!(one_by_one.len(), 3);
    assert!(pages >= 3, "{pages} pages");

    assert!(
        refused(&s, "/deliveries?status=7xx")
            .await
            .starts_with("status: '7xx' is not a status")
    );
    assert!(
        refused(&s, "/deliveries?since=yesterday")
            .await
            .starts_with("since: ")
    );
    let two = refused(
        &s,
        &format!("/destinations/{dst_ok}/deliveries?until=soon&status=abc"),
    )
    .await;
    assert!(two.contains("until: ") && two.contains("status: "), "{two}");
    s.stop().await;
}

#[tokio::test]
async fn the_delivery_lists_search_by_window_call_and_status_on_sqlite() {
    searches_by_window_call_and_status(TestServer::start().await).await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_lists_search_by_window_call_and_status_on_postgres() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = crate::postgres::unique_schema();
    let s = TestServer::start_with(crate::postgres::pg_config(dir.path(), &schema)).await;
    searches_by_window_call_and_status(s).await;
}
