//! Records of the profile engine's storage.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::StoredEvent;

/// A computed trait (`class = "trait"`) or an audience (`"audience"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Computation {
    pub id: String,
    pub class: String,
    pub key: String,
    pub name: String,
    /// The definition as JSON text; `sluice-profiles` parses it.
    pub definition: String,
    /// Connected destinations, sorted.
    pub destination_ids: Vec<String>,
    /// Bumped by every definition change.
    pub revision: i64,
    pub messages_sent: u64,
    pub last_computed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

/// Input to [`crate::ProfileStore::create_computation`].
#[derive(Debug, Clone)]
pub struct NewComputation {
    pub id: String,
    pub class: String,
    pub key: String,
    pub name: String,
    pub definition: String,
    pub destination_ids: Vec<String>,
}

/// A partial update; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct ComputationPatch {
    pub name: Option<String>,
    pub definition: Option<String>,
    pub destination_ids: Option<Vec<String>>,
}

/// The engine's position in the event stream. SQLite uses `seq` only
/// (`xact` stays 0); PostgreSQL orders by `(xact, seq)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EventCursor {
    pub xact: i64,
    pub seq: i64,
}

/// An input event and the cursor just after it.
#[derive(Debug, Clone)]
pub struct CursorEvent {
    pub cursor: EventCursor,
    pub event: StoredEvent,
    /// The event is another partition's (its body left out): the reader
    /// skips it but moves its cursor past it. Reads walk the log in commit
    /// order and mark what is not theirs, rather than filter it out, so
    /// that a partition with few people still moves forward.
    pub elsewhere: bool,
}

/// A stored profile: an opaque document (identities and traits), its next
/// window change and, when asked for, its behavioural events.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileRecord {
    pub id: String,
    pub doc: String,
    pub next_change_at: Option<DateTime<Utc>>,
    /// Oldest first, by `(ts, seq)`; empty unless loaded with events.
    pub events: Vec<ProfileEventRow>,
    /// Bumped by every commit that touches the profile where engine
    /// partitions run at once (PostgreSQL); always 0 where one engine
    /// writes (SQLite). A commit names the versions it read
    /// ([`ProfileCommit::expected`]) and is refused if one moved.
    pub version: i64,
}

/// One engine partition a node holds, and its committed cursor. People
/// are spread over partitions by a hash of the identity their calls name
/// first (see [`person_slot`]); each partition reads only its share of
/// the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub id: u16,
    pub cursor: EventCursor,
}

/// Slots an event's person is hashed into; a store with `n` partitions
/// gives slot `s` to partition `s % n`. 4,096 is a multiple of every
/// partition count a store uses, and fits a `smallint`.
pub const PERSON_SLOTS: u16 = 4096;

/// The slot of a call's person: the FNV-1a hash of `user:<userId>`, or of
/// `anon:<anonymousId>` for a call without a userId. A person's calls
/// after they are identified carry the userId, so they share a slot; calls
/// made before that may sit in another partition, which the version checks
/// of [`ProfileCommit`] keep correct.
pub fn person_slot(user_id: Option<&str>, anonymous_id: Option<&str>) -> u16 {
    let (prefix, id) = match (user_id, anonymous_id) {
        (Some(u), _) => ("user:", u),
        (None, Some(a)) => ("anon:", a),
        (None, None) => return 0,
    };
    let mut hash: u32 = 0x811c_9dc5;
    for b in prefix.bytes().chain(id.bytes()) {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash % u32::from(PERSON_SLOTS)) as u16
}

/// One behavioural call (track, page, screen) of a person, as the profile
/// engine keeps it in `profile_events`: appended once, never rewritten.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileEventRow {
    /// The seq of the stored call it came from.
    pub seq: i64,
    /// Event time, unix ms.
    pub ts: i64,
    pub source_id: String,
    /// `track`, `page` or `screen`.
    pub kind: String,
    /// Track event name, or page/screen name.
    pub name: Option<String>,
    /// The call's `properties`, a JSON object as text.
    pub properties: String,
    /// A 64-bit hash of the call's `messageId` (FNV-1a, see
    /// `sluice_profiles::profile::message_hash`): a call sent twice (a
    /// client's retry after a lost answer) counts once. Eight bytes a row
    /// rather than the id's 36; a collision can only merge two calls of
    /// one person. `None` in rows stored before it was kept.
    pub message_hash: Option<i64>,
}

/// A value last sent for (computation, profile), as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputedValue {
    pub computation_id: String,
    pub profile_id: String,
    pub value: String,
}

/// Whole-population work on one computation.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileJob {
    pub id: i64,
    pub computation_id: String,
    /// `recompute` or `backfill`.
    pub kind: String,
    /// The destination a `backfill` is for.
    pub destination_id: Option<String>,
    /// Profiles up to this id (inclusive) are done.
    pub after_profile: String,
}

/// A value change: `value = None` deletes the stored value.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueChange {
    pub computation_id: String,
    pub profile_id: String,
    pub value: Option<String>,
}

/// One identify message to put in the outbox.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmittedMessage {
    pub computation_id: String,
    pub message_id: String,
    pub body: String,
    pub destination_ids: Vec<String>,
    /// When its deliveries fall due: `None` at once; a later time for the
    /// message of a [`ScheduledChange`].
    pub deliver_at: Option<DateTime<Utc>>,
}

/// A change a time window makes to (computation, profile) at `at`, prepared
/// ahead of that time: its message is in the outbox with deliveries due at
/// `at`, and the value is applied once `at` has passed (see
/// [`crate::ProfileStore::settle_scheduled`]). Anything that touches the
/// profile or the computation before `at` withdraws it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledChange {
    pub computation_id: String,
    pub profile_id: String,
    pub at: DateTime<Utc>,
    /// The value from `at` on, JSON text; `None` = no value (audiences: not
    /// a member).
    pub value: Option<String>,
}

/// A [`ScheduledChange`] to write in a [`ProfileCommit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub change: ScheduledChange,
    /// The [`EmittedMessage`] of the same commit that carries it; `None`
    /// when the computation has no destination.
    pub message_id: Option<String>,
    /// The computation's `updated_at` when the change was evaluated. A
    /// change prepared from a definition edited since is not written, nor
    /// its message; its profile is due again at `at` instead.
    pub computation_updated_at: DateTime<Utc>,
}

/// Where a job stands after a commit.
#[derive(Debug, Clone, PartialEq)]
pub enum JobProgress {
    /// Profiles up to this id are done.
    At(String),
    Done,
}

/// The positions in the Kafka shape's event log that an engine step read
/// up to: they move with the step's profiles, in its transaction, so a step
/// is applied exactly once whatever happens to the node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogAdvance {
    /// The topic.
    pub topic: String,
    /// `(partition, next offset to read)` of each partition read.
    pub next: Vec<(i32, i64)>,
}

/// One engine step, committed atomically by
/// [`crate::ProfileStore::commit_profiles`].
#[derive(Debug, Clone, Default)]
pub struct ProfileCommit {
    /// The lease holder; the commit is refused if it lost the lease.
    pub owner: String,
    pub now: DateTime<Utc>,
    /// The new event cursor, when events were consumed: every partition
    /// of [`Self::partitions`] moves to it (or stays, if already past it).
    pub cursor: Option<EventCursor>,
    /// Where the step read the Kafka shape's event log up to, when it read
    /// the log instead of the database's events.
    pub log: Option<LogAdvance>,
    /// The partitions the committing node holds; the commit is refused
    /// unless it holds them all. Empty: every partition (one engine).
    pub partitions: Vec<u16>,
    /// `(profile id, version)` of every profile the step read: the commit
    /// is refused if another partition committed one of them since.
    pub expected: Vec<(String, i64)>,
    /// The profile each identity of [`Self::identities`] pointed to when
    /// the step read it (`None`: it was new); the commit is refused if
    /// another partition moved or created it since.
    pub identities_before: Vec<(String, Option<String>)>,
    /// Profiles whose document is new or changed: inserted or replaced
    /// (document and `next_change_at`; `events` is ignored).
    pub profiles: Vec<ProfileRecord>,
    /// Profiles whose document is unchanged but whose next window change
    /// moved.
    pub next_changes: Vec<(String, Option<DateTime<Utc>>)>,
    /// Behavioural events to append, by profile id. Written first: the
    /// moves and removals below apply to them too.
    pub events: Vec<(String, ProfileEventRow)>,
    /// `(from, into)`: a merge moves `from`'s events to `into`, in order.
    pub moved_events: Vec<(String, String)>,
    /// `(profile, ts, seq)`: events of the profile before this position
    /// are dropped (the per-profile cap).
    pub trimmed_events: Vec<(String, i64, i64)>,
    /// Profiles merged into others: deleted with their values.
    pub removed_profiles: Vec<String>,
    /// Identity → profile id, inserted or repointed.
    pub identities: Vec<(String, String)>,
    /// Profiles whose scheduled changes are settled before anything else
    /// is written: those due by `now` are applied to the values, later ones
    /// are withdrawn with their messages. The commit fails if one of those
    /// messages was already taken by a delivery worker (the engine then
    /// redoes the step, when the change is due).
    pub settle: Vec<String>,
    pub values: Vec<ValueChange>,
    pub messages: Vec<EmittedMessage>,
    /// Window changes prepared ahead of their time.
    pub scheduled: Vec<Schedule>,
    /// Computations evaluated in this step (their `last_computed_at` is set).
    pub computed: Vec<String>,
    pub job: Option<(i64, JobProgress)>,
}

/// How much others have needed the store's writer so far: totals since
/// start, read twice to take rates (see
/// [`crate::ProfileStore::write_load`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteLoad {
    /// Events ingest has appended (every group, committed or not).
    pub events: u64,
    /// Time the writer spent on work other than the profile engine's:
    /// ingest, delivery, administration, and the commits it shares.
    pub foreground: std::time::Duration,
}
