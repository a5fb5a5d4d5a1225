//! The dashboard over HTTP against the real server: security headers,
//! cookie flags, CSRF and sign-out. (The pages themselves are exercised in a
//! real browser: `browser/tests/dashboard.test.mjs` and
//! `dashboard-features.test.mjs`.)

use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Client, Response, redirect};

use crate::support::{ADMIN_TOKEN, TestServer, test_config};

pub(crate) fn client() -> Client {
    Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .expect("client")
}

pub(crate) fn set_cookies(res: &Response) -> Vec<String> {
    res.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect()
}

pub(crate) fn cookie_named(cookies: &[String], name: &str) -> String {
    cookies
        .iter()
        .find(|c| c.starts_with(&format!("{name}=")))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} cookie in {cookies:?}"))
}

/// `name=value` of a Set-Cookie line.
pub(crate) fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap_or("").to_owned()
}

pub(crate) fn hidden_csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("csrf field") + 19;
    html[at..].split('"').next().unwrap_or("").to_owned()
}

/// Signs in with `token`; returns the response (cookies not followed).
pub(crate) async fn sign_in(server: &TestServer, token: &str, proto: Option<&str>) -> Response {
    let http = client();
    let mut get = http.get(server.url("/signin"));
    if let Some(p) = proto {
        get = get.header("x-forwarded-proto", p);
    }
    let form = get.send().await.expect("signin page");
    let signin_cookie = pair(&cookie_named(&set_cookies(&form), "sluice_signin"));
    let csrf = hidden_csrf(&form.text().await.expect("body"));
    let mut post = http
        .post(server.url("/signin"))
        .header(COOKIE, signin_cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("token", token),
            ("next", "/sources"),
        ]);
    if let Some(p) = proto {
        post = post.header("x-forwarded-proto", p);
    }
    post.send().await.expect("signin")
}

pub(crate) async fn session_cookie(server: &TestServer) -> String {
    let res = sign_in(server, ADMIN_TOKEN, None).await;
    assert_eq!(res.status(), 303);
    pair(&cookie_named(&set_cookies(&res), "sluice_session"))
}

#[tokio::test]
async fn every_dashboard_page_sends_a_csp_and_pages_need_a_session() {
    let server = TestServer::start().await;
    let http = client();
    for path in ["/", "/signin", "/sources", "/assets/dashboard.js"] {
        let res = http.get(server.url(path)).send().await.expect("get");
        let csp = res
            .headers()
            .get(CONTENT_SECURITY_POLICY)
            .unwrap_or_else(|| panic!("{path} has no CSP"));
        let csp = csp.to_str().expect("ascii");
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    }
    let res = http.get(server.url("/sources")).send().await.expect("get");
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()[LOCATION], "/signin?next=%2Fsources");
    // The APIs keep their JSON 404 for unknown paths.
    let res = http.get(server.url("/nope")).send().await.expect("get");
    assert_eq!(res.status(), 404);
    assert!(
        res.text()
            .await
            .expect("body")
            .contains("\"code\":\"not_found\"")
    );
    server.stop().await;
}

#[tokio::test]
async fn a_page_path_that_does_not_parse_is_the_dashboards_404_page() {
    let server = TestServer::start().await;
    let http = client();
    let cookie = session_cookie(&server).await;
    for path in [
        "/sources/%FF",
        "/sources/%FF/schema",
        "/destinations/%C3%28",
        "/destinations/%FF/deliveries",
        "/regulations/%FF",
        "/audiences/%FF",
    ] {
        let res = http
            .get(server.url(path))
            .header(COOKIE, &cookie)
            .send()
            .await
            .expect("get");
        assert_eq!(res.status(), 404, "{path}");
        let kind = res.headers()[reqwest::header::CONTENT_TYPE].clone();
        assert!(
            kind.to_str().expect("ascii").starts_with("text/html"),
            "{path}: {kind:?}"
        );
        assert!(
            res.headers().contains_key(CONTENT_SECURITY_POLICY),
            "{path}"
        );
        let html = res.text().await.expect("body");
        assert!(html.contains("<code>not_found</code>"), "{path}: {html}");
        assert!(
            !html.contains("UTF-8"),
            "{path}: axum's message leaked: {html}"
        );
    }
    // Without a session the sign-in redirect still comes first.
    let res = http
        .get(server.url("/sources/%FF"))
        .send()
        .await
        .expect("get");
    assert_eq!(res.status(), 303);
    server.stop().await;
}

#[tokio::test]
async fn a_wrong_admin_token_is_refused_with_the_admin_api_message() {
    let server = TestServer::start().await;
    let res = sign_in(&server, "wrong-token-0123456789", None).await;
    assert_eq!(res.status(), 401);
    assert!(
        !set_cookies(&res)
            .iter()
            .any(|c| c.starts_with("sluice_session="))
    );
    assert!(
        res.text()
            .await
            .expect("body")
            .contains("invalid admin token")
    );
    server.stop().await;
}

#[tokio::test]
async fn session_cookie_is_httponly_and_samesite_strict_and_secure_only_over_https() {
    let server = TestServer::start().await;
    let res = sign_in(&server, ADMIN_TOKEN, None).await;
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()[LOCATION], "/sources");
    let cookie = cookie_named(&set_cookies(&res), "sluice_session");
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.contains("; SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("; Path=/"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    // An untrusted X-Forwarded-Proto changes nothing.
    let res = sign_in(&server, ADMIN_TOKEN, Some("https")).await;
    assert!(!cookie_named(&set_cookies(&res), "sluice_session").contains("Secure"));
    server.stop().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.trust_forwarded_for = true;
    let server = TestServer::start_with(config).await;
    let res = sign_in(&server, ADMIN_TOKEN, Some("https")).await;
    let cookie = cookie_named(&set_cookies(&res), "sluice_session");
    assert!(cookie.ends_with("; Secure"), "{cookie}");
    server.stop().await;
}

#[tokio::test]
async fn state_changing_forms_need_the_session_csrf_token() {
    let server = TestServer::start().await;
    let session = session_cookie(&server).await;
    let http = client();
    let page = http
        .get(server.url("/sources"))
        .header(COOKIE, &session)
        .send()
        .await
        .expect("sources");
    assert_eq!(page.status(), 200);
    let csrf = hidden_csrf(&page.text().await.expect("body"));
    for forged in [None, Some("0123"), Some("")] {
        let mut form = vec![("name", "evil")];
        if let Some(f) = forged {
            form.push(("csrf", f));
        }
        let res = http
            .post(server.url("/sources"))
            .header(COOKIE, &session)
            .form(&form)
            .send()
            .await
            .expect("post");
        assert_eq!(res.status(), 403, "{forged:?}");
        assert!(
            res.text()
                .await
                .expect("body")
                .contains("CSRF check failed")
        );
    }
    let (_, sources) = server.admin(reqwest::Method::GET, "/sources", None).await;
    assert_eq!(sources["data"].as_array().expect("data").len(), 0);
    let res = http
        .post(server.url("/sources"))
        .header(COOKIE, &session)
        .form(&[("name", "web"), ("csrf", csrf.as_str())])
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), 200);
    assert!(res.text().await.expect("body").contains("id=\"write-key\""));
    let (_, sources) = server.admin(reqwest::Method::GET, "/sources", None).await;
    assert_eq!(sources["data"][0]["name"], "web");
    server.stop().await;
}

#[tokio::test]
async fn the_later_feature_forms_refuse_a_post_without_the_session_csrf_token() {
    let server = TestServer::start().await;
    let session = session_cookie(&server).await;
    let (_, src) = server
        .admin(
            reqwest::Method::POST,
            "/sources",
            Some(serde_json::json!({"name": "web"})),
        )
        .await;
    let (_, dst) = server
        .admin(
            reqwest::Method::POST,
            "/destinations",
            Some(serde_json::json!({"name": "hooks"})),
        )
        .await;
    let (src, dst) = (
        src["id"].as_str().expect("source id"),
        dst["id"].as_str().expect("destination id"),
    );
    let http = client();
    let posts = [
        (
            format!("/sources/{src}/rules/block"),
            vec![("list", "blocked_events"), ("name", "E"), ("block", "1")],
        ),
        (
            format!("/sources/{src}/rules/plan"),
            vec![("enabled", "1"), ("events", "E")],
        ),
        (
            format!("/destinations/{dst}/filters"),
            vec![
                ("name", "f"),
                ("action", "drop_fields"),
                ("fields", "properties.x"),
            ],
        ),
        (
            "/regulations".to_owned(),
            vec![("regulationType", "SUPPRESS_ONLY"), ("subjectIds", "u1")],
        ),
        (
            "/computed-traits/new".to_owned(),
            vec![
                ("intent", "save"),
                ("name", "N"),
                ("kind", "counter"),
                ("event", "E"),
            ],
        ),
        (
            "/audiences/new".to_owned(),
            vec![("intent", "save"), ("name", "A"), ("performed", "E")],
        ),
    ];
    for (path, form) in &posts {
        let res = http
            .post(server.url(path))
            .header(COOKIE, &session)
            .form(&[form.as_slice(), &[("csrf", "forged")]].concat())
            .send()
            .await
            .expect("post");
        assert_eq!(res.status(), 403, "{path}");
    }
    let (_, rules) = server
        .admin(reqwest::Method::GET, &format!("/sources/{src}/rules"), None)
        .await;
    assert_eq!(rules["blocked_events"], serde_json::json!([]));
    assert_eq!(rules["tracking_plan"]["enabled"], false);
    let (_, filters) = server
        .admin(
            reqwest::Method::GET,
            &format!("/destinations/{dst}/filters"),
            None,
        )
        .await;
    assert_eq!(filters["filters"], serde_json::json!([]));
    for list in [
        "/regulations",
        "/computed-traits",
        "/audiences",
        "/suppressions",
    ] {
        let (_, out) = server.admin(reqwest::Method::GET, list, None).await;
        assert_eq!(out["data"], serde_json::json!([]), "{list}");
    }
    server.stop().await;
}
