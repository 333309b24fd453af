//! Tax identifiers: Spanish NIF/NIE/CIF, EU VAT ids (VIES format) and the fiscal id of an entity.
//!
//! Input is normalised before any check: surrounding blanks are trimmed, letters
//! upper-cased, and spaces, hyphens and dots removed, because people copy ids
//! from documents that group them as `B-58.378.431` or `DE 136 695 976`.

mod vat;

pub use vat::{NormalizedVatId, validate_vat_id};

use crate::country::CountryCode;

/// Why a tax identifier was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FiscalIdError {
    /// Nothing but blanks and separators was given.
    #[error("the tax id is empty; enter the identifier printed on the entity's tax documents")]
    Empty,
    /// The value has none of the Spanish NIF, NIE or CIF shapes.
    #[error(
        "`{0}` is not a Spanish NIF, NIE or CIF; expected 8 digits and a letter (NIF), X, Y or Z with 7 digits and a letter (NIE), or an organisation letter with 7 digits and a control character (CIF)"
    )]
    SpanishFormat(String),
    /// The Spanish id has the right shape but its control character does not match.
    #[error("`{0}` has a wrong control character; check the Spanish tax id for typos")]
    SpanishControl(String),
    /// A CIF ends with a digit where its organisation letter requires a letter, or vice versa.
    #[error(
        "`{id}` must end with a control {expected} for organisations of type {letter}; check the CIF for typos"
    )]
    CifControlKind {
        /// The normalised CIF.
        id: String,
        /// The organisation letter (first character).
        letter: char,
        /// `letter` or `digit`.
        expected: &'static str,
    },
    /// The VAT id does not start with the prefix of an EU member state.
    #[error(
        "`{0}` does not start with an EU VAT country prefix such as DE, FR or ES (use EL for Greece and XI for Northern Ireland)"
    )]
    UnknownVatPrefix(String),
    /// The part after the country prefix does not have that country's VAT id format.
    #[error("`{id}` is not a valid {prefix} VAT id; expected {expected} after the {prefix} prefix")]
    VatFormat {
        /// The normalised VAT id.
        id: String,
        /// The VAT country prefix (`EL` for Greece).
        prefix: &'static str,
        /// A description of the expected format, e.g. `9 digits`.
        expected: &'static str,
    },
    /// The VAT id has the right format but its check digits do not match.
    #[error("`{0}` fails the VAT id check digit; check the number for typos")]
    VatChecksum(String),
    /// A free-form id of an EU country (other than Spain) that is not 2-32 letters and digits.
    #[error(
        "`{id}` is not a valid tax id for {country}; use its VAT id or 2 to 32 letters and digits"
    )]
    EuFreeForm {
        /// The id as given.
        id: String,
        /// The entity's country.
        country: CountryCode,
    },
    /// An id of a non-EU country that is not 2-32 letters, digits, `-`, `/`, `.` or spaces.
    #[error(
        "`{0}` is not a valid tax id; use 2 to 32 characters among letters, digits, spaces and - / ."
    )]
    ForeignFreeForm(String),
}

/// Which kind of Spanish tax identifier a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanishTaxIdKind {
    /// A natural person's NIF: a DNI number with its letter (also the K, L and M special NIFs).
    Nif,
    /// A foreign resident's NIE: X, Y or Z, seven digits and a letter.
    Nie,
    /// A legal entity's NIF (historically CIF): organisation letter, seven digits, control.
    Cif,
}

/// Control letters of DNI/NIE numbers, indexed by the number modulo 23.
const DNI_LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";
/// First letters of a CIF (the kind of organisation).
const CIF_ORGANISATION_LETTERS: &str = "ABCDEFGHJNPQRSUVW";
/// CIF control letters, indexed by the control digit (J = 0, A = 1, ... I = 9).
const CIF_CONTROL_LETTERS: &[u8; 10] = b"JABCDEFGHI";

/// Trims, upper-cases and removes spaces, hyphens and dots.
pub fn normalize_tax_id(id: &str) -> String {
    id.chars()
        .filter(|c| !c.is_whitespace() && *c != '-' && *c != '.')
        .flat_map(char::to_uppercase)
        .collect()
}

/// Normalises a Spanish id and drops an optional `ES` VAT prefix.
fn normalize_spanish(id: &str) -> String {
    let norm = normalize_tax_id(id);
    // Every Spanish id is 9 characters, so only an 11-character value can carry
    // the prefix; this keeps a CIF of type E (`E1234567…`) intact.
    match norm.strip_prefix("ES") {
        Some(rest) if rest.len() == 9 => rest.to_owned(),
        _ => norm,
    }
}

/// Checks a Spanish NIF, NIE or CIF (optionally prefixed with `ES`) including its control character.
pub fn validate_spanish_tax_id(id: &str) -> Result<SpanishTaxIdKind, FiscalIdError> {
    let norm = normalize_spanish(id);
    if norm.is_empty() {
        return Err(FiscalIdError::Empty);
    }
    check_spanish(&norm)
}

/// Validates an already normalised 9-character Spanish id.
fn check_spanish(norm: &str) -> Result<SpanishTaxIdKind, FiscalIdError> {
    let format_error = || FiscalIdError::SpanishFormat(norm.to_owned());
    let b = norm.as_bytes();
    if b.len() != 9 || !norm.is_ascii() {
        return Err(format_error());
    }
    let (first, middle, last) = (b[0], &b[1..8], b[8]);
    if !middle.iter().all(u8::is_ascii_digit) {
        return Err(format_error());
    }
    let seven = digits_value(middle);
    // NIF and NIE: the control letter is the number modulo 23. K, L and M NIFs
    // (minors, non-resident Spaniards, foreigners without NIE) apply it to
    // their seven digits; a NIE's X, Y, Z stand for a leading 0, 1, 2.
    let (number, kind) = match first {
        b'0'..=b'9' => (
            u32::from(first - b'0') * 10_000_000 + seven,
            SpanishTaxIdKind::Nif,
        ),
        b'X' | b'Y' | b'Z' => (
            u32::from(first - b'X') * 10_000_000 + seven,
            SpanishTaxIdKind::Nie,
        ),
        b'K' | b'L' | b'M' => (seven, SpanishTaxIdKind::Nif),
        _ if CIF_ORGANISATION_LETTERS.as_bytes().contains(&first) => {
            return check_cif(norm, char::from(first), middle, last);
        }
        _ => return Err(format_error()),
    };
    if !last.is_ascii_uppercase() {
        Err(format_error())
    } else if last == DNI_LETTERS[(number % 23) as usize] {
        Ok(kind)
    } else {
        Err(FiscalIdError::SpanishControl(norm.to_owned()))
    }
}

fn digits_value(digits: &[u8]) -> u32 {
    digits
        .iter()
        .fold(0, |acc, d| acc * 10 + u32::from(d - b'0'))
}

/// The CIF rule: the seven digits give a control digit, which may be written as a letter.
fn check_cif(
    norm: &str,
    letter: char,
    digits: &[u8],
    last: u8,
) -> Result<SpanishTaxIdKind, FiscalIdError> {
    if !last.is_ascii_alphanumeric() {
        return Err(FiscalIdError::SpanishFormat(norm.to_owned()));
    }
    // Public bodies, non-profits, foreign entities and the like (P Q R S W N)
    // always write the control as a letter; companies (A B E H) as a digit.
    let kind_error = |expected| {
        Err(FiscalIdError::CifControlKind {
            id: norm.to_owned(),
            letter,
            expected,
        })
    };
    match (letter, last.is_ascii_digit()) {
        ('P' | 'Q' | 'R' | 'S' | 'W' | 'N', true) => return kind_error("letter"),
        ('A' | 'B' | 'E' | 'H', false) => return kind_error("digit"),
        _ => {}
    }
    // Digits in odd positions (1st, 3rd, ...) are doubled and their digits
    // summed; digits in even positions are added as they are.
    let sum: u32 = digits
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d - b'0');
            if i % 2 == 0 {
                d * 2 / 10 + d * 2 % 10
            } else {
                d
            }
        })
        .sum();
    let control = (10 - sum % 10) % 10;
    // `control` is a single digit, so both conversions are lossless.
    let control_digit = b'0' + control as u8;
    let control_letter = CIF_CONTROL_LETTERS[control as usize];
    if last == control_digit || last == control_letter {
        Ok(SpanishTaxIdKind::Cif)
    } else {
        Err(FiscalIdError::SpanishControl(norm.to_owned()))
    }
}

/// Validates the fiscal id of an entity of `country` and returns it normalised.
///
/// - Spain: a NIF, NIE or CIF with a correct control character, returned
///   without the `ES` prefix (the form the Spanish tax authority records use).
/// - Other EU states: the VAT id of that state, with or without its prefix,
///   returned as given (normalised). A value that does not have the VAT format
///   is accepted as a free-form national id of 2-32 letters and digits,
///   because national ids (company registers, personal tax numbers) differ too
///   much between states to validate fully. A value that has the VAT format
///   but a wrong check digit is rejected: it is a VAT id with a typo.
/// - Outside the EU: 2-32 characters among letters, digits, `-`, `/`, `.` and
///   spaces, trimmed, upper-cased, with inner blanks collapsed to one space.
pub fn validate_fiscal_id(country: CountryCode, id: &str) -> Result<String, FiscalIdError> {
    if country.as_str() == "ES" {
        let norm = normalize_spanish(id);
        if norm.is_empty() {
            return Err(FiscalIdError::Empty);
        }
        check_spanish(&norm)?;
        return Ok(norm);
    }
    if country.is_eu() {
        return validate_eu_national(country, id);
    }
    validate_foreign(id)
}

fn validate_eu_national(country: CountryCode, id: &str) -> Result<String, FiscalIdError> {
    let norm = normalize_tax_id(id);
    if norm.is_empty() {
        return Err(FiscalIdError::Empty);
    }
    let prefix = vat::prefix_of(country);
    // Greek ids are often written with the ISO code instead of the VIES prefix.
    let has_prefix = norm.starts_with(prefix) || (prefix == "EL" && norm.starts_with("GR"));
    let candidates = [
        has_prefix.then(|| norm.clone()),
        Some(format!("{prefix}{norm}")),
    ];
    for candidate in candidates.into_iter().flatten() {
        match validate_vat_id(&candidate) {
            Ok(_) => return Ok(norm),
            Err(FiscalIdError::VatChecksum(_)) => return Err(FiscalIdError::VatChecksum(norm)),
            // Not shaped like a VAT id: try the next reading, then free form.
            Err(_) => {}
        }
    }
    let len = norm.chars().count();
    if (2..=32).contains(&len) && norm.chars().all(|c| c.is_ascii_alphanumeric()) {
        Ok(norm)
    } else {
        Err(FiscalIdError::EuFreeForm {
            id: id.trim().to_owned(),
            country,
        })
    }
}

fn validate_foreign(id: &str) -> Result<String, FiscalIdError> {
    let collapsed = id.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return Err(FiscalIdError::Empty);
    }
    let upper = collapsed.to_ascii_uppercase();
    let len = upper.chars().count();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '/' | '.' | ' ');
    if (2..=32).contains(&len) && upper.chars().all(allowed) {
        Ok(upper)
    } else {
        Err(FiscalIdError::ForeignFreeForm(id.trim().to_owned()))
    }
}

#[cfg(test)]
mod tests;
