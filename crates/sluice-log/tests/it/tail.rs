//! The debugger's reader: a source's records among each partition's newest.

use std::collections::HashSet;

use sluice_log::kafka::{LogProducer, LogTail, TAIL_DEPTH};

use crate::{event, fresh_topic};

#[tokio::test]
async fn finds_a_sources_newest_records_in_every_partition_and_no_others() {
    let config = fresh_topic(3).await;
    let producer = LogProducer::new(&config).unwrap();
    let mut events = Vec::new();
    for person in 0..6 {
        for seq in 0..3 {
            events.push(event("source-a", &format!("user-{person}"), seq));
            events.push(event("source-b", &format!("user-{person}"), seq));
        }
    }
    let appended = producer.append(&events).await.unwrap();
    let partitions: HashSet<i32> = appended.iter().map(|a| a.partition).collect();
    assert!(partitions.len() > 1, "the calls span partitions");

    let tail = LogTail::new(&config).unwrap();
    let found = tail.newest("source-a").await.unwrap();
    let mut ids: Vec<&str> = found.iter().map(|r| r.message_id.as_str()).collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = events
        .iter()
        .filter(|e| e.source_id == "source-a")
        .map(|e| e.message_id.as_str())
        .collect();
    expected.sort_unstable();
    assert_eq!(ids, expected);
    assert!(tail.newest("source-c").await.unwrap().is_empty());
}

#[tokio::test]
async fn looks_only_at_the_newest_records_of_a_partition() {
    let config = fresh_topic(1).await;
    let producer = LogProducer::new(&config).unwrap();
    let old = event("source-quiet", "user-q", 0);
    producer.append(std::slice::from_ref(&old)).await.unwrap();
    let depth = usize::try_from(TAIL_DEPTH).unwrap();
    let busy: Vec<_> = (0..depth)
        .map(|seq| event("source-busy", "user-b", seq))
        .collect();
    producer.append(&busy).await.unwrap();

    let tail = LogTail::new(&config).unwrap();
    assert!(
        tail.newest("source-quiet").await.unwrap().is_empty(),
        "past the depth looked at"
    );
    assert_eq!(tail.newest("source-busy").await.unwrap().len(), depth);
}
