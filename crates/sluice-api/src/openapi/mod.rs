//! The OpenAPI 3.1 description of the collection API and the admin API,
//! generated from the code that serves them.
//!
//! Why utoipa (with `utoipa-axum`) rather than aide: the handlers read their
//! bodies through our own extractors ([`crate::admin::extract`]) so that
//! every failure is a JSON error naming the field. aide documents an
//! operation from its extractor and response *types* (each must implement
//! its `OperationInput`/`OperationOutput`), which would mean rewriting those
//! extractors or wrapping each one. utoipa documents an operation from an
//! attribute written beside the handler, `#[utoipa::path(...)]`, and leaves
//! the handler's signature alone; its `routes!` macro registers the handler
//! in axum under the method and path of that same attribute. So the route
//! table and the document come from one place and cannot disagree: a route
//! exists in the router only if it is described.
//!
//! Adding a route: annotate the handler with `#[utoipa::path(method, path =
//! "/…", tag = "…", responses(…))]` and register it with
//! `.routes(routes!(module::handler))` (one `routes!` per path; handlers of
//! the same path go in the same call). A plain `.route(…)` would be served
//! but undocumented; the `openapi` tests of `sluice-server` fail on that.
//!
//! Not described: the dashboard's HTML pages (`sluice-dashboard`, its own
//! router) and the operational `/health`, `/ready` and `/metrics`.
//!
//! Schemas come from the serde types the handlers answer with
//! (`#[derive(Serialize, ToSchema)]` views) and, for request bodies that the
//! handlers validate field by field, from request types whose field list is
//! checked against the handler's own list of accepted fields.
//!
//! The document is served at `GET /api/v1/openapi.json` behind the admin
//! token, like every path under `/api/v1` (the admin API does not reveal its
//! route table to unauthenticated callers; see `docs/admin-api.md`). It holds
//! no secret, and the same file is checked in as `docs/openapi.json`.

pub mod schemas;

use std::sync::{Arc, OnceLock};

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, RefOr, Response as DocResponse};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;
pub use schemas::ErrorBody;

/// The security scheme name of the admin token.
pub const ADMIN_TOKEN: &str = "adminToken";
/// The security scheme name of a source's write key.
pub const WRITE_KEY: &str = "writeKey";
/// The security scheme name of an API token; its scopes are roles.
pub const API_TOKEN: &str = "apiToken";
/// The extension naming the role an admin operation needs.
pub const ROLE_EXTENSION: &str = "x-sluice-role";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sluice",
        description = "Self-hosted, Segment-compatible event pipeline. The collection API (`/v1/…`) takes Segment library calls; the admin API (`/api/v1/…`) manages sources, Webhooks destinations, the attempt log and replay. Errors always have the shape `{\"success\":false,\"code\":\"…\",\"message\":\"…\"}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    servers((url = "http://127.0.0.1:8088", description = "a local `sluice serve` (default listen address)")),
    modifiers(&Security),
    components(schemas(ErrorBody)),
    tags(
        (name = "collection", description = "Segment-compatible collection API (docs/collection-api.md)"),
        (name = "sources", description = "Sources and write keys, the debugger and usage"),
        (name = "destinations", description = "Webhooks destinations and their catalog"),
        (name = "deliveries", description = "The delivery attempt log and replay"),
        (name = "schema", description = "Observed schema, source rules, destination filters (docs/schema.md)"),
        (name = "personas", description = "Computed traits, audiences and profiles (docs/personas.md)"),
        (name = "privacy", description = "Regulations and suppressions (docs/privacy.md)"),
        (name = "team", description = "Users, their sessions, API tokens with roles, the audit log (docs/admin-api.md)"),
        (name = "meta", description = "This document"),
    )
)]
struct ApiDoc;

/// Security schemes, and the admin token as the default requirement (the
/// collection operations override it with their own).
struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.description = Some(
            "The admin token (`admin_token` or `SLUICE_ADMIN_TOKEN`; generated and printed once when unset).".into(),
        );
        components.add_security_scheme(ADMIN_TOKEN, SecurityScheme::Http(bearer));
        let mut basic = Http::new(HttpAuthScheme::Basic);
        basic.description = Some(
            "A source's write key as the user name and an empty password (`base64(writeKey + \":\")`), as Segment libraries send it. The key may instead be sent as `writeKey` in the body.".into(),
        );
        components.add_security_scheme(WRITE_KEY, SecurityScheme::Http(basic));
        let mut token = Http::new(HttpAuthScheme::Bearer);
        token.description = Some(
            "An API token (`slu_…`, docs/admin-api.md, \"Users, roles and API tokens\"). Its scope on each operation is the least role the operation needs: `viewer`, `editor` or `admin`.".into(),
        );
        components.add_security_scheme(API_TOKEN, SecurityScheme::Http(token));
        doc.security = Some(vec![SecurityRequirement::new(
            ADMIN_TOKEN,
            Vec::<String>::new(),
        )]);
    }
}

/// Every route Sluice serves under its API prefixes, each with its
/// description: the collection API at the root and the admin API under
/// [`crate::admin::PREFIX`]. [`crate::router`] serves these routes; the
/// document is built from the same value.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::ingest::routes())
        .nest(crate::admin::PREFIX, crate::admin::routes())
}

/// The OpenAPI document, built once.
pub fn document() -> &'static Document {
    static DOC: OnceLock<Document> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = routes().into_openapi();
        add_common_responses(&mut doc);
        add_roles(&mut doc);
        qualify_operation_ids(&mut doc);
        doc
    })
}

/// The document as served and checked in: pretty JSON and a final newline.
pub fn document_json() -> String {
    let mut text = document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}

/// Answers every operation may give, added here rather than repeated on each
/// handler: `401` where a credential is required, `503` everywhere (storage
/// unavailable or shutting down; retry).
fn add_common_responses(doc: &mut Document) {
    let error = |description: &str| -> RefOr<DocResponse> {
        RefOr::T(
            utoipa::openapi::ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    utoipa::openapi::ContentBuilder::new()
                        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                            ErrorBody::name(),
                        ))))
                        .build(),
                )
                .build(),
        )
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let public = path.starts_with("/v1/projects/");
        for op in operations(item) {
            let responses = &mut op.responses.responses;
            if !public {
                responses
                    .entry("401".into())
                    .or_insert_with(|| error("`unauthorized`: missing or wrong credential"));
            }
            responses.entry("503".into()).or_insert_with(|| {
                error("`unavailable`: storage unavailable or shutting down; retry (`Retry-After`)")
            });
        }
    }
}

/// The role each admin operation needs ([`crate::access::required_role`]):
/// as the `x-sluice-role` extension, as the scope of the `apiToken`
/// requirement beside the admin token, and a `403` where a role can be
/// refused.
fn add_roles(doc: &mut Document) {
    use utoipa::openapi::extensions::ExtensionsBuilder;
    let forbidden = RefOr::T(
        utoipa::openapi::ResponseBuilder::new()
            .description("`forbidden`: the caller's role does not allow this")
            .content(
                "application/json",
                utoipa::openapi::ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        ErrorBody::name(),
                    ))))
                    .build(),
            )
            .build(),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let Some(route) = path.strip_prefix(crate::admin::PREFIX) else {
            continue;
        };
        let methods = [
            (axum::http::Method::GET, &mut item.get),
            (axum::http::Method::PUT, &mut item.put),
            (axum::http::Method::POST, &mut item.post),
            (axum::http::Method::DELETE, &mut item.delete),
            (axum::http::Method::PATCH, &mut item.patch),
        ];
        for (method, op) in methods {
            let Some(op) = op else { continue };
            let role = crate::access::required_role(&method, route);
            op.security = Some(vec![
                SecurityRequirement::new(ADMIN_TOKEN, Vec::<String>::new()),
                SecurityRequirement::new(API_TOKEN, [role.as_str()]),
            ]);
            let extensions = ExtensionsBuilder::new()
                .add(ROLE_EXTENSION, role.as_str())
                .build();
            match op.extensions.as_mut() {
                Some(e) => e.merge(extensions),
                None => op.extensions = Some(extensions),
            }
            if role > sluice_store::Role::Viewer {
                op.responses
                    .responses
                    .entry("403".into())
                    .or_insert_with(|| forbidden.clone());
            }
        }
    }
}

fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}

/// utoipa names an operation after its handler (`get`, `list`), which
/// repeats across modules; OpenAPI wants them unique, so each is prefixed
/// with its tag (`sources_get`, `destinations_get`).
fn qualify_operation_ids(doc: &mut Document) {
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            if let (Some(id), Some(tag)) =
                (&op.operation_id, op.tags.as_ref().and_then(|t| t.first()))
            {
                op.operation_id = Some(format!("{tag}_{id}"));
            }
        }
    }
}

/// `GET /api/v1/openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document (also `docs/openapi.json`)", content_type = "application/json"))
)]
pub async fn serve() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(),
    )
        .into_response()
}

#[cfg(test)]
mod tests;
