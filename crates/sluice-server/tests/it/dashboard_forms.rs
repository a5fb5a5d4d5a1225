//! Dashboard forms over HTTP against the real server: what a form shown
//! again keeps, and what a form sent twice does.

use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::json;

use crate::dashboard::{client, hidden_csrf, session_cookie};
use crate::support::TestServer;

/// The page at `path` and its CSRF token.
async fn form_page(server: &TestServer, session: &str, path: &str) -> (String, String) {
    let page = client()
        .get(server.url(path))
        .header(COOKIE, session)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200, "{path}");
    let html = page.text().await.expect("body");
    let csrf = hidden_csrf(&html);
    (html, csrf)
}

async fn post(
    server: &TestServer,
    session: &str,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, String) {
    let res = client()
        .post(server.url(path))
        .header(COOKIE, session)
        .form(form)
        .send()
        .await
        .expect("post");
    (res.status().as_u16(), res.text().await.expect("body"))
}

#[tokio::test]
async fn a_refused_destination_form_keeps_its_secret_and_lists_every_error_in_form_order() {
    let server = TestServer::start().await;
    let session = session_cookie(&server).await;
    let (_, csrf) = form_page(&server, &session, "/destinations/new").await;
    let form = [
        ("csrf", csrf.as_str()),
        ("type", "Webhooks"),
        ("name", "hooks"),
        ("url0", "ftp://hooks.example/a"),
        ("secret", "topsecret-abcdef"),
    ];
    let (status, html) = post(&server, &session, "/destinations/new", &form).await;
    assert_eq!(status, 400);
    assert!(
        html.contains("must use the http or https protocol"),
        "{html}"
    );
    assert!(
        html.contains(r#"type="password" autocomplete="new-password" value="topsecret-abcdef""#),
        "the secret typed is given back: {html}"
    );

    let form = [
        ("csrf", csrf.as_str()),
        ("type", "Webhooks"),
        ("name", ""),
        ("url1", "ftp://x.example/"),
    ];
    let (status, html) = post(&server, &session, "/destinations/new", &form).await;
    assert_eq!(status, 400);
    let name = html
        .find("Name: must not be empty")
        .expect("the name's error");
    let url = html.find("URL 2: must use").expect("the URL's error");
    assert!(name < url, "the summary follows the form");
    let form = [("csrf", csrf.as_str()), ("type", "Webhooks"), ("name", "")];
    let (_, html) = post(&server, &session, "/destinations/new", &form).await;
    assert!(html.contains("Name: must not be empty"), "{html}");
    assert!(
        html.contains("URLs: enter at least one webhook URL"),
        "both at once: {html}"
    );
    let (_, listed) = server.admin(Method::GET, "/destinations", None).await;
    assert_eq!(listed["data"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_rotation_sent_twice_rotates_once_and_the_key_shown_keeps_working() {
    let server = TestServer::start().await;
    let (src, _) = server.source("web").await;
    let session = session_cookie(&server).await;
    let path = format!("/sources/{src}");
    let (html, csrf) = form_page(&server, &session, &path).await;
    let at = html
        .find(r#"name="key" value=""#)
        .expect("the key the form rotates")
        + 18;
    let shown = html[at..].split('"').next().unwrap_or("").to_owned();
    let form = [("csrf", csrf.as_str()), ("key", shown.as_str())];
    let rotate = format!("{path}/rotate-key");
    let (status, first) = post(&server, &session, &rotate, &form).await;
    assert_eq!(status, 200);
    let at = first.find(r#"id="write-key">"#).expect("the new key") + 15;
    let key = first[at..].split('<').next().unwrap_or("").to_owned();
    assert!(
        first.contains(&format!("-u '{key}:'")),
        "a curl command with the key"
    );
    assert!(
        !first.contains("<this server>"),
        "the command names this server"
    );

    // The same form again, as a reload of the page that showed the key sends it.
    let (status, again) = post(&server, &session, &rotate, &form).await;
    assert_eq!(status, 409);
    assert!(again.contains("was not rotated again"), "{again}");
    let call = json!({"userId": "u1", "event": "Still Works"}).to_string();
    assert_eq!(server.collect("/v1/track", Some(&key), call).await.0, 200);
    server.stop().await;
}

#[tokio::test]
async fn a_creation_sent_twice_creates_one_source_and_leads_to_it() {
    let server = TestServer::start().await;
    let session = session_cookie(&server).await;
    let (html, csrf) = form_page(&server, &session, "/sources").await;
    let at = html
        .find(r#"name="id" value=""#)
        .expect("the id the form creates")
        + 17;
    let id = html[at..].split('"').next().unwrap_or("").to_owned();
    assert!(id.starts_with("src_"), "{id}");
    let form = [
        ("csrf", csrf.as_str()),
        ("id", id.as_str()),
        ("name", "web"),
    ];
    let (status, first) = post(&server, &session, "/sources", &form).await;
    assert_eq!(status, 200);
    assert!(first.contains(r#"id="write-key">"#), "the key, once");

    // The same form again, as a reload of the page that showed the key sends it.
    let res = client()
        .post(server.url("/sources"))
        .header(COOKIE, &session)
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), 303);
    let to = res.headers()[reqwest::header::LOCATION]
        .to_str()
        .expect("ascii");
    assert_eq!(to, format!("/sources/{id}?again=1"));
    let (shown, _) = form_page(&server, &session, to).await;
    assert!(shown.contains("This source was already created"), "{shown}");
    assert!(
        !shown.contains(r#"id="write-key">"#),
        "the key is not shown again"
    );
    let (_, listed) = server.admin(Method::GET, "/sources", None).await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "{listed}");

    // A form without a drawn id (or a forged one) still creates a source.
    for forged in ["", "src_short", "dst_AAAAAAAAAAAAAAAA"] {
        let form = [("csrf", csrf.as_str()), ("id", forged), ("name", "app")];
        let (status, _) = post(&server, &session, "/sources", &form).await;
        assert_eq!(status, 200, "{forged:?}");
    }
    let (_, listed) = server.admin(Method::GET, "/sources", None).await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(4), "{listed}");
    server.stop().await;
}

#[tokio::test]
async fn a_destination_page_shows_standard_webhooks_signing_when_it_is_on() {
    let server = TestServer::start().await;
    let (src, _) = server.source("web").await;
    let dst = server
        .webhook(&src, json!(["https://hooks.example/a"]), None)
        .await;
    let (status, body) = server
        .admin(
            Method::PATCH,
            &format!("/destinations/{dst}"),
            Some(json!({"settings": {"standardWebhooks": {"secret": "generate"}}})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let session = session_cookie(&server).await;
    let (html, _) = form_page(&server, &session, &format!("/destinations/{dst}")).await;
    assert!(html.contains(r#"id="standard-webhooks""#), "{html}");
    assert!(!html.contains("requests are not signed"), "{html}");
    server.stop().await;
}
