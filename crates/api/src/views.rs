//! Shapes shared by several resources, and checks on them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// A UTC timestamp from stored microseconds.
pub fn ts(micros: i64) -> DateTime<Utc> {
    store::from_micros(micros)
}

/// A postal address.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// Street lines.
    pub lines: Vec<String>,
    pub zipcode: String,
    pub city: String,
    /// ISO 3166-1 alpha-2 country code.
    pub country: String,
    #[serde(default)]
    pub state: Option<String>,
}

impl Address {
    /// Checks a complete address (as registration needs) and normalises the country.
    pub fn validated(mut self, field: &str) -> Result<Self, ApiError> {
        self.lines = self
            .lines
            .into_iter()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        if self.lines.is_empty() {
            return Err(ApiError::bad_request(format!(
                "`{field}.lines` must have at least one street line."
            )));
        }
        if self.lines.len() > 5 || self.lines.iter().any(|l| l.chars().count() > 200) {
            return Err(ApiError::bad_request(format!(
                "`{field}.lines` takes at most 5 lines of at most 200 characters."
            )));
        }
        for (name, value) in [("zipcode", &mut self.zipcode), ("city", &mut self.city)] {
            *value = value.trim().to_owned();
            if value.is_empty() || value.chars().count() > 100 {
                return Err(ApiError::bad_request(format!(
                    "`{field}.{name}` must be 1 to 100 characters."
                )));
            }
        }
        self.country = domain::country::CountryCode::parse(&self.country)
            .map_err(|e| ApiError::bad_request(format!("`{field}.country`: {e}.")))?
            .to_string();
        self.state = self
            .state
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Ok(self)
    }
}

/// Checks a required free-text field: trimmed, non-empty, at most `max` characters.
pub fn required_text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(ApiError::bad_request(format!(
            "`{field}` must not be empty."
        )));
    }
    if v.chars().count() > max {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be at most {max} characters."
        )));
    }
    Ok(v.to_owned())
}

/// Checks an optional free-text field; blank becomes null.
pub fn optional_text(
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => required_text(field, v, max).map(Some),
    }
}

/// Checks an e-mail address loosely (one `@`, something on each side, no spaces).
pub fn email(field: &str, value: &str) -> Result<String, ApiError> {
    let v = value.trim().to_lowercase();
    let ok = v.len() <= 254
        && !v.contains(char::is_whitespace)
        && v.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.contains('@')
        });
    if ok {
        Ok(v)
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` must be an e-mail address such as billing@example.com."
        )))
    }
}
