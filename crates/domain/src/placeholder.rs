//! Company-defined custom placeholders (`{{key}}` tokens in invoice templates).

/// Why a placeholder key was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceholderKeyError {
    /// The key does not match `^[a-z][a-z0-9_]{0,39}$`.
    #[error("`{0}` is not a valid key: use 1-40 characters a-z, 0-9 and _, starting with a letter")]
    Malformed(String),
    /// The same key appears twice.
    #[error("`{0}` is defined more than once")]
    Duplicate(String),
}

/// Checks one key: `^[a-z][a-z0-9_]{0,39}$`, so it can never break out of a `{{key}}` token.
pub fn validate_key(key: &str) -> Result<(), PlaceholderKeyError> {
    let mut chars = key.chars();
    let ok = key.len() <= 40
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(PlaceholderKeyError::Malformed(key.to_owned()))
    }
}

/// Checks every key and that none repeats.
pub fn validate_keys<'a>(
    keys: impl IntoIterator<Item = &'a str>,
) -> Result<(), PlaceholderKeyError> {
    let mut seen = std::collections::HashSet::new();
    for key in keys {
        validate_key(key)?;
        if !seen.insert(key) {
            return Err(PlaceholderKeyError::Duplicate(key.to_owned()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert!(validate_keys(["po_number", "project2"]).is_ok());
        assert_eq!(
            validate_keys(["a", "a"]),
            Err(PlaceholderKeyError::Duplicate("a".into()))
        );
        for bad in ["", "1a", "A", "a-b", "a}}", "a b"] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
    }
}
