//! A user changing their own password: the new hash, the other sessions
//! signed out and the audit entry, in one transaction.

use super::{Sessions, revoke, user_by};
use crate::queries::audit;
use crate::records::now;
use crate::sql::{Conn, Db, Tx, args};
use crate::{NewAuditEntry, PasswordChange, Result, User};

/// `None` (and nothing changed) when the user is gone or their hash is no
/// longer `expected_hash`: a concurrent change won.
pub(crate) async fn change_password(
    conn: &mut impl Conn,
    change: &PasswordChange,
    entry: &NewAuditEntry,
) -> Result<Option<(User, u64)>> {
    let tx = conn.begin().await?;
    let changed = tx
        .execute(
            "UPDATE users SET password_hash = $3, updated_at = $4
             WHERE id = $1 AND password_hash = $2",
            args![
                &change.user_id,
                &change.expected_hash,
                &change.new_hash,
                now()
            ],
        )
        .await?;
    if changed == 0 {
        return Ok(None);
    }
    let which = match change.keep_session.as_deref() {
        Some(keep) => Sessions::AllBut(keep),
        None => Sessions::All,
    };
    let revoked = revoke(&tx, &change.user_id, which, change.now_secs).await?;
    audit::insert(&tx, entry).await?;
    let Some(user) = user_by(&tx, "id", &change.user_id).await? else {
        return Ok(None);
    };
    tx.commit().await?;
    Ok(Some((user, revoked)))
}
