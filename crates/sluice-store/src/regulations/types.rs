//! Records of regulations and suppressions.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Input to [`crate::RegulationStore::create_regulation`].
#[derive(Debug, Clone)]
pub struct NewRegulation {
    pub id: String,
    /// `DELETE_ONLY`, `SUPPRESS_WITH_DELETE`, … (checked by the caller).
    pub regulation_type: String,
    /// Distinct user ids, in request order.
    pub subject_ids: Vec<String>,
    /// `None`: every source.
    pub source_id: Option<String>,
    /// `Some(true)` suppresses the subjects, `Some(false)` lifts it, both in
    /// the same transaction that saves the regulation.
    pub suppress: Option<bool>,
    /// Whether the job purges data (then it also notifies when `notify`).
    pub purge: bool,
    pub notify: bool,
    pub now: DateTime<Utc>,
}

/// A regulation as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regulation {
    pub id: String,
    pub regulation_type: String,
    pub source_id: Option<String>,
    /// `INITIALIZED`, `RUNNING`, `FINISHED` or `FAILED`.
    pub status: String,
    pub purge: bool,
    pub notify: bool,
    pub subjects: u64,
    pub subjects_done: u64,
    pub created_at: DateTime<Utc>,
    /// When it became `FINISHED` or `FAILED`.
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it is `FAILED` (for people; `None` otherwise).
    pub error: Option<String>,
}

/// One subject of a regulation and what the job found for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegulationSubject {
    pub subject_id: String,
    pub done: bool,
    /// Sources that held data of the subject (empty until done).
    pub affected_sources: Vec<String>,
    /// Stored events purged.
    pub events_purged: u64,
}

/// One delete notification: a delivery in the outbox, one per subject and
/// destination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegulationNotification {
    pub subject_id: String,
    /// The source it is filed under: the first of `source_ids` other than
    /// the profile engine's, if any.
    pub source_id: String,
    /// Every affected source connected to the destination, sorted.
    pub source_ids: Vec<String>,
    pub destination_id: String,
    pub delivery_id: i64,
    /// The delivery's state (`pending`, `succeeded`, `dead`, `discarded`),
    /// `purged` when retention removed it.
    pub state: String,
    pub attempts: u32,
}

/// A regulation with its subjects and notifications.
#[derive(Debug, Clone, PartialEq)]
pub struct RegulationDetail {
    pub regulation: Regulation,
    pub subjects: Vec<RegulationSubject>,
    pub notifications: Vec<RegulationNotification>,
}

/// A change of the suppression list; `version` grows with every change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppressionChange {
    pub version: i64,
    pub user_id: String,
    pub suppressed: bool,
}

/// Data of one subject, found by [`crate::RegulationStore::find_subject_data`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubjectData {
    /// Profiles the subject's identities belong to.
    pub profile_ids: Vec<String>,
    /// Events carrying any of the subject's identities: (seq, source id).
    pub events: Vec<(i64, String)>,
    /// Sources the profile engine saw the subject's profiles on (the
    /// profile document's `sources` and its behavioural events), sorted:
    /// they outlive the stored events, which retention removes.
    pub profile_sources: Vec<String>,
}

/// One subject's purge, committed by
/// [`crate::RegulationStore::commit_regulation`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubjectPurge {
    pub subject_id: String,
    /// Events to delete with their deliveries and attempts.
    pub event_seqs: Vec<i64>,
    /// The subject's profiles: deleted with identities and computed values
    /// by a regulation for every source; by a source-scoped one, kept but
    /// stripped of that source's behavioural rows and name.
    pub profile_ids: Vec<String>,
    /// Affected sources, sorted. When the regulation notifies, each enabled
    /// Webhooks destination connected to one or more of them gets one
    /// notification (not one per source: the bodies would be the same, and
    /// a receiver must act once). The profile
    /// engine's [`PERSONAS_SOURCE`](crate::PERSONAS_SOURCE) stands for the
    /// destinations connected to computed traits and audiences.
    pub affected_sources: Vec<String>,
}

/// One step of a regulation job.
#[derive(Debug, Clone)]
pub struct RegulationCommit {
    /// The lease holder; the commit is refused if it lost the lease.
    pub owner: String,
    pub regulation_id: String,
    pub now: DateTime<Utc>,
    pub subjects: Vec<SubjectPurge>,
}

/// Suppressed events of one source on one UTC day (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuppressedCount {
    pub source_id: String,
    pub day: String,
    pub events: u64,
}
