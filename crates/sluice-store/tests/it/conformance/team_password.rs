//! A user changing their own password (`TeamStore::change_password`).

use super::support::Shared;
use super::team::{entries, entry, new_user, session};
use sluice_store::{AuditQuery, PasswordChange, Role};

fn change(expected: &str, keep: Option<&str>) -> PasswordChange {
    PasswordChange {
        user_id: "usr_a".into(),
        expected_hash: expected.into(),
        new_hash: "$argon2id$new".into(),
        keep_session: keep.map(str::to_owned),
        now_secs: 300,
    }
}

pub async fn a_password_change_keeps_one_session_and_needs_the_hash_it_checked(store: Shared) {
    let user = store
        .create_user(
            new_user("usr_a", "alice", Role::Viewer),
            entry("root", "user", "create", 0),
        )
        .await
        .expect("create");
    for id in ["s1", "s2", "s3"] {
        store
            .record_user_session(session(id, "usr_a", 100, 1_000))
            .await
            .expect("session");
    }
    store
        .record_user_session(session("s9", "usr_b", 100, 1_000))
        .await
        .expect("other user's session");
    let audit = || entry("alice", "user", "change-password", 300);

    // A hash other than the stored one: a concurrent change won.
    let stale = store
        .change_password(change("$argon2id$stale", Some("s2")), audit())
        .await
        .expect("stale");
    assert_eq!(stale, None);
    let stored = store.get_user("usr_a").await.expect("get").expect("user");
    assert_eq!(stored.password_hash, user.password_hash, "nothing changed");
    assert_eq!(
        store
            .list_user_sessions("usr_a", 300)
            .await
            .expect("list")
            .len(),
        3
    );

    let (changed, revoked) = store
        .change_password(change(&user.password_hash, Some("s2")), audit())
        .await
        .expect("change")
        .expect("changed");
    assert_eq!(changed.password_hash, "$argon2id$new");
    assert_eq!(revoked, 2);
    let live: Vec<String> = store
        .list_user_sessions("usr_a", 300)
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(live, ["s2"], "the session it was made from stays");
    assert!(store.session_revoked("s1").await.expect("s1"));
    assert!(store.session_revoked("s3").await.expect("s3"));
    assert!(!store.session_revoked("s2").await.expect("s2"));
    assert!(!store.session_revoked("s9").await.expect("another user's"));
    let log = entries(&store, AuditQuery::default()).await;
    assert_eq!(log[0], ("user".into(), "change-password".into()));
    assert_eq!(
        log.len(),
        2,
        "one entry for the change, none for the stale try"
    );

    // The old hash no longer matches: a replay of the same change is refused.
    let again = store
        .change_password(change(&user.password_hash, None), audit())
        .await
        .expect("again");
    assert_eq!(again, None);
    assert!(
        store
            .change_password(
                PasswordChange {
                    user_id: "usr_none".into(),
                    ..change("$argon2id$new", None)
                },
                audit()
            )
            .await
            .expect("no user")
            .is_none()
    );
}
