//! Producing and reading as a consumer group: order, exactly once, commits.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use sluice_log::kafka::{ConsumedRecord, LogConsumer, LogProducer};
use sluice_log::partition_key;
use sluice_log::watermark::{Position, Read, Watermarks};

use crate::{event, fresh_topic, group};

/// Time enough for records that are there to arrive.
const ENOUGH: Duration = Duration::from_secs(60);

/// Polls until `count` records arrived or `within` passed, committing nothing.
async fn read(consumer: &LogConsumer, count: usize, within: Duration) -> Vec<ConsumedRecord> {
    let deadline = Instant::now() + within;
    let mut records = Vec::new();
    while records.len() < count && Instant::now() < deadline {
        let polled = consumer.poll(500, Duration::from_millis(500)).await;
        assert!(polled.error.is_none(), "{:?}", polled.error);
        for batch in polled.records {
            let offsets: Vec<i64> = batch.records.iter().map(|r| r.offset).collect();
            assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
            records.extend(batch.records);
        }
    }
    records
}

#[tokio::test]
async fn every_event_is_read_once_in_order_and_not_again_after_commit() {
    let config = fresh_topic(4).await;
    let producer = LogProducer::new(&config).unwrap();
    let persons: Vec<String> = (0..20).map(|i| format!("user-{i}")).collect();
    let events: Vec<_> = (0..300)
        .map(|seq| event("source-1", &persons[seq % persons.len()], seq))
        .collect();
    let mut appended = Vec::new();
    for chunk in events.chunks(100) {
        appended.extend(producer.append(chunk).await.unwrap());
    }
    assert_eq!(appended.len(), events.len());
    // A person's events share one partition.
    let mut partition_of = HashMap::new();
    for (event, at) in events.iter().zip(&appended) {
        let first = *partition_of.entry(&event.person).or_insert(at.partition);
        assert_eq!(first, at.partition, "{}", event.person);
    }
    let used: HashSet<i32> = appended.iter().map(|a| a.partition).collect();
    assert!(used.len() > 1, "20 persons all landed in one partition");

    let group = group();
    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    let records = read(&consumer, events.len(), ENOUGH).await;
    assert_eq!(records.len(), events.len());

    let mut seen = HashSet::new();
    let mut last_seq: HashMap<String, i64> = HashMap::new();
    let mut next_offsets: HashMap<i32, i64> = HashMap::new();
    for record in &records {
        assert!(
            seen.insert(record.message_id.clone()),
            "twice: {}",
            record.message_id
        );
        let body: serde_json::Value = serde_json::from_slice(&record.payload).unwrap();
        let person = body["userId"].as_str().unwrap().to_owned();
        let seq = body["properties"]["seq"].as_i64().unwrap();
        // Each person's events come in the order they were appended.
        let last = last_seq.insert(person.clone(), seq).unwrap_or(-1);
        assert!(seq > last, "{person}: {seq} after {last}");
        assert_eq!(record.key, partition_key("source-1", &person).into_bytes());
        assert_eq!(record.source_id, "source-1");
        assert_eq!(record.message_id, body["messageId"].as_str().unwrap());
        assert!(record.received_at.ends_with('Z'), "{}", record.received_at);
        let at = appended[usize::try_from(seq).unwrap()];
        assert_eq!((record.partition, record.offset), (at.partition, at.offset));
        next_offsets.insert(record.partition, record.offset + 1);
    }
    let positions: Vec<Position> = next_offsets
        .into_iter()
        .map(|(partition, offset)| Position {
            partition,
            offset,
            metadata: String::new(),
        })
        .collect();
    consumer.commit(&positions).await.unwrap();
    consumer.close().await;

    // A new member of the group starts where the commit left off.
    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    // Long enough to join the group and be handed every partition.
    let again = read(&consumer, 1, Duration::from_secs(8)).await;
    assert!(again.is_empty(), "redelivered after commit: {again:?}");
    let late = event("source-1", "user-late", 300);
    producer.append(std::slice::from_ref(&late)).await.unwrap();
    let after = read(&consumer, 2, Duration::from_secs(5)).await;
    let ids: Vec<&str> = after.iter().map(|r| r.message_id.as_str()).collect();
    assert_eq!(ids, vec![late.message_id.as_str()]);
    consumer.close().await;
}

#[tokio::test]
async fn records_not_committed_go_to_the_next_member_of_the_group() {
    let config = fresh_topic(2).await;
    let producer = LogProducer::new(&config).unwrap();
    let events: Vec<_> = (0..10)
        .map(|seq| event("source-2", "user-a", seq))
        .collect();
    producer.append(&events).await.unwrap();

    let group = group();
    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    let records = read(&consumer, 10, ENOUGH).await;
    assert_eq!(records.len(), 10);
    // The first five are dealt with and committed; the last five were read
    // but not, so they are not done.
    let fifth = &records[4];
    let position = Position {
        partition: fifth.partition,
        offset: fifth.offset + 1,
        metadata: String::new(),
    };
    consumer.commit(&[position]).await.unwrap();
    consumer.close().await;

    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    let records = read(&consumer, 6, Duration::from_secs(8)).await;
    let ids: Vec<&str> = records.iter().map(|r| r.message_id.as_str()).collect();
    let expected: Vec<&str> = events[5..].iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, expected);
    consumer.close().await;
}

#[tokio::test]
async fn a_new_member_learns_which_records_past_the_committed_offset_are_done() {
    let config = fresh_topic(1).await;
    let producer = LogProducer::new(&config).unwrap();
    let events: Vec<_> = (0..6).map(|seq| event("source-3", "user-a", seq)).collect();
    producer.append(&events).await.unwrap();

    let group = group();
    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    let records = read(&consumer, 6, ENOUGH).await;
    assert_eq!(records.len(), 6);
    let partition = records[0].partition;
    let mut marks = Watermarks::default();
    for r in &records {
        assert_eq!(marks.read(partition, r.offset), Read::New);
    }
    // The second record is slow; the four after it are done.
    for r in records.iter().skip(2) {
        marks.finished(partition, r.offset);
    }
    marks.finished(partition, records[0].offset);
    let positions = marks.to_commit();
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].offset, records[1].offset);
    consumer.commit(&positions).await.unwrap();
    consumer.close().await;

    // The broker kept the list beside the offset: a new member reads from
    // the slow record and skips the four.
    let consumer = LogConsumer::new(&config, &group, None).unwrap();
    let again = read(&consumer, 5, Duration::from_secs(8)).await;
    let (offset, metadata) = consumer.committed(partition).await.unwrap().unwrap();
    assert_eq!(offset, records[1].offset);
    let mut next = Watermarks::default();
    assert_eq!(next.inherit(partition, offset, &metadata), 4);
    let sent: Vec<&str> = again
        .iter()
        .filter(|r| next.read(partition, r.offset) != Read::Done)
        .map(|r| r.message_id.as_str())
        .collect();
    assert_eq!(sent, vec![events[1].message_id.as_str()]);
    consumer.close().await;
}
