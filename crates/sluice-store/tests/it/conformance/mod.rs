//! The behavioural contract every [`Store`](sluice_store::Store) backend must
//! meet, one file per concern.
//!
//! Each case is an async function taking a fresh, empty store as
//! `Arc<dyn Store>` and using only the public store traits, so a failure
//! names one behaviour and cases never see each other's data. Every case
//! runs once per backend: `conformance::sqlite::<case>`, and with the
//! `postgres` feature `conformance::postgres::<case>` (which needs the test
//! server, see `postgres.rs`). A case left out of `conformance_tests!` is
//! dead code, which the clippy gate refuses.
//!
//! Times used are whole milliseconds (what every backend keeps) and fixed,
//! so cases are deterministic; `claim_due` and `replay` take explicit times.

mod admin;
mod cap;
mod catalog;
mod cluster;
mod dedup;
mod deleted_destination;
mod delivery;
mod health;
mod ingest;
mod local;
mod notices;
mod profile_events;
mod profiles;
mod regulation_job;
mod regulations;
mod resync;
mod retention;
mod scheduled;
mod schema;
mod scoped_purge;
mod seen;
mod support;
mod tally;
mod team;
mod team_password;

use admin::*;
use cap::*;
use catalog::*;
use cluster::*;
use dedup::*;
use deleted_destination::*;
use delivery::*;
use health::*;
use ingest::*;
use local::*;
use notices::*;
use profile_events::*;
use profiles::*;
use regulation_job::*;
use regulations::*;
use resync::*;
use retention::*;
use scheduled::*;
use schema::*;
use scoped_purge::*;
use seen::*;
use tally::*;
use team::*;
use team_password::*;

/// Declares one `#[tokio::test]` per case, in the module it is used in.
/// `$fresh` is an expression evaluated once per test to a future of
/// `(guard, store)`: `store` is any [`Store`](sluice_store::Store), `guard`
/// lives until the case ends (a temp dir, a test schema...).
macro_rules! conformance_tests {
    ($fresh:expr) => {
        conformance_tests!(@each $fresh;
            meta_put_if_absent_keeps_the_first_value,
            a_node_counts_itself_once_it_beats,
            a_node_that_left_is_counted_when_it_beats_again,
            a_revoked_session_stays_revoked_until_it_expires_then_is_pruned,
            sources_round_trip_through_create_get_and_list,
            source_lookup_by_key_hash_follows_key_rotation,
            duplicate_source_id_or_write_key_is_a_conflict,
            delete_source_removes_its_connections_and_usage_but_keeps_events,
            destinations_round_trip_with_sorted_sources_and_settings,
            destination_with_a_missing_source_is_not_found,
            duplicate_destination_id_is_a_conflict,
            delete_destination_discards_its_pending_deliveries,
            deleting_a_destination_takes_it_out_of_computed_traits_and_audiences,
            append_commits_events_deliveries_and_usage_together,
            recent_events_are_newest_first_with_an_exclusive_cursor,
            usage_counts_calls_and_events_per_utc_day,
            concurrent_appends_are_all_stored_with_unique_seqs,
            a_resent_message_id_is_dropped_and_counted,
            a_batch_repeating_a_message_id_stores_it_once,
            the_same_message_id_from_another_source_is_stored,
            concurrent_calls_with_one_message_id_store_it_once,
            a_message_id_older_than_the_window_is_stored_again,
            claim_due_leases_the_oldest_due_first,
            deliveries_leased_at_ingest_reach_the_engine_and_no_claim,
            a_call_leased_whole_needs_no_wake_and_a_shut_door_leases_nothing,
            a_call_whose_caller_stopped_waiting_is_still_handed_over,
            claim_due_respects_the_limit,
            leased_delivery_is_claimed_again_after_its_lease_ends,
            report_success_records_attempts_and_finishes,
            report_retry_reschedules_and_keeps_the_first_attempt_time,
            report_without_attempts_releases_the_lease,
            report_dead_and_discarded_finish_with_their_reason,
            next_due_is_the_earliest_pending_time_after_leases,
            replay_moves_dead_deliveries_back_with_a_fresh_window,
            claimed_delivery_carries_its_event_received_time,
            cap_pending_dead_letters_the_oldest_beyond_the_cap,
            list_deliveries_filters_and_pages_newest_first,
            deliveries_are_found_by_message_id_among_thousands_of_events,
            prune_deletes_finished_old_events_and_keeps_pending_work,
            seqs_and_delivery_ids_are_never_reused_after_prune,
            rules_and_filters_documents_are_replaced_and_listed,
            blocked_and_filtered_events_are_stored_marked_and_counted,
            schema_flushes_merge_types_times_and_volumes,
            schema_cap_keeps_known_entries_and_counts_overflow,
            deleting_a_source_or_destination_removes_its_rules_filters_and_schema,
            computation_keys_are_never_reused_even_after_delete,
            definition_changes_are_read_once_each_by_version,
            a_cursor_walk_lists_every_live_definition_of_a_class_once,
            definition_changes_and_new_connections_queue_jobs,
            the_engine_partitions_are_shared_and_move_when_a_lease_lapses,
            events_after_the_cursor_come_in_commit_order,
            a_step_commits_profiles_values_messages_and_cursor_together,
            profile_events_are_appended_moved_trimmed_and_dropped,
            a_scheduled_change_waits_for_its_time_then_applies,
            touching_a_profile_withdraws_its_scheduled_change,
            a_taken_scheduled_message_refuses_its_withdrawal,
            editing_a_computation_drops_its_scheduled_changes,
            a_disabled_destination_is_sent_nothing_and_resynced_when_enabled,
            suppression_changes_come_in_version_order_and_unsuppress_lifts,
            suppressed_counts_add_up_per_source_and_day,
            the_regulation_lease_is_exclusive_until_it_lapses,
            a_regulation_step_purges_and_notifies_once_then_finishes,
            a_profile_step_read_before_a_purge_is_refused_at_its_commit,
            a_failed_regulation_keeps_its_error_and_is_over,
            a_subject_without_stored_events_is_found_through_its_profile,
            a_destination_reached_through_several_sources_is_notified_once,
            a_scoped_purge_takes_its_source_out_of_the_profile,
            a_scoped_purge_makes_the_profile_due_for_evaluation_at_once,
            users_round_trip_and_a_username_is_taken_once,
            a_user_change_commits_with_its_audit_entry_and_only_when_it_happened,
            deleting_a_user_deletes_their_tokens_and_revokes_their_sessions,
            api_tokens_are_found_by_hash_and_need_an_existing_user,
            user_sessions_are_listed_while_live_and_revoked_one_or_all,
            a_password_change_keeps_one_session_and_needs_the_hash_it_checked,
            audit_entries_are_filtered_and_paged_newest_first_by_cursor,
            an_entry_written_ahead_is_confirmed_or_discarded,
            pruning_goes_in_batches_from_the_oldest_and_keeps_regulations,
            health_merges_add_up_across_flushes_and_node_shards,
            health_is_kept_per_five_minutes_and_per_hour,
            health_buckets_older_than_the_cut_are_pruned,
            saved_keys_load_oldest_first_within_the_window_and_the_budget,
            a_slice_saved_again_at_the_same_offset_keeps_its_first_keys,
            trimming_drops_slices_past_the_window_or_past_the_budget,
            log_tallies_count_each_range_once_across_partitions,
            a_log_tally_past_the_counted_position_applies,
        );
    };
    (@each $fresh:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let (_guard, store) = $fresh.await;
                super::$check(::std::sync::Arc::new(store)).await;
            }
        )*
    };
}

mod sqlite {
    conformance_tests!(crate::sqlite::fresh());
}

#[cfg(feature = "postgres")]
mod postgres {
    conformance_tests!(crate::postgres::fresh());
}
