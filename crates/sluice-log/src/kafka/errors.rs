//! librdkafka's errors, sorted into [`LogError`]s.

use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};

use crate::LogError;

/// Sorts an error of an append that waited `waited`.
pub(super) fn append_error(error: &KafkaError, waited: Duration, bytes: usize) -> LogError {
    match error.rdkafka_error_code() {
        Some(code) if unavailable(code) => LogError::Unavailable {
            waited,
            reason: error.to_string(),
        },
        Some(RDKafkaErrorCode::MessageSizeTooLarge | RDKafkaErrorCode::InvalidMessageSize) => {
            LogError::TooLarge { bytes }
        }
        Some(RDKafkaErrorCode::Fatal) => LogError::Fatal(error.to_string()),
        _ => LogError::Client(error.to_string()),
    }
}

/// Sorts an error of the consumer or the admin client.
pub(super) fn client_error(error: &KafkaError) -> LogError {
    match error {
        KafkaError::ClientConfig(..) | KafkaError::ClientCreation(_) => {
            LogError::Config(error.to_string())
        }
        _ => match error.rdkafka_error_code() {
            Some(code) if unavailable(code) => LogError::Unavailable {
                waited: Duration::ZERO,
                reason: error.to_string(),
            },
            _ => LogError::Client(error.to_string()),
        },
    }
}

/// Codes after which the same request can succeed later.
fn unavailable(code: RDKafkaErrorCode) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        code,
        C::MessageTimedOut
            | C::OperationTimedOut
            | C::RequestTimedOut
            | C::AllBrokersDown
            | C::BrokerTransportFailure
            | C::BrokerNotAvailable
            | C::NetworkException
            | C::QueueFull
            | C::LeaderNotAvailable
            | C::NotLeaderForPartition
            | C::NotEnoughReplicas
            | C::NotEnoughReplicasAfterAppend
            | C::NotCoordinator
            | C::CoordinatorNotAvailable
            | C::CoordinatorLoadInProgress
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_and_missing_replicas_are_unavailability() {
        let waited = Duration::from_secs(3);
        for code in [
            RDKafkaErrorCode::MessageTimedOut,
            RDKafkaErrorCode::NotEnoughReplicas,
            RDKafkaErrorCode::AllBrokersDown,
        ] {
            let error = append_error(&KafkaError::MessageProduction(code), waited, 10);
            assert!(
                matches!(error, LogError::Unavailable { waited: w, .. } if w == waited),
                "{code:?}: {error:?}"
            );
        }
        let too_large = KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge);
        assert!(matches!(
            append_error(&too_large, waited, 10),
            LogError::TooLarge { bytes: 10 }
        ));
        let unknown = KafkaError::MessageProduction(RDKafkaErrorCode::TopicAuthorizationFailed);
        assert!(!append_error(&unknown, waited, 10).is_transient());
    }
}
