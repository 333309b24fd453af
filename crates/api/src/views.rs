//! Shapes shared by several resources, and checks on them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::workflows::AppError;

/// A UTC timestamp from stored microseconds; one out of range is corrupt data, an error.
pub fn ts(micros: i64) -> Result<DateTime<Utc>, AppError> {
    Ok(store::from_micros(micros)?)
}

/// [`ts`] of an optional stored time.
pub fn ts_opt(micros: Option<i64>) -> Result<Option<DateTime<Utc>>, AppError> {
    micros.map(ts).transpose()
}

/// How a download is offered: shown in the browser, or saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Inline,
    Attachment,
}

/// The `Content-Disposition` of a download named `filename`, for every download route (API
/// and web app): `inline; filename="INV-2026-00001.pdf"; filename*=UTF-8''INV-2026-00001.pdf`
/// (RFC 6266 with RFC 8187/5987 encoding).
///
/// `filename` comes from company data (a reference, a report's locale...), so nothing in it
/// can break the header: control characters are dropped (a stored reference format with
/// `\r\n` once made every PDF of the invoice a 500), the quoted fallback keeps only printable
/// ASCII other than `"`, `\`, `/` and `%` (others become `_`), and the exact name, any
/// script, is in `filename*`, percent-encoded UTF-8, which clients prefer.
pub fn content_disposition(disposition: Disposition, filename: &str) -> axum::http::HeaderValue {
    let name: String = filename.chars().filter(|c| !c.is_control()).collect();
    let fallback: String = name
        .chars()
        .map(|c| match c {
            '"' | '\\' | '/' | '%' => '_',
            c if c == ' ' || c.is_ascii_graphic() => c,
            _ => '_',
        })
        .collect();
    let mut encoded = String::with_capacity(name.len() * 3);
    for byte in name.bytes() {
        // RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" /
        // "_" / "`" / "|" / "~"; everything else percent-encoded.
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    let kind = match disposition {
        Disposition::Inline => "inline",
        Disposition::Attachment => "attachment",
    };
    axum::http::HeaderValue::from_str(&format!(
        "{kind}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"
    ))
    // Cannot fail (visible ASCII only); the bare disposition if it ever did.
    .unwrap_or_else(|_| axum::http::HeaderValue::from_static(kind))
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
    pub fn validated(mut self, field: &str) -> Result<Self, AppError> {
        self.lines = self
            .lines
            .into_iter()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        if self.lines.is_empty() {
            return Err(AppError::invalid(format!(
                "`{field}.lines` must have at least one street line."
            )));
        }
        if self.lines.len() > 5 || self.lines.iter().any(|l| l.chars().count() > 200) {
            return Err(AppError::invalid(format!(
                "`{field}.lines` takes at most 5 lines of at most 200 characters."
            )));
        }
        for (name, value) in [("zipcode", &mut self.zipcode), ("city", &mut self.city)] {
            *value = value.trim().to_owned();
            if value.is_empty() || value.chars().count() > 100 {
                return Err(AppError::invalid(format!(
                    "`{field}.{name}` must be 1 to 100 characters."
                )));
            }
        }
        self.country = domain::country::CountryCode::parse(&self.country)
            .map_err(|e| AppError::invalid(format!("`{field}.country`: {e}.")))?
            .to_string();
        self.state = self
            .state
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Ok(self)
    }
}

/// Checks a required free-text field: trimmed, non-empty, at most `max` characters.
pub fn required_text(field: &str, value: &str, max: usize) -> Result<String, AppError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(AppError::invalid(format!("`{field}` must not be empty.")));
    }
    if v.chars().count() > max {
        return Err(AppError::invalid(format!(
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
) -> Result<Option<String>, AppError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => required_text(field, v, max).map(Some),
    }
}

/// Checks an e-mail address loosely (one `@`, something on each side, no spaces).
pub fn email(field: &str, value: &str) -> Result<String, AppError> {
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
        Err(AppError::invalid(format!(
            "`{field}` must be an e-mail address such as billing@example.com."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_keeps_any_name_and_never_breaks_the_header() {
        let v = content_disposition(Disposition::Inline, "INV-2026-00001.pdf");
        assert_eq!(
            v.to_str().unwrap(),
            "inline; filename=\"INV-2026-00001.pdf\"; filename*=UTF-8''INV-2026-00001.pdf"
        );
        let v = content_disposition(Disposition::Attachment, "Fáctura \"A\"/1\r\n.pdf");
        assert_eq!(
            v.to_str().unwrap(),
            "attachment; filename=\"F_ctura _A__1.pdf\"; filename*=UTF-8''F%C3%A1ctura%20%22A%22%2F1.pdf"
        );
    }
}
