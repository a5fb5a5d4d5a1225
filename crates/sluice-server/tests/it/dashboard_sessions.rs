//! Dashboard sessions over HTTP against the real server: sign-out holds
//! across a restart, and sign-in failures are slowed down.

use std::time::Duration;

use reqwest::header::{COOKIE, LOCATION, RETRY_AFTER};

use crate::dashboard::{client, cookie_named, hidden_csrf, session_cookie, set_cookies, sign_in};
use crate::support::{ADMIN_TOKEN, TestServer, test_config};

/// Signs out the session of `cookie` through the page's own form.
pub(crate) async fn sign_out(server: &TestServer, cookie: &str) {
    let http = client();
    let page = http
        .get(server.url("/"))
        .header(COOKIE, cookie)
        .send()
        .await
        .expect("overview");
    assert_eq!(page.status(), 200);
    let csrf = hidden_csrf(&page.text().await.expect("body"));
    let out = http
        .post(server.url("/signout"))
        .header(COOKIE, cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .expect("signout");
    assert_eq!(out.status(), 303);
    assert!(cookie_named(&set_cookies(&out), "sluice_session").contains("Max-Age=0"));
}

/// Whether `cookie` still opens the overview (200) or is sent to sign-in.
pub(crate) async fn accepted(server: &TestServer, cookie: &str) -> bool {
    let res = client()
        .get(server.url("/"))
        .header(COOKIE, cookie)
        .send()
        .await
        .expect("overview");
    match res.status().as_u16() {
        200 => true,
        303 => {
            assert_eq!(res.headers()[LOCATION], "/signin");
            false
        }
        other => panic!("unexpected status {other}"),
    }
}

#[tokio::test]
async fn a_signed_out_session_cookie_stays_refused_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_with(test_config(dir.path())).await;
    let kept = session_cookie(&server).await;
    let signed_out = session_cookie(&server).await;
    sign_out(&server, &signed_out).await;
    assert!(!accepted(&server, &signed_out).await);
    server.stop().await;

    let server = TestServer::start_with(test_config(dir.path())).await;
    assert!(
        !accepted(&server, &signed_out).await,
        "a restart must not bring a signed-out session back"
    );
    assert!(
        accepted(&server, &kept).await,
        "sessions not signed out survive the restart"
    );
    server.stop().await;
}

#[tokio::test]
async fn repeated_wrong_tokens_are_slowed_down_then_the_operator_gets_back_in() {
    let server = TestServer::start().await;
    for n in 1..=6 {
        let res = sign_in(&server, "wrong-token-0123456789", None).await;
        assert_eq!(res.status(), 401, "failure {n} is answered at once");
    }
    // Now this address must wait, whatever it sends: the right token too.
    let res = sign_in(&server, ADMIN_TOKEN, None).await;
    assert_eq!(res.status(), 429);
    let wait: u64 = res.headers()[RETRY_AFTER]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(
        !set_cookies(&res)
            .iter()
            .any(|c| c.starts_with("sluice_session="))
    );
    let html = res.text().await.expect("body");
    assert!(html.contains("Too many failed sign-ins: wait"), "{html}");
    assert!(html.contains("id=\"token-error\""), "{html}");
    // After the wait, the right token signs in.
    tokio::time::sleep(Duration::from_secs(wait)).await;
    let res = sign_in(&server, ADMIN_TOKEN, None).await;
    assert_eq!(res.status(), 303);
    server.stop().await;
}
