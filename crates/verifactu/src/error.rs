//! Error types shared by the record, hash and XML modules.

/// A value or a combination of values that the AEAT would reject (or flag),
/// detected before anything is hashed or serialised.
///
/// Where the AEAT documents an error code for the same rule
/// (`errores.properties`), [`ValidationError::Rule`] carries it so the message
/// can be traced back to the AEAT's own list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A required text is empty (after trimming spaces at both ends).
    #[error("{field} is empty; the AEAT requires a value")]
    Empty {
        /// AEAT field name, e.g. `NumSerieFactura`.
        field: &'static str,
    },
    /// A text is longer than the XSD allows.
    #[error("{field} has {len} characters; the AEAT allows at most {max}")]
    TooLong {
        /// AEAT field name.
        field: &'static str,
        /// Length found, in characters.
        len: usize,
        /// Maximum allowed by the XSD.
        max: usize,
    },
    /// A text contains a character the AEAT (or XML 1.0) does not accept.
    #[error("{field} contains {ch:?} (U+{code:04X}), which is not accepted there")]
    ForbiddenChar {
        /// AEAT field name.
        field: &'static str,
        /// The offending character.
        ch: char,
        /// Its code point, for messages.
        code: u32,
    },
    /// A value does not have the shape the AEAT expects.
    #[error("{field} `{value}` is not valid: {reason}")]
    Format {
        /// AEAT field name.
        field: &'static str,
        /// The value as given (trimmed).
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// An amount does not fit the AEAT's `Decimal(12,2)`.
    #[error("{field} of {cents} cents does not fit 12 integer digits and 2 decimals")]
    AmountOutOfRange {
        /// AEAT field name.
        field: &'static str,
        /// The amount, in cents.
        cents: i128,
    },
    /// A business rule from the AEAT's validation document is broken.
    #[error("{message}{}", aeat_code.map(|c| format!(" (AEAT error {c})")).unwrap_or_default())]
    Rule {
        /// The AEAT error code the AEAT would answer with, when there is one.
        aeat_code: Option<u16>,
        /// Plain explanation of what is wrong.
        message: String,
    },
}

impl ValidationError {
    /// Builds a [`ValidationError::Rule`].
    pub(crate) fn rule(aeat_code: impl Into<Option<u16>>, message: impl Into<String>) -> Self {
        Self::Rule {
            aeat_code: aeat_code.into(),
            message: message.into(),
        }
    }

    /// Builds a [`ValidationError::Format`].
    pub(crate) fn format(field: &'static str, value: &str, reason: &'static str) -> Self {
        Self::Format {
            field,
            value: value.to_owned(),
            reason,
        }
    }
}

/// Checks a free text field: trims it, requires it to be non-empty when
/// `required`, at most `max` characters, and made only of characters that XML
/// 1.0 can carry. Returns the trimmed value.
pub(crate) fn texto(
    field: &'static str,
    value: &str,
    max: usize,
) -> Result<String, ValidationError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(ValidationError::Empty { field });
    }
    let len = trimmed.chars().count();
    if len > max {
        return Err(ValidationError::TooLong { field, len, max });
    }
    if let Some(ch) = trimmed.chars().find(|c| !is_xml_char(*c)) {
        return Err(ValidationError::ForbiddenChar {
            field,
            ch,
            code: ch as u32,
        });
    }
    Ok(trimmed.to_owned())
}

/// Same as [`texto`] for optional fields: `None` or a blank text stays `None`.
pub(crate) fn texto_opcional(
    field: &'static str,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>, ValidationError> {
    match value {
        Some(v) if !v.trim().is_empty() => texto(field, v, max).map(Some),
        _ => Ok(None),
    }
}

/// Characters allowed by XML 1.0 (`Char` production). Rust `char`s are never
/// surrogates, so only control characters and U+FFFE/U+FFFF are excluded.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texto_trims_and_checks_length() {
        assert_eq!(texto("F", "  abc ", 3).unwrap(), "abc");
        assert_eq!(
            texto("F", "abcd", 3),
            Err(ValidationError::TooLong {
                field: "F",
                len: 4,
                max: 3
            })
        );
        assert_eq!(
            texto("F", "   ", 3),
            Err(ValidationError::Empty { field: "F" })
        );
        assert!(matches!(
            texto("F", "a\u{1}b", 9),
            Err(ValidationError::ForbiddenChar { ch: '\u{1}', .. })
        ));
        // Length is counted in characters, not bytes.
        assert!(texto("F", "ñññ", 3).is_ok());
    }

    #[test]
    fn rule_message_mentions_the_aeat_code() {
        let e = ValidationError::rule(1189, "recipients are required");
        assert_eq!(e.to_string(), "recipients are required (AEAT error 1189)");
        let e = ValidationError::rule(None, "plain");
        assert_eq!(e.to_string(), "plain");
    }
}
