//! EU VAT identification numbers in the format the VIES system uses.
//!
//! Every EU member state is covered, with `EL` for Greece (`GR` is accepted and
//! rewritten to `EL`) and `XI` for Northern Ireland traders. The format of the
//! part after the prefix is always checked. Check digits are verified only
//! where the algorithm is public and simple, so a valid id is never rejected
//! because of a half-known rule:
//!
//! | Prefix | Check digit |
//! |---|---|
//! | BE | 97 − (first 8 digits mod 97) equals the last 2 digits |
//! | DE | ISO 7064 MOD 11,10 |
//! | ES | Spanish NIF/NIE/CIF control character |
//! | IT | Luhn over the 11 digits |
//! | NL | weighted mod 11 (older ids) or ISO 7064 mod 97 over `NL` + id (sole traders since 2020) |
//! | PT | weighted mod 11 |
//!
//! All other prefixes are checked for format only. Whether an id is actually
//! registered is a question for VIES itself, outside this pure crate.

use std::fmt;

use super::{FiscalIdError, check_spanish, normalize_tax_id};
use crate::country::CountryCode;

/// A VAT id whose prefix is an EU VAT country and whose number has that country's format.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NormalizedVatId {
    value: String,
    country: CountryCode,
    checksum_verified: bool,
}

impl NormalizedVatId {
    /// The id with its prefix and no separators, e.g. `DE136695976`.
    pub fn as_str(&self) -> &str {
        &self.value
    }

    /// The two-letter VAT prefix, e.g. `DE`, `EL` for Greece, `XI` for Northern Ireland.
    pub fn prefix(&self) -> &str {
        self.value.get(..2).unwrap_or_default()
    }

    /// The part after the prefix, e.g. `136695976`.
    pub fn number(&self) -> &str {
        self.value.get(2..).unwrap_or_default()
    }

    /// The ISO country of the id: `GR` for an `EL` id, `GB` for an `XI` id.
    pub fn country(&self) -> CountryCode {
        self.country
    }

    /// Whether a check digit was verified, not only the format (see the module table).
    pub fn checksum_verified(&self) -> bool {
        self.checksum_verified
    }
}

impl fmt::Display for NormalizedVatId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

/// The VIES prefix used for VAT ids of an EU member state (`EL` for Greece).
///
/// A non-member gets `??`, which no VAT id can start with after normalisation.
pub(super) fn prefix_of(country: CountryCode) -> &'static str {
    match country.as_str() {
        "GR" => "EL",
        other => PREFIXES
            .iter()
            .copied()
            .find(|p| *p == other)
            .unwrap_or("??"),
    }
}

/// Every accepted VAT prefix.
const PREFIXES: &[&str] = &[
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "EL", "ES", "FI", "FR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK", "XI",
];

/// Checks the format (and, where known, the check digit) of a prefixed EU VAT id.
pub fn validate_vat_id(id: &str) -> Result<NormalizedVatId, FiscalIdError> {
    let norm = normalize_tax_id(id);
    if norm.is_empty() {
        return Err(FiscalIdError::Empty);
    }
    let (raw_prefix, number) = match (norm.get(..2), norm.get(2..)) {
        (Some(p), Some(n)) => (p, n),
        _ => return Err(FiscalIdError::UnknownVatPrefix(norm)),
    };
    let prefix_str = if raw_prefix == "GR" { "EL" } else { raw_prefix };
    let Some(prefix) = PREFIXES.iter().copied().find(|p| *p == prefix_str) else {
        return Err(FiscalIdError::UnknownVatPrefix(norm));
    };
    let value = format!("{prefix}{number}");
    // Byte-indexed format rules need ASCII; anything else is simply the wrong
    // format, reported with the country's expected shape.
    let (format_ok, expected, checksum) = if number.is_ascii() {
        rule(prefix, number)
    } else {
        let (_, expected, _) = rule(prefix, "");
        (false, expected, Checksum::None)
    };
    if !format_ok {
        return Err(FiscalIdError::VatFormat {
            id: value,
            prefix,
            expected,
        });
    }
    let checksum_verified = match checksum {
        Checksum::None => false,
        Checksum::Spanish => match check_spanish(number) {
            Ok(_) => true,
            Err(FiscalIdError::SpanishFormat(_)) => {
                return Err(FiscalIdError::VatFormat {
                    id: value,
                    prefix,
                    expected,
                });
            }
            Err(_) => return Err(FiscalIdError::VatChecksum(value)),
        },
        Checksum::Ok(true) => true,
        Checksum::Ok(false) => return Err(FiscalIdError::VatChecksum(value)),
    };
    let iso = match prefix {
        "EL" => "GR",
        "XI" => "GB",
        p => p,
    };
    let country = CountryCode::parse(iso).map_err(|_| FiscalIdError::UnknownVatPrefix(norm))?;
    Ok(NormalizedVatId {
        value,
        country,
        checksum_verified,
    })
}

/// The outcome of a country's check-digit rule.
enum Checksum {
    /// The country's check digit is not verified here.
    None,
    /// Spanish NIF/NIE/CIF rule, run by the caller for its precise error.
    Spanish,
    /// The check digit was computed: does it match?
    Ok(bool),
}

/// Format check, expected-format text and check-digit result for one prefix.
///
/// `n` must be ASCII: the rules index it by byte.
fn rule(prefix: &str, n: &str) -> (bool, &'static str, Checksum) {
    use Checksum::None as Unchecked;
    let digits = |len: usize| n.len() == len && all_digits(n);
    match prefix {
        "AT" => (
            n.len() == 9 && n.starts_with('U') && all_digits(&n[1..]),
            "U and 8 digits",
            Unchecked,
        ),
        "BE" => {
            let ok = digits(10) && matches!(n.as_bytes()[0], b'0' | b'1');
            (
                ok,
                "10 digits starting with 0 or 1",
                checked(ok, || belgian(n)),
            )
        }
        "BG" => (digits(9) || digits(10), "9 or 10 digits", Unchecked),
        "CY" => {
            let ok = n.len() == 9 && all_digits(&n[..8]) && is_letter(n.as_bytes()[8]);
            (ok, "8 digits and a letter", Unchecked)
        }
        "CZ" => (
            digits(8) || digits(9) || digits(10),
            "8, 9 or 10 digits",
            Unchecked,
        ),
        "DE" => (digits(9), "9 digits", checked(digits(9), || german(n))),
        "DK" | "FI" | "HU" | "LU" | "MT" | "SI" => (digits(8), "8 digits", Unchecked),
        "EE" | "EL" => (digits(9), "9 digits", Unchecked),
        "ES" => (
            n.len() == 9 && n.is_ascii(),
            "a 9-character NIF, NIE or CIF",
            Checksum::Spanish,
        ),
        "FR" => {
            let ok = n.len() == 11
                && n.as_bytes()[..2].iter().all(u8::is_ascii_alphanumeric)
                && all_digits(&n[2..]);
            (ok, "2 letters or digits and 9 digits", Unchecked)
        }
        "HR" | "LV" => (digits(11), "11 digits", Unchecked),
        "IE" => (irish(n), "7 digits and 1 or 2 letters", Unchecked),
        "IT" => (digits(11), "11 digits", checked(digits(11), || luhn(n))),
        "LT" => (digits(9) || digits(12), "9 or 12 digits", Unchecked),
        "NL" => {
            let ok = n.len() == 12
                && all_digits(&n[..9])
                && n.as_bytes()[9] == b'B'
                && all_digits(&n[10..]);
            (ok, "9 digits, B and 2 digits", checked(ok, || dutch(n)))
        }
        "PL" | "SK" => (digits(10), "10 digits", Unchecked),
        "PT" => (digits(9), "9 digits", checked(digits(9), || portuguese(n))),
        "RO" => (
            (2..=10).contains(&n.len()) && all_digits(n),
            "2 to 10 digits",
            Unchecked,
        ),
        "SE" => (digits(12), "12 digits", Unchecked),
        "XI" => {
            let ok = digits(9)
                || digits(12)
                || (n.len() == 5
                    && (n.starts_with("GD") || n.starts_with("HA"))
                    && all_digits(&n[2..]));
            (ok, "9 or 12 digits, or GD or HA and 3 digits", Unchecked)
        }
        _ => (false, "a known format", Unchecked),
    }
}

/// Runs a check-digit function only once the format is known to be right.
fn checked(format_ok: bool, check: impl FnOnce() -> bool) -> Checksum {
    if format_ok {
        Checksum::Ok(check())
    } else {
        Checksum::None
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_uppercase()
}

fn digit_values(s: &str) -> impl DoubleEndedIterator<Item = u32> + '_ {
    s.bytes().map(|b| u32::from(b - b'0'))
}

/// BE: the last two digits are 97 minus the first eight modulo 97.
fn belgian(n: &str) -> bool {
    let head = digit_values(&n[..8]).fold(0u64, |acc, d| acc * 10 + u64::from(d));
    let tail = digit_values(&n[8..]).fold(0u64, |acc, d| acc * 10 + u64::from(d));
    97 - head % 97 == tail
}

/// DE: ISO 7064 MOD 11,10 over the first eight digits gives the ninth.
fn german(n: &str) -> bool {
    let mut product = 10;
    for d in digit_values(&n[..8]) {
        let mut sum = (d + product) % 10;
        if sum == 0 {
            sum = 10;
        }
        product = (2 * sum) % 11;
    }
    let check = (11 - product) % 10;
    digit_values(&n[8..]).next() == Some(check)
}

/// IT: the Luhn algorithm over all eleven digits.
fn luhn(n: &str) -> bool {
    let sum: u32 = digit_values(n)
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// NL: the older weighted mod 11 over the nine digits, or mod 97 over `NL` + id.
fn dutch(n: &str) -> bool {
    let weighted: i64 = digit_values(&n[..9])
        .zip([9i64, 8, 7, 6, 5, 4, 3, 2, -1])
        .map(|(d, w)| i64::from(d) * w)
        .sum();
    let mod11 = weighted % 11 == 0;
    // Letters count as two-digit numbers (A = 10 ... Z = 35), as for IBANs.
    let mod97 = format!("NL{n}")
        .chars()
        .fold(0u32, |acc, c| match c.to_digit(36) {
            Some(v) if v >= 10 => (acc * 100 + v) % 97,
            Some(v) => (acc * 10 + v) % 97,
            None => acc,
        })
        == 1;
    mod11 || mod97
}

/// PT: weights 9 to 2 over the first eight digits, mod 11, give the ninth.
fn portuguese(n: &str) -> bool {
    let sum: u32 = digit_values(&n[..8])
        .zip((2..=9).rev())
        .map(|(d, w)| d * w)
        .sum();
    let check = match 11 - sum % 11 {
        c if c >= 10 => 0,
        c => c,
    };
    digit_values(&n[8..]).next() == Some(check)
}

/// IE: 7 digits and 1-2 letters, or the old form digit, letter/+/*, 5 digits, letter.
fn irish(n: &str) -> bool {
    let b = n.as_bytes();
    let new_form = (n.len() == 8 || n.len() == 9)
        && all_digits(&n[..7])
        && b[7..].iter().copied().all(is_letter);
    let old_form = n.len() == 8
        && b[0].is_ascii_digit()
        && (is_letter(b[1]) || b[1] == b'+' || b[1] == b'*')
        && b[2..7].iter().all(u8::is_ascii_digit)
        && is_letter(b[7]);
    new_form || old_form
}

#[cfg(test)]
mod tests;
