//! Money amounts and tax rates in the AEAT's textual format.
//!
//! The XSD type `ImporteSgn12.2Type` is the pattern `(\+|-)?\d{1,12}(\.\d{0,2})?`
//! and the web-service description (§6.8) says trailing decimal zeros only
//! express precision (`12345.7` equals `12345.70`). The hash document (v0.1.2)
//! says numeric values with one or two decimals are equally valid for the
//! huella. This crate always writes two decimals (`123.10`, `-0.50`), and the
//! huella uses exactly the text written in the XML.

use core::fmt;
use core::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::ValidationError;

/// Largest magnitude of `Decimal(12,2)`, in cents: 999 999 999 999.99.
const MAX_CENTS: i64 = 99_999_999_999_999;

/// An amount in euro cents that fits the AEAT's `Decimal(12,2)`.
///
/// Displayed as the AEAT expects: optional `-`, integer part without leading
/// zeros or thousands separators, a dot and exactly two decimals.
///
/// ```
/// # use verifactu::Importe;
/// assert_eq!(Importe::from_cents(12310).unwrap().to_string(), "123.10");
/// assert_eq!(Importe::from_cents(-5).unwrap().to_string(), "-0.05");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Importe(i64);

impl Importe {
    /// Zero euros.
    pub const ZERO: Importe = Importe(0);

    /// Builds an amount from cents, rejecting magnitudes beyond 12 integer digits.
    pub fn from_cents(cents: i64) -> Result<Self, ValidationError> {
        Self::checked("Importe", i128::from(cents))
    }

    /// Same as [`Importe::from_cents`] but names the AEAT field in the error.
    pub(crate) fn checked(field: &'static str, cents: i128) -> Result<Self, ValidationError> {
        if cents.unsigned_abs() > u128::from(MAX_CENTS.unsigned_abs()) {
            return Err(ValidationError::AmountOutOfRange { field, cents });
        }
        // In range, so the conversion cannot fail; map defensively anyway.
        i64::try_from(cents)
            .map(Importe)
            .map_err(|_| ValidationError::AmountOutOfRange { field, cents })
    }

    /// The amount in cents.
    pub const fn cents(self) -> i64 {
        self.0
    }

    /// The amount as a `Decimal` with scale 2 (e.g. `241.40`).
    pub fn to_decimal(self) -> Decimal {
        Decimal::new(self.0, 2)
    }

    /// `true` when the amount is negative.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl fmt::Display for Importe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

impl FromStr for Importe {
    type Err = ValidationError;

    /// Parses the AEAT text form (`123.1`, `-7`, `+0.05`); at most two decimals.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || {
            ValidationError::format(
                "Importe",
                t,
                "expected up to 12 digits, a dot and up to 2 decimals",
            )
        };
        let (negative, digits) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty()
            || int.len() > 12
            || frac.len() > 2
            || !all_digits(int)
            || !all_digits(frac)
        {
            return Err(bad());
        }
        let int: i128 = int.parse().map_err(|_| bad())?;
        let frac_cents: i128 = match frac.len() {
            0 => 0,
            1 => frac.parse::<i128>().map_err(|_| bad())? * 10,
            _ => frac.parse().map_err(|_| bad())?,
        };
        let cents = int * 100 + frac_cents;
        Self::checked("Importe", if negative { -cents } else { cents })
    }
}

/// A tax or surcharge rate in percent (`TipoImpositivo`,
/// `TipoRecargoEquivalencia`): XSD `Tipo2.2Type`, i.e. `\d{1,3}(\.\d{0,2})?`.
///
/// Written with two decimals (`21.00`, `7.50`, `0.00`).
///
/// ```
/// # use verifactu::Porcentaje;
/// let p: Porcentaje = "21".parse().unwrap();
/// assert_eq!(p.to_string(), "21.00");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Porcentaje(Decimal);

impl Porcentaje {
    /// 0 %.
    pub const ZERO: Porcentaje = Porcentaje(Decimal::ZERO);

    /// Validates a rate: not negative, at most 3 integer digits and 2 decimals.
    pub fn new(rate: Decimal) -> Result<Self, ValidationError> {
        let normalized = rate.normalize();
        let bad = |reason| ValidationError::format("TipoImpositivo", &rate.to_string(), reason);
        if normalized.is_sign_negative() && !normalized.is_zero() {
            return Err(bad("a rate cannot be negative"));
        }
        if normalized.scale() > 2 {
            return Err(bad("at most two decimals are allowed"));
        }
        if normalized >= Decimal::ONE_THOUSAND {
            return Err(bad("at most three integer digits are allowed"));
        }
        Ok(Self(normalized.abs()))
    }

    /// Rate from hundredths of a percent: `2100` is 21 %.
    pub fn from_basis_points(hundredths: u32) -> Result<Self, ValidationError> {
        Self::new(Decimal::new(i64::from(hundredths), 2))
    }

    /// The rate as a decimal number of percent.
    pub const fn value(self) -> Decimal {
        self.0
    }

    /// `true` for 0 %.
    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// The tax on `base` at this rate, rounded to cents half away from zero.
    pub fn cuota(self, base: Importe) -> Result<Importe, ValidationError> {
        let tax = (base.to_decimal() * self.0 / Decimal::ONE_HUNDRED)
            .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
        let cents = (tax * Decimal::ONE_HUNDRED).trunc();
        let cents = i128::try_from(cents).map_err(|_| ValidationError::AmountOutOfRange {
            field: "CuotaRepercutida",
            cents: i128::MAX,
        })?;
        Importe::checked("CuotaRepercutida", cents)
    }
}

impl fmt::Display for Porcentaje {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = self.0;
        v.rescale(2);
        write!(f, "{v}")
    }
}

impl FromStr for Porcentaje {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if !t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(ValidationError::format(
                "TipoImpositivo",
                t,
                "expected digits and an optional dot",
            ));
        }
        let d = Decimal::from_str(t)
            .map_err(|_| ValidationError::format("TipoImpositivo", t, "not a decimal number"))?;
        Self::new(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn importe_formats_like_the_aeat() {
        let f = |c| Importe::from_cents(c).unwrap().to_string();
        assert_eq!(f(12310), "123.10");
        assert_eq!(f(0), "0.00");
        assert_eq!(f(5), "0.05");
        assert_eq!(f(-12100), "-121.00");
        assert_eq!(f(-1), "-0.01");
        assert_eq!(f(123_456_789_012), "1234567890.12");
        assert_eq!(f(MAX_CENTS), "999999999999.99");
        assert_eq!(f(-MAX_CENTS), "-999999999999.99");
    }

    #[test]
    fn importe_rejects_thirteen_integer_digits() {
        assert!(Importe::from_cents(MAX_CENTS + 1).is_err());
        assert!(Importe::from_cents(i64::MIN).is_err());
    }

    #[test]
    fn importe_parses_aeat_text() {
        let p = |s: &str| s.parse::<Importe>().unwrap().cents();
        assert_eq!(p("123.1"), 12310);
        assert_eq!(p("123.10"), 12310);
        assert_eq!(p("-7"), -700);
        assert_eq!(p("+0.05"), 5);
        assert_eq!(p(" 21.4 "), 2140);
        for bad in ["", "1,5", "1.234", "abc", "-", ".5", "1234567890123", "1e3"] {
            assert!(bad.parse::<Importe>().is_err(), "{bad}");
        }
    }

    #[test]
    fn porcentaje_formats_and_validates() {
        let p = |s: &str| s.parse::<Porcentaje>().unwrap().to_string();
        assert_eq!(p("21"), "21.00");
        assert_eq!(p("7.5"), "7.50");
        assert_eq!(p("0"), "0.00");
        assert_eq!(p("5.20"), "5.20");
        for bad in ["-1", "1000", "0.125", "7,5", ""] {
            assert!(bad.parse::<Porcentaje>().is_err(), "{bad}");
        }
        assert_eq!(
            Porcentaje::from_basis_points(2100).unwrap(),
            "21".parse().unwrap()
        );
    }

    #[test]
    fn cuota_rounds_half_away_from_zero() {
        let iva = Porcentaje::from_basis_points(2100).unwrap();
        let c = |cents| {
            iva.cuota(Importe::from_cents(cents).unwrap())
                .unwrap()
                .cents()
        };
        assert_eq!(c(10000), 2100);
        assert_eq!(c(50), 11); // 0.105 -> 0.11
        assert_eq!(c(-50), -11);
        assert_eq!(c(104403), 21925); // 219.2463
    }
}
