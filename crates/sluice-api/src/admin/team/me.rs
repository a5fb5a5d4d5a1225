//! `GET /api/v1/me`: who the credential of the call is, and its role.

use axum::Json;
use serde::Serialize;
use sluice_store::Role;
use utoipa::ToSchema;

use crate::principal::Actor;

/// The caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    /// `admin_token`, `token` or `user`.
    #[schema(example = "token")]
    pub kind: String,
    /// The token's or user's id; `null` for the admin token.
    pub id: Option<String>,
    /// The token's name, the username, or `admin token`.
    pub name: String,
    /// The role the caller acts with.
    pub role: Role,
}

#[utoipa::path(get, path = "/me", tag = "team", operation_id = "me",
    responses((status = 200, description = "The caller and its role", body = Me)))]
pub async fn get(actor: Actor) -> Json<Me> {
    let p = &actor.principal;
    Json(Me {
        kind: p.kind().to_owned(),
        id: p.id().map(str::to_owned),
        name: p.name().to_owned(),
        role: p.role(),
    })
}
