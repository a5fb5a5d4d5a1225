//! The network guard: blocked addresses are refused inside the connector,
//! after resolution, so neither an IP literal nor a name that resolves (or
//! re-resolves, DNS rebinding) to a blocked address gets a request out.

use sluice_store::DeliveryStore;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use sluice_delivery::DeliveryConfig;
use sluice_delivery::policy::Class;
use sluice_delivery::sender::resolver::{
    Answer, GuardedResolver, Lookup, LookupFuture, ResolveError,
};
use sluice_delivery::sender::{Job, Sender};
use sluice_outbound::NetworkPolicy;
use sluice_store::{DeliveryState, WebhookUrl};
use sluice_testkit::Receiver;

use crate::support::*;

/// A DNS server that answers from a script, one answer per lookup, the
/// last one repeated: a rebinding attacker's first answer is public.
struct Scripted {
    answers: Vec<IpAddr>,
    calls: AtomicUsize,
}

impl Scripted {
    fn new(answers: &[&str]) -> Arc<Self> {
        Arc::new(Scripted {
            answers: answers.iter().map(|a| a.parse().expect("ip")).collect(),
            calls: AtomicUsize::new(0),
        })
    }
}

impl Lookup for Scripted {
    fn lookup(&self, _host: &str) -> LookupFuture {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let ip = self.answers[n.min(self.answers.len() - 1)];
        Box::pin(async move { Ok(Answer::uncached(vec![ip])) })
    }
}

fn strict() -> DeliveryConfig {
    DeliveryConfig {
        network: NetworkPolicy::default(),
        ..fast_config()
    }
}

fn job() -> Job {
    Job {
        delivery_id: 1,
        attempt: 1,
        message_id: "m-guard".into(),
        body: Bytes::from_static(b"{}"),
        signature: None,
        standard: None,
        destination: None,
    }
}

#[tokio::test]
async fn rebinding_answer_is_refused_on_the_next_resolution() {
    let dns = Scripted::new(&["93.184.216.34", "127.0.0.1"]);
    let resolver = GuardedResolver::new(dns, NetworkPolicy::default());
    let first = resolver
        .resolve_allowed("rebind.example")
        .await
        .expect("public");
    assert_eq!(first, vec!["93.184.216.34".parse::<IpAddr>().expect("ip")]);
    match resolver.resolve_allowed("rebind.example").await {
        Err(ResolveError::Blocked(b)) => assert_eq!(b.range, "loopback"),
        other => panic!("rebound answer passed: {other:?}"),
    }
}

#[tokio::test]
async fn name_resolving_to_loopback_gets_no_request_and_is_permanent() {
    let receiver = Receiver::start().await;
    let port = receiver
        .url()
        .rsplit(':')
        .next()
        .map(str::to_owned)
        .expect("port");
    let dns = Scripted::new(&["127.0.0.1"]);
    let sender = Sender::with_lookup(&strict(), dns.clone()).expect("sender");
    let target = url(&format!("http://rebind.example:{port}"));
    let result = sender.send_one(&target, &job()).await;
    let error = result.attempt.error.clone().unwrap_or_default();
    assert!(
        error.contains("blocked") && error.contains("loopback"),
        "{error}"
    );
    assert_eq!(result.verdict.class, Class::Permanent);
    assert_eq!(
        dns.calls.load(Ordering::SeqCst),
        1,
        "the connector asked the resolver"
    );
    assert!(receiver.requests().is_empty(), "a request left the machine");
}

#[tokio::test]
async fn system_resolved_localhost_is_refused() {
    let receiver = Receiver::start().await;
    let port = receiver
        .url()
        .rsplit(':')
        .next()
        .map(str::to_owned)
        .expect("port");
    let sender = Sender::new(&strict()).expect("sender");
    for host in [
        "localhost",
        "127.0.0.1",
        "[::ffff:127.0.0.1]",
        "2130706433",
        "127.1",
    ] {
        let target = url(&format!("http://{host}:{port}"));
        let result = sender.send_one(&target, &job()).await;
        let error = result.attempt.error.clone().unwrap_or_default();
        assert!(error.contains("blocked"), "{host}: {error}");
    }
    assert!(receiver.requests().is_empty());
}

#[tokio::test]
async fn blocked_delivery_is_dead_after_one_round_and_never_retried() {
    let (_dir, store) = new_store().await;
    let receiver = Receiver::start().await;
    let dest = destination(&store, "internal", vec![url(&receiver.url())], None, true).await;
    let engine = Running::start(store.clone(), strict());
    append(&store, &[track("m-blocked")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-blocked", DeliveryState::Dead).await;
    assert_eq!(dead.attempts, 1);
    let reason = dead.last_error.unwrap_or_default();
    assert!(
        reason.contains("blocked") && reason.contains("loopback"),
        "{reason}"
    );
    let attempts = store.list_attempts(dead.id).await.expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].status, None);
    engine.stop().await;
    assert!(receiver.requests().is_empty(), "a request left the machine");
}

#[tokio::test]
async fn attempt_log_masks_url_credentials() {
    let (_dir, store) = new_store().await;
    let receiver = Receiver::start().await;
    let with_creds = receiver.url().replace("http://", "http://user:pa55word@");
    let dest = destination(&store, "creds", vec![url(&with_creds)], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-creds")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-creds", DeliveryState::Succeeded).await;
    engine.stop().await;
    let attempts = store.list_attempts(done.id).await.expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert!(
        attempts[0].url.contains("****:****@"),
        "{}",
        attempts[0].url
    );
    assert!(!attempts[0].url.contains("pa55word"));
    let got = receiver.requests();
    assert_eq!(got.len(), 1, "credentials still reach the receiver");
    // base64("user:pa55word"), sent as HTTP clients send URL credentials.
    assert_eq!(
        got[0].header("authorization"),
        Some("Basic dXNlcjpwYTU1d29yZA==")
    );
    assert!(!got[0].path.contains("pa55word"), "{}", got[0].path);
}

#[tokio::test]
async fn a_static_authorization_header_wins_over_url_credentials() {
    let (_dir, store) = new_store().await;
    let receiver = Receiver::start().await;
    let entry = WebhookUrl {
        url: receiver.url().replace("http://", "http://user:pa55word@"),
        headers: vec![("Authorization".into(), "Bearer tok-1".into())],
    };
    let dest = destination(&store, "creds", vec![entry], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-auth")], &[&dest]).await;
    engine.handle.notify();
    wait_state(&store, "m-auth", DeliveryState::Succeeded).await;
    engine.stop().await;
    let got = receiver.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("authorization"), Some("Bearer tok-1"));
    assert_eq!(got[0].headers.get_all("authorization").iter().count(), 1);
}
