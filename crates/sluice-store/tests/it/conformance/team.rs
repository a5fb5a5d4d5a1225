//! Users, API tokens, user sessions and the audit log
//! (`TeamStore`, `AuditStore`).

use super::support::{Shared, at};
use sluice_store::audit::REGULATION;
use sluice_store::{
    AuditQuery, NewApiToken, NewAuditEntry, NewUser, Role, StoreError, UserPatch, UserSession,
};

/// An audit entry of `resource` `action` by `actor`, confirmed, at `t0 + secs`.
pub(super) fn entry(actor: &str, resource: &str, action: &str, secs: i64) -> NewAuditEntry {
    NewAuditEntry {
        at: at(secs),
        actor_kind: "user".into(),
        actor_id: Some(format!("usr_{actor}")),
        actor_name: actor.into(),
        via: "api".into(),
        ip: Some("192.0.2.1".into()),
        user_agent: Some("curl/8".into()),
        resource: resource.into(),
        resource_id: Some(format!("{resource}_1")),
        action: action.into(),
        before: None,
        after: Some(r#"{"name":"x"}"#.into()),
        confirmed: true,
    }
}

pub(super) fn new_user(id: &str, username: &str, role: Role) -> NewUser {
    NewUser {
        id: id.into(),
        username: username.into(),
        role,
        password_hash: format!("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$hash-of-{id}"),
    }
}

fn new_token(id: &str, user: Option<&str>, role: Role) -> NewApiToken {
    NewApiToken {
        id: id.into(),
        name: format!("token {id}"),
        user_id: user.map(str::to_owned),
        role,
        token_hash: sluice_store::keys::hash_secret(&format!("secret-{id}")),
        token_hint: "slu_abcd…".into(),
    }
}

pub(super) fn session(id: &str, user: &str, created: i64, expires: i64) -> UserSession {
    UserSession {
        id: id.into(),
        user_id: user.into(),
        created_at: created,
        expires_at: expires,
        ip: Some("192.0.2.7".into()),
        user_agent: None,
    }
}

pub(super) async fn entries(store: &Shared, query: AuditQuery) -> Vec<(String, String)> {
    let query = AuditQuery {
        limit: if query.limit == 0 { 100 } else { query.limit },
        ..query
    };
    store
        .list_audit(query)
        .await
        .expect("list audit")
        .into_iter()
        .map(|e| (e.entry.resource, e.entry.action))
        .collect()
}

pub async fn users_round_trip_and_a_username_is_taken_once(store: Shared) {
    let audit = || entry("root", "user", "create", 0);
    let alice = store
        .create_user(new_user("usr_a", "alice", Role::Editor), audit())
        .await
        .expect("create");
    assert_eq!(alice.username, "alice");
    assert_eq!(alice.role, Role::Editor);
    store
        .create_user(new_user("usr_b", "bob", Role::Viewer), audit())
        .await
        .expect("create bob");
    let again = store
        .create_user(new_user("usr_c", "alice", Role::Admin), audit())
        .await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let names: Vec<_> = store
        .list_users()
        .await
        .expect("list")
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    let found = store.get_user_by_username("alice").await.expect("by name");
    assert_eq!(found.as_ref(), Some(&alice));
    assert_eq!(store.get_user("usr_a").await.expect("get"), Some(alice));
    assert_eq!(store.get_user("usr_x").await.expect("get"), None);
    // The refused creation left no entry behind.
    assert_eq!(entries(&store, AuditQuery::default()).await.len(), 2);
}

pub async fn a_user_change_commits_with_its_audit_entry_and_only_when_it_happened(store: Shared) {
    store
        .create_user(
            new_user("usr_a", "alice", Role::Viewer),
            entry("root", "user", "create", 0),
        )
        .await
        .expect("create");
    let patch = UserPatch {
        role: Some(Role::Admin),
        password_hash: None,
    };
    let updated = store
        .update_user("usr_a", patch.clone(), entry("root", "user", "update", 1))
        .await
        .expect("update")
        .expect("found");
    assert_eq!(updated.role, Role::Admin);
    assert!(updated.password_hash.contains("hash-of-usr_a"), "kept");
    let missing = store
        .update_user("usr_x", patch, entry("root", "user", "update", 2))
        .await
        .expect("update missing");
    assert_eq!(missing, None);
    assert!(
        !store
            .delete_user("usr_x", 100, entry("root", "user", "delete", 3))
            .await
            .expect("delete missing")
    );
    assert!(
        store
            .delete_user("usr_a", 100, entry("root", "user", "delete", 4))
            .await
            .expect("delete")
    );
    let actions: Vec<_> = entries(&store, AuditQuery::default())
        .await
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    assert_eq!(actions, ["delete", "update", "create"], "newest first");
}

pub async fn deleting_a_user_deletes_their_tokens_and_revokes_their_sessions(store: Shared) {
    let audit = || entry("root", "user", "create", 0);
    store
        .create_user(new_user("usr_a", "alice", Role::Editor), audit())
        .await
        .expect("create");
    store
        .create_api_token(new_token("tok_1", Some("usr_a"), Role::Editor), audit())
        .await
        .expect("token");
    store
        .create_api_token(new_token("tok_2", None, Role::Viewer), audit())
        .await
        .expect("automation token");
    store
        .record_user_session(session("sess_1", "usr_a", 100, 1_000))
        .await
        .expect("session");
    assert!(
        store
            .delete_user("usr_a", 200, entry("root", "user", "delete", 1))
            .await
            .expect("delete")
    );
    let left: Vec<_> = store
        .list_api_tokens()
        .await
        .expect("tokens")
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(left, ["tok_2"]);
    assert!(store.session_revoked("sess_1").await.expect("revoked"));
    let live = store.list_user_sessions("usr_a", 200).await.expect("list");
    assert!(live.is_empty());
}

pub async fn api_tokens_are_found_by_hash_and_need_an_existing_user(store: Shared) {
    let audit = || entry("root", "token", "create", 0);
    let orphan = store
        .create_api_token(new_token("tok_1", Some("usr_x"), Role::Admin), audit())
        .await;
    assert!(matches!(orphan, Err(StoreError::NotFound(_))), "{orphan:?}");
    let made = store
        .create_api_token(new_token("tok_2", None, Role::Editor), audit())
        .await
        .expect("create");
    assert_eq!((made.role, made.last_used_at), (Role::Editor, None));
    let hash = sluice_store::keys::hash_secret("secret-tok_2");
    let found = store.get_api_token_by_hash(&hash).await.expect("by hash");
    assert_eq!(found.as_ref(), Some(&made));
    store.touch_api_token("tok_2", at(60)).await.expect("touch");
    let touched = store.get_api_token("tok_2").await.expect("get");
    assert_eq!(touched.and_then(|t| t.last_used_at), Some(at(60)));
    let del = || entry("root", "token", "delete", 1);
    assert!(
        store
            .delete_api_token("tok_2", del())
            .await
            .expect("delete")
    );
    assert!(!store.delete_api_token("tok_2", del()).await.expect("again"));
    assert_eq!(
        store.get_api_token_by_hash(&hash).await.expect("gone"),
        None
    );
    let actions: Vec<_> = entries(&store, AuditQuery::default()).await;
    assert_eq!(
        actions.len(),
        2,
        "one creation and one deletion: {actions:?}"
    );
}

pub async fn user_sessions_are_listed_while_live_and_revoked_one_or_all(store: Shared) {
    for (id, created, expires) in [("s1", 100, 1_000), ("s2", 200, 2_000), ("s3", 50, 150)] {
        store
            .record_user_session(session(id, "usr_a", created, expires))
            .await
            .expect("record");
    }
    store
        .record_user_session(session("s9", "usr_b", 300, 3_000))
        .await
        .expect("record");
    let live: Vec<_> = store
        .list_user_sessions("usr_a", 300)
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(live, ["s2", "s1"], "newest first, expired left out");
    let audit = || entry("usr_a", "session", "revoke", 0);
    let one = store
        .revoke_user_sessions("usr_a", Some("s1"), 300, audit())
        .await
        .expect("revoke one");
    assert_eq!(one, 1);
    assert!(store.session_revoked("s1").await.expect("s1"));
    assert!(!store.session_revoked("s2").await.expect("s2"));
    let all = store
        .revoke_user_sessions("usr_a", None, 300, audit())
        .await
        .expect("revoke all");
    assert_eq!(all, 1);
    assert!(store.session_revoked("s2").await.expect("s2"));
    assert!(!store.session_revoked("s9").await.expect("other user's"));
    let none = store
        .revoke_user_sessions("usr_a", None, 300, audit())
        .await
        .expect("nothing left");
    assert_eq!(none, 0);
    assert_eq!(
        entries(&store, AuditQuery::default()).await.len(),
        2,
        "no entry when nothing was revoked"
    );
}

pub async fn audit_entries_are_filtered_and_paged_newest_first_by_cursor(store: Shared) {
    let plan = [
        ("alice", "source", 0),
        ("bob", "destination", 10),
        ("alice", "destination", 20),
        ("alice", "source", 30),
        ("bob", "source", 40),
    ];
    for (actor, resource, secs) in plan {
        store
            .append_audit(entry(actor, resource, "update", secs))
            .await
            .expect("append");
    }
    let by_alice = store
        .list_audit(AuditQuery {
            actor: Some("alice".into()),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    let times: Vec<_> = by_alice.iter().map(|e| e.entry.at).collect();
    assert_eq!(times, [at(30), at(20), at(0)]);
    let by_id = store
        .list_audit(AuditQuery {
            actor: Some("usr_bob".into()),
            resource: Some("source".into()),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("by actor id");
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].entry.ip.as_deref(), Some("192.0.2.1"));
    let window = store
        .list_audit(AuditQuery {
            since: Some(at(10)),
            until: Some(at(40)),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("window");
    assert_eq!(window.len(), 3, "since is inclusive, until exclusive");
    // Pages of two, following the cursor, see every entry once.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list_audit(AuditQuery {
                before_id: cursor,
                limit: 2,
                ..AuditQuery::default()
            })
            .await
            .expect("page");
        let Some(last) = page.last() else { break };
        cursor = Some(last.id);
        seen.extend(page.iter().map(|e| e.id));
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(seen, sorted, "newest first, no repeats");
    assert_eq!(seen.len(), 5);
}

pub async fn an_entry_written_ahead_is_confirmed_or_discarded(store: Shared) {
    let ahead = || NewAuditEntry {
        confirmed: false,
        resource_id: None,
        after: None,
        ..entry("alice", "source", "create", 0)
    };
    let kept = store.append_audit(ahead()).await.expect("append");
    let dropped = store.append_audit(ahead()).await.expect("append");
    store
        .confirm_audit(kept, Some("src_1".into()), Some(r#"{"name":"web"}"#.into()))
        .await
        .expect("confirm");
    store.discard_audit(dropped).await.expect("discard");
    // A confirmed entry is never discarded.
    store.discard_audit(kept).await.expect("discard confirmed");
    let all = store
        .list_audit(AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(all.len(), 1);
    let e = &all[0];
    assert_eq!(e.id, kept);
    assert!(e.entry.confirmed);
    assert_eq!(e.entry.resource_id.as_deref(), Some("src_1"));
    assert_eq!(e.entry.after.as_deref(), Some(r#"{"name":"web"}"#));
    // Ids only grow: a new entry never takes the discarded one's id.
    let next = store.append_audit(ahead()).await.expect("append");
    assert!(next > dropped, "{next} after {dropped}");
}

pub async fn pruning_goes_in_batches_from_the_oldest_and_keeps_regulations(store: Shared) {
    for secs in 0..5 {
        store
            .append_audit(entry("alice", "source", "update", secs))
            .await
            .expect("append");
    }
    store
        .append_audit(entry("alice", REGULATION, "create", 0))
        .await
        .expect("append regulation");
    assert_eq!(store.prune_audit(at(3), 2).await.expect("prune"), 2);
    assert_eq!(store.prune_audit(at(3), 2).await.expect("prune"), 1);
    assert_eq!(store.prune_audit(at(3), 2).await.expect("prune"), 0);
    let left: Vec<_> = store
        .list_audit(AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("list")
        .into_iter()
        .map(|e| (e.entry.resource, e.entry.at))
        .collect();
    assert_eq!(
        left,
        [
            (REGULATION.to_owned(), at(0)),
            ("source".to_owned(), at(4)),
            ("source".to_owned(), at(3)),
        ]
    );
}
