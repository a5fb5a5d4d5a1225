//! Collection calls take a direct lane past the router (`sluice_api::app`).
//! A path the lane does not take as written (percent-encoded) still reaches
//! the same handler through the router, so the two lanes can be compared
//! request by request.

use serde_json::json;

use crate::support::{TestServer, basic, metric};

/// Status, headers (less `date`) and body of one answer.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

async fn send(s: &TestServer, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let mut req = s.http.post(s.url(path)).body(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let r = req.send().await.expect("collection request");
    let status = r.status().as_u16();
    // Sorted: where hyper or axum places `content-length` differs, and
    // the order of distinct fields carries no meaning in HTTP.
    let mut head: Vec<(String, String)> = r
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str() != "date")
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    head.sort();
    (status, head, r.bytes().await.expect("body").to_vec())
}

/// One request sent down both lanes: the same headers, and bodies that
/// differ only in their messageIds.
struct Case<'a> {
    what: &'a str,
    direct: &'a str,
    routed: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    bodies: (Vec<u8>, Vec<u8>),
}

impl<'a> Case<'a> {
    fn new(
        what: &'a str,
        direct: &'a str,
        routed: &'a str,
        headers: Vec<(&'a str, &'a str)>,
    ) -> Self {
        Case {
            what,
            direct,
            routed,
            headers,
            bodies: (Vec::new(), Vec::new()),
        }
    }

    fn bodies(self, direct: Vec<u8>, routed: Vec<u8>) -> Self {
        Case {
            bodies: (direct, routed),
            ..self
        }
    }
}

#[tokio::test]
async fn collection_calls_answer_alike_down_the_direct_lane_and_the_router() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let auth = basic(&key);
    let call = |id: &str| {
        json!({"type": "track", "userId": "u1", "event": "Signed Up", "messageId": id})
            .to_string()
            .into_bytes()
    };
    let batch = |id: &str| {
        json!({"batch": [{"type": "track", "userId": "u1", "event": "Signed Up", "messageId": id}]})
            .to_string()
            .into_bytes()
    };
    let origin = ("origin", "https://shop.example");
    let signed = ("authorization", auth.as_str());
    let wrong = ("authorization", "Basic d3Jvbmc6");
    let cases = [
        Case::new("accepted", "/v1/track", "/v1/%74rack", vec![signed])
            .bodies(call("a1"), call("a2")),
        Case::new(
            "accepted from a browser",
            "/v1/t",
            "/v1/%74",
            vec![signed, origin],
        )
        .bodies(call("b1"), call("b2")),
        Case::new("a batch", "/v1/batch", "/v1/b%61tch", vec![signed])
            .bodies(batch("c1"), batch("c2")),
        // Segment's Java library posts its batches here.
        Case::new(
            "analytics-java's path",
            "/v1/import/",
            "/v1/imp%6frt/",
            vec![signed],
        )
        .bodies(batch("f1"), batch("f2")),
        Case::new(
            "invalid JSON",
            "/v1/track",
            "/v1/%74rack",
            vec![signed, origin],
        )
        .bodies(b"{".to_vec(), b"{".to_vec()),
        Case::new("a wrong key", "/v1/track", "/v1/%74rack", vec![wrong])
            .bodies(call("d1"), call("d2")),
        Case::new("no key", "/v1/identify", "/v1/identif%79", vec![])
            .bodies(call("e1"), call("e2")),
    ];
    for Case {
        what,
        direct,
        routed,
        headers,
        bodies: (direct_body, routed_body),
    } in cases
    {
        let a = send(&s, direct, &headers, direct_body).await;
        let b = send(&s, routed, &headers, routed_body).await;
        assert_eq!(a, b, "{what}: {direct} and {routed} answer differently");
        let cors =
            a.1.iter()
                .any(|(k, v)| k == "access-control-allow-credentials" && v == "true");
        assert!(
            cors,
            "{what}: CORS headers on every collection answer: {:?}",
            a.1
        );
        let mirrored = a.1.iter().any(|(k, _)| k == "access-control-allow-origin");
        assert_eq!(mirrored, headers.contains(&origin), "{what}: {:?}", a.1);
    }
    let stored = s.events(&src).await;
    assert_eq!(stored.len(), 8, "both lanes store: {stored:?}");
    let text = s.metrics().await;
    let counted = |status: &str| {
        metric(
            &text,
            &format!("sluice_http_requests_total{{path=\"/v1/{{kind}}\",status=\"{status}\"}}"),
        )
    };
    assert_eq!(counted("200"), 6.0);
    let slash = r#"sluice_http_requests_total{path="/v1/{kind}/",status="200"}"#;
    assert_eq!(
        metric(&text, slash),
        2.0,
        "both lanes count the trailing slash alike"
    );
    assert_eq!(counted("400"), 2.0);
    assert_eq!(counted("401"), 4.0);
}
