//! Integer money arithmetic in minor units (cents), with decimal quantities and rates.
//!
//! # Rounding rule
//!
//! Amounts are `i64` minor units; quantities and rates are exact decimals
//! ([`Decimal`]), never floats. Every computed amount is rounded **once, per
//! line**, to a whole minor unit with *round half to even* (banker's rounding:
//! 2.5 → 2, 3.5 → 4, -2.5 → -2), so that rounding errors do not drift in one
//! direction over many lines. The invoice total is then the exact sum of the
//! already-rounded lines; it is never recomputed from unrounded figures, so the
//! printed lines always add up to the printed total.
//!
//! Every operation is checked: an amount that does not fit in `i64` is a
//! [`MoneyError`], never a panic or a silent wrap-around.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

/// Why an amount could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// The result is larger than the supported range.
    #[error(
        "the amount is too large to be represented (at most 9223372036854775807 minor units); use a smaller quantity, price or number of lines"
    )]
    Overflow,
}

/// Rounds to a whole number with round-half-to-even (2.5 → 2, 3.5 → 4, -2.5 → -2).
pub fn round_half_even(value: Decimal) -> Decimal {
    value.round_dp_with_strategy(0, RoundingStrategy::MidpointNearestEven)
}

/// Converts a decimal to whole minor units, rounding half-even and checking the `i64` range.
pub fn to_minor(value: Decimal) -> Result<i64, MoneyError> {
    round_half_even(value).to_i64().ok_or(MoneyError::Overflow)
}

/// The subtotal of a line: `quantity × unit_price_minor`, rounded half-even to a minor unit.
///
/// Quantities may be fractional (1.5 hours) or negative (a corrective line).
pub fn line_subtotal(quantity: Decimal, unit_price_minor: i64) -> Result<i64, MoneyError> {
    let product = quantity
        .checked_mul(Decimal::from(unit_price_minor))
        .ok_or(MoneyError::Overflow)?;
    to_minor(product)
}

/// `rate_percent` % of `base_minor`, rounded half-even to a minor unit.
///
/// Rates may be fractional (25.5 for Finland) or negative (a withholding such as -15).
pub fn percent_of(base_minor: i64, rate_percent: Decimal) -> Result<i64, MoneyError> {
    let product = Decimal::from(base_minor)
        .checked_mul(rate_percent)
        .ok_or(MoneyError::Overflow)?;
    // Dividing by 100 only shifts the decimal scale, so it is exact; the single
    // rounding step happens in `to_minor`.
    let share = product
        .checked_div(Decimal::ONE_HUNDRED)
        .ok_or(MoneyError::Overflow)?;
    to_minor(share)
}

/// Adds amounts, failing instead of wrapping when the sum leaves the `i64` range.
pub fn checked_sum(amounts: impl IntoIterator<Item = i64>) -> Result<i64, MoneyError> {
    amounts
        .into_iter()
        .try_fold(0i64, |acc, amount| acc.checked_add(amount))
        .ok_or(MoneyError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn rounds_half_to_even() {
        assert_eq!(round_half_even(d("2.5")), d("2"));
        assert_eq!(round_half_even(d("3.5")), d("4"));
        assert_eq!(round_half_even(d("-2.5")), d("-2"));
        assert_eq!(round_half_even(d("-3.5")), d("-4"));
        assert_eq!(round_half_even(d("2.51")), d("3"));
        assert_eq!(round_half_even(d("2.49")), d("2"));
        assert_eq!(round_half_even(d("7")), d("7"));
    }

    #[test]
    fn line_subtotals() {
        assert_eq!(line_subtotal(d("3"), 1000), Ok(3000));
        assert_eq!(line_subtotal(d("1.5"), 5), Ok(8)); // 7.5 -> 8
        assert_eq!(line_subtotal(d("0.5"), 5), Ok(2)); // 2.5 -> 2
        assert_eq!(line_subtotal(d("0.5"), 7), Ok(4)); // 3.5 -> 4
        assert_eq!(line_subtotal(d("0.333"), 100), Ok(33));
        assert_eq!(line_subtotal(d("-2"), 1250), Ok(-2500));
        assert_eq!(line_subtotal(d("0"), i64::MAX), Ok(0));
    }

    #[test]
    fn percentages() {
        assert_eq!(percent_of(10000, d("21")), Ok(2100));
        assert_eq!(percent_of(1250, d("21")), Ok(262)); // 262.5 -> 262
        assert_eq!(percent_of(1150, d("21")), Ok(242)); // 241.5 -> 242
        assert_eq!(percent_of(300, d("25.5")), Ok(76)); // 76.5 -> 76
        assert_eq!(percent_of(100, d("25.5")), Ok(26)); // 25.5 -> 26
        assert_eq!(percent_of(1000, d("-15")), Ok(-150));
        assert_eq!(percent_of(-1250, d("21")), Ok(-262));
        assert_eq!(percent_of(i64::MAX, d("0")), Ok(0));
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        assert_eq!(line_subtotal(d("2"), i64::MAX), Err(MoneyError::Overflow));
        assert_eq!(
            line_subtotal(Decimal::MAX, i64::MAX),
            Err(MoneyError::Overflow)
        );
        assert_eq!(percent_of(i64::MAX, d("200")), Err(MoneyError::Overflow));
        assert_eq!(checked_sum([i64::MAX, 1]), Err(MoneyError::Overflow));
        assert_eq!(checked_sum([i64::MIN, -1]), Err(MoneyError::Overflow));
        assert_eq!(to_minor(Decimal::MAX), Err(MoneyError::Overflow));
    }

    #[test]
    fn sums() {
        assert_eq!(checked_sum([]), Ok(0));
        assert_eq!(checked_sum([1, 2, -3, 10]), Ok(10));
        assert_eq!(checked_sum([i64::MAX, -1, 1]), Ok(i64::MAX));
    }
}
