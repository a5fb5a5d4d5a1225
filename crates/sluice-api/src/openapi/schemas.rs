//! Schemas shared by many operations: the error shape, list wrappers and
//! paging parameters.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Every error answer: `{"success":false,"code":"…","message":"…"}`. This is
/// what [`crate::ApiError`] serializes to.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Always `false`.
    #[schema(value_type = bool, example = false)]
    pub success: bool,
    /// A stable, machine-readable code (`invalid_field`, `not_found`, …).
    #[schema(example = "invalid_field")]
    pub code: String,
    /// A message for people; field errors start with the field's path.
    #[schema(example = "name: is required")]
    pub message: String,
    /// Only when one batch item was refused (and so the whole batch): its
    /// position in `batch`, from 0. A client can drop that item and resend
    /// the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 2, nullable = false)]
    pub index: Option<usize>,
}

/// `{"data": [...]}`: a list that is not paged.
#[derive(Debug, Serialize, ToSchema)]
pub struct List<T> {
    pub data: Vec<T>,
}

/// `{"data": [...], "next_after": …, "total": n}`: a page of a list in
/// creation order. `next_after` is the `after` of the next page when this
/// one is full, else `null`; `total` counts the whole list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListPage<T> {
    pub data: Vec<T>,
    pub next_after: Option<String>,
    pub total: u64,
}

/// Paging forwards through a list in creation order.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AfterQuery {
    /// 1 to 1000, default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Only items after this one (exclusive): a previous page's `next_after`.
    pub after: Option<String>,
}

/// `{"data": [...], "next_before": …}`: a page, newest first. `next_before`
/// is the `before` of the next page when this one is full, else `null`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub data: Vec<T>,
    pub next_before: Option<i64>,
}

/// Paging backwards through a newest-first list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// Only rows older than this cursor (exclusive): a previous page's `next_before`.
    pub before: Option<i64>,
}

/// How many deliveries a replay moved back to `pending`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Replayed {
    pub replayed: u64,
}
