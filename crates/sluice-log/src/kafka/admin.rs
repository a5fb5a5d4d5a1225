//! Creating the event topic.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;

use super::{KafkaConfig, errors, millis};
use crate::LogError;

/// Creates `config.topic` with `partitions` partitions, each on
/// `replication` brokers, unless it exists (whatever its shape then).
/// Records are kept for `retention` (`retention.ms`).
pub async fn ensure_topic(
    config: &KafkaConfig,
    partitions: i32,
    replication: i32,
    retention: Duration,
) -> Result<(), LogError> {
    let admin: AdminClient<DefaultClientContext> = config
        .client_config()
        .create()
        .map_err(|e| errors::client_error(&e))?;
    let retention_ms = millis(retention);
    let topic = NewTopic::new(
        &config.topic,
        partitions,
        TopicReplication::Fixed(replication),
    )
    .set("retention.ms", &retention_ms);
    let options = AdminOptions::new().operation_timeout(Some(config.ack_timeout));
    let results = admin
        .create_topics([&topic], &options)
        .await
        .map_err(|e| errors::client_error(&e))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => {
                return Err(LogError::Client(format!("creating topic {name}: {code}")));
            }
        }
    }
    Ok(())
}
