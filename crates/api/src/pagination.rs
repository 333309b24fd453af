//! Keyset pagination: `limit` and an opaque `cursor`, answered as `{data, next_cursor}`.

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;

/// Query parameters of every list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl ListParams {
    /// The page size, checked.
    pub fn limit(&self) -> Result<i64, ApiError> {
        match self.limit {
            None => Ok(DEFAULT_LIMIT),
            Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            Some(n) => Err(ApiError::bad_request(format!(
                "`limit` must be between 1 and {MAX_LIMIT}, got {n}."
            ))),
        }
    }

    /// The id to continue after (exclusive), decoded from the cursor.
    pub fn after(&self) -> Result<Option<String>, ApiError> {
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|s| uuid::Uuid::parse_str(s).is_ok())
            .map(Some)
            .ok_or_else(|| {
                ApiError::bad_request(
                    "`cursor` is not valid: pass the `next_cursor` of the previous page unchanged.",
                )
            })
    }
}

/// One page of a list, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Page<T> {
    /// The items of this page.
    pub data: Vec<T>,
    /// Cursor of the next page, or null on the last page.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched (the extra row only
    /// tells that another page exists).
    pub fn from_rows<R>(
        mut rows: Vec<R>,
        limit: i64,
        id_of: impl Fn(&R) -> &str,
        view: impl FnMut(R) -> T,
    ) -> Self {
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| rows.last().map(|r| encode_cursor(id_of(r))))
            .flatten();
        Self {
            data: rows.into_iter().map(view).collect(),
            next_cursor,
        }
    }

    /// [`Page::from_rows`] with a view that can fail (stored data that does not decode).
    pub fn try_from_rows<R>(
        mut rows: Vec<R>,
        limit: i64,
        id_of: impl Fn(&R) -> &str,
        view: impl FnMut(R) -> Result<T, ApiError>,
    ) -> Result<Self, ApiError> {
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| rows.last().map(|r| encode_cursor(id_of(r))))
            .flatten();
        Ok(Self {
            data: rows.into_iter().map(view).collect::<Result<_, _>>()?,
            next_cursor,
        })
    }
}

/// The opaque cursor of an id.
pub fn encode_cursor(id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}
