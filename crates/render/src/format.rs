//! Number, date and IBAN formatting per language, done in Rust so templates only lay out text.

use chrono::{Datelike, NaiveDate};

/// The languages documents are labelled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English: `1,234.56`, `2 January 2026`.
    En,
    /// Spanish: `1.234,56`, `2 de enero de 2026`.
    Es,
}

impl Lang {
    /// Reads a language tag (`es`, `es_ES`, `es-MX`...); anything that is not Spanish is English.
    pub fn from_tag(tag: &str) -> Self {
        let primary = tag.split(['_', '-']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("es") {
            Self::Es
        } else {
            Self::En
        }
    }

    /// The ISO 639-1 code, also given to Typst for hyphenation.
    pub fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Es => "es",
        }
    }

    fn separators(self) -> (char, char) {
        match self {
            Self::En => (',', '.'),
            Self::Es => ('.', ','),
        }
    }
}

/// Most minor-unit digits an ISO 4217 currency has (CLF, UYW).
pub const MAX_MINOR_DIGITS: u8 = 4;

/// Formats an amount in minor units with exactly `digits` decimals: `123456, 2` is `1,234.56` (en).
pub fn amount(minor: i64, digits: u8, lang: Lang) -> String {
    let (group_sep, decimal_mark) = lang.separators();
    let abs = minor.unsigned_abs();
    let scale = 10u64.pow(u32::from(digits.min(MAX_MINOR_DIGITS)));
    let mut out = String::new();
    if minor < 0 {
        out.push('-');
    }
    out.push_str(&group(&(abs / scale).to_string(), group_sep));
    if digits > 0 {
        out.push(decimal_mark);
        let width = usize::from(digits);
        out.push_str(&format!("{:0width$}", abs % scale));
    }
    out
}

/// Formats a decimal string (`-?digits[.digits]`) per language, dropping trailing fraction zeros.
///
/// Returns `None` when the string is not such a decimal.
pub fn decimal(value: &str, lang: Lang) -> Option<String> {
    let (group_sep, decimal_mark) = lang.separators();
    let value = value.trim();
    let (negative, unsigned) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !all_digits(int) || !all_digits(frac) || unsigned.ends_with('.') {
        return None;
    }
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let frac = frac.trim_end_matches('0');
    let mut out = String::new();
    if negative && (int != "0" || !frac.is_empty()) {
        out.push('-');
    }
    out.push_str(&group(int, group_sep));
    if !frac.is_empty() {
        out.push(decimal_mark);
        out.push_str(frac);
    }
    Some(out)
}

/// Inserts `sep` every three digits from the right.
fn group(digits: &str, sep: char) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// Prints an IBAN in groups of four (`ES91 2100 0418 4502 0005 1332`).
pub fn iban(value: &str) -> String {
    let compact: Vec<char> = value
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_ascii_uppercase())
        .collect();
    compact
        .chunks(4)
        .map(|chunk| chunk.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

const MONTHS_EN: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_ES: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

/// Writes a date out: `2 January 2026` (en), `2 de enero de 2026` (es).
pub fn date(value: NaiveDate, lang: Lang) -> String {
    let month = value.month0() as usize;
    match lang {
        Lang::En => format!("{} {} {}", value.day(), MONTHS_EN[month], value.year()),
        Lang::Es => format!(
            "{} de {} de {}",
            value.day(),
            MONTHS_ES[month],
            value.year()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_use_the_currency_digits_and_language_separators() {
        assert_eq!(amount(123_456, 2, Lang::En), "1,234.56");
        assert_eq!(amount(123_456, 2, Lang::Es), "1.234,56");
        assert_eq!(amount(1_234_567, 0, Lang::En), "1,234,567");
        assert_eq!(amount(1_234_567, 3, Lang::Es), "1.234,567");
        assert_eq!(amount(-5, 2, Lang::En), "-0.05");
        assert_eq!(amount(0, 2, Lang::En), "0.00");
        assert_eq!(amount(999, 0, Lang::Es), "999");
        assert_eq!(amount(i64::MIN, 2, Lang::En), "-92,233,720,368,547,758.08");
    }

    #[test]
    fn decimals_are_validated_and_trimmed() {
        assert_eq!(decimal("21", Lang::En).as_deref(), Some("21"));
        assert_eq!(decimal("21.00", Lang::Es).as_deref(), Some("21"));
        assert_eq!(decimal("0.9123", Lang::Es).as_deref(), Some("0,9123"));
        assert_eq!(decimal("-15", Lang::En).as_deref(), Some("-15"));
        assert_eq!(decimal("1234.5", Lang::Es).as_deref(), Some("1.234,5"));
        assert_eq!(decimal("-0.0", Lang::En).as_deref(), Some("0"));
        assert_eq!(decimal("007", Lang::En).as_deref(), Some("7"));
        for bad in ["", "-", "1.", ".5", "1e3", "1,5", "#x", "1.2.3", "+1"] {
            assert_eq!(decimal(bad, Lang::En), None, "{bad:?}");
        }
    }

    #[test]
    fn ibans_are_grouped_in_fours() {
        assert_eq!(
            iban("ES9121000418450200051332"),
            "ES91 2100 0418 4502 0005 1332"
        );
        assert_eq!(
            iban("de89 3704 0044 0532 0130 00"),
            "DE89 3704 0044 0532 0130 00"
        );
    }

    #[test]
    fn dates_and_language_tags() {
        let d = NaiveDate::from_ymd_opt(2026, 1, 2).unwrap();
        assert_eq!(date(d, Lang::En), "2 January 2026");
        assert_eq!(date(d, Lang::Es), "2 de enero de 2026");
        assert_eq!(Lang::from_tag("es_ES"), Lang::Es);
        assert_eq!(Lang::from_tag("ES-mx"), Lang::Es);
        assert_eq!(Lang::from_tag("fr"), Lang::En);
        assert_eq!(Lang::from_tag(""), Lang::En);
    }
}
