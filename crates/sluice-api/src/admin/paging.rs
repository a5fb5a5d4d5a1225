//! Forward paging of the admin lists held whole in memory (sources,
//! destinations): `limit` (1 to 1000, default 100) and `after` (the last id
//! of the previous page). The lists of computed traits and audiences page
//! in the store instead (`personas::computations::list`).

use crate::admin::extract::Params;
use crate::error::ApiError;
use crate::openapi::schemas::ListPage;

/// Items per page unless `limit` says otherwise: enough that a client
/// that never pages sees every source and destination of a usual
/// installation.
pub const DEFAULT_LIMIT: u32 = 100;
/// The largest `limit`.
pub const MAX_LIMIT: u32 = 1000;

/// The page of `items` (in list order) that `params` asks for. An `after`
/// that names no item gives an empty page.
pub fn page<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    params: &Params,
) -> Result<ListPage<T>, ApiError> {
    let limit = params.limit(DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let total = u64::try_from(items.len()).unwrap_or(u64::MAX);
    let start = match params.str("after") {
        None => 0,
        Some(after) => items
            .iter()
            .position(|i| id(i) == after)
            .map_or(items.len(), |p| p + 1),
    };
    let data: Vec<T> = items.into_iter().skip(start).take(limit).collect();
    let next_after = (data.len() == limit)
        .then(|| data.last().map(|i| id(i).to_owned()))
        .flatten();
    Ok(ListPage {
        data,
        next_after,
        total,
    })
}

/// [`page`], with each item of the page shown as `view` shows it.
pub fn page_of<T, V>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    view: impl Fn(&T) -> V,
    params: &Params,
) -> Result<ListPage<V>, ApiError> {
    let page = page(items, id, params)?;
    Ok(ListPage {
        data: page.data.iter().map(view).collect(),
        next_after: page.next_after,
        total: page.total,
    })
}
