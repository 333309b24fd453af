//! ISO 4217 currency codes with their minor units.

use std::{fmt, str::FromStr};

/// A valid ISO 4217 alphabetic currency code, stored upper-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CurrencyCode(iso_currency::Currency);

/// The code is not an ISO 4217 currency.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an ISO 4217 currency code (for example EUR, USD, JPY)")]
pub struct UnknownCurrency(pub String);

impl CurrencyCode {
    /// Parses a three-letter code; lower case is accepted and normalised.
    pub fn parse(code: &str) -> Result<Self, UnknownCurrency> {
        let upper = code.trim().to_ascii_uppercase();
        if upper.len() != 3 {
            return Err(UnknownCurrency(code.to_owned()));
        }
        iso_currency::Currency::from_code(&upper)
            .map(Self)
            .ok_or_else(|| UnknownCurrency(code.to_owned()))
    }

    /// The three-letter code, e.g. `EUR`.
    pub fn code(&self) -> &'static str {
        self.0.code()
    }

    /// Digits after the decimal point in the currency's minor unit (JPY 0, EUR 2, KWD 3).
    pub fn minor_units(&self) -> u32 {
        self.0.exponent().map(u32::from).unwrap_or(0)
    }
}

impl FromStr for CurrencyCode {
    type Err = UnknownCurrency;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for CurrencyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_knows_minor_units() {
        assert_eq!(CurrencyCode::parse("eur").unwrap().code(), "EUR");
        assert_eq!(CurrencyCode::parse("EUR").unwrap().minor_units(), 2);
        assert_eq!(CurrencyCode::parse("JPY").unwrap().minor_units(), 0);
        assert_eq!(CurrencyCode::parse("KWD").unwrap().minor_units(), 3);
        assert!(CurrencyCode::parse("EURO").is_err());
        assert!(CurrencyCode::parse("XYZ").is_err());
    }
}
