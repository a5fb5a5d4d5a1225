use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A name server that answers after `delay`, counting the questions.
struct Counting {
    calls: AtomicUsize,
    delay: Duration,
    answer: Result<Answer, LookupError>,
}

impl Counting {
    fn new(delay: Duration, answer: Result<Answer, LookupError>) -> Arc<Self> {
        Arc::new(Counting {
            calls: AtomicUsize::new(0),
            delay,
            answer,
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Lookup for Counting {
    fn lookup(&self, _host: &str) -> LookupFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (delay, answer) = (self.delay, self.answer.clone());
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }
}

fn nxdomain() -> Result<Answer, LookupError> {
    Err(LookupError::NoSuchHost("x.invalid".into()))
}

#[tokio::test]
async fn concurrent_lookups_of_one_host_share_one_question() {
    let dns = Counting::new(Duration::from_millis(50), nxdomain());
    let cached = CachingLookup::new(dns.clone());
    let all = futures::future::join_all((0..200).map(|_| cached.lookup("x.invalid"))).await;
    assert!(all.iter().all(|r| *r == nxdomain()));
    assert_eq!(dns.calls(), 1);
}

#[tokio::test]
async fn a_failure_is_answered_from_memory_without_asking_again() {
    let dns = Counting::new(Duration::ZERO, nxdomain());
    let cached = CachingLookup::new(dns.clone());
    assert_eq!(cached.lookup("x.invalid").await, nxdomain());
    assert_eq!(cached.lookup("X.invalid.").await, nxdomain());
    assert_eq!(dns.calls(), 1);
    assert_eq!(cached.lookup("y.invalid").await, nxdomain());
    assert_eq!(dns.calls(), 2, "per host");
}

#[tokio::test]
async fn an_answer_without_ttl_is_asked_again() {
    let ip = "93.184.216.34".parse().expect("ip");
    let dns = Counting::new(Duration::ZERO, Ok(Answer::uncached(vec![ip])));
    let cached = CachingLookup::new(dns.clone());
    for _ in 0..3 {
        assert_eq!(
            cached.lookup("hooks.example").await.expect("ok").addrs,
            vec![ip]
        );
    }
    assert_eq!(dns.calls(), 3);
}

#[tokio::test]
async fn a_hanging_name_server_costs_one_question_and_times_out() {
    let dns = Counting::new(Duration::from_secs(3600), nxdomain());
    let cached = CachingLookup::with_timeout(dns.clone(), Duration::from_millis(100));
    let waiting = futures::future::join_all((0..50).map(|_| cached.lookup("slow.example"))).await;
    assert_eq!(dns.calls(), 1);
    for outcome in waiting {
        assert_eq!(outcome, Err(LookupError::TimedOut("slow.example".into())));
    }
    // Remembered: the next send fails at once, without a new question.
    assert!(cached.lookup("slow.example").await.is_err());
    assert_eq!(dns.calls(), 1);
}
