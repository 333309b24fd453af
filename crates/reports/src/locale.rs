//! Locale-aware numbers and dates with ICU4X (compiled CLDR data, no network).
//!
//! `es-ES` writes `12.345,67` and `es-MX` `12,345.67`; `es-ES` leaves four-digit
//! numbers ungrouped (`1234,56`), as CLDR says. Labels come in English and Spanish
//! ([`crate::labels`]); the number and date formats follow the full locale.

use chrono::{Datelike, NaiveDate};
use fixed_decimal::Decimal;
use icu_calendar::{Date, Gregorian};
use icu_datetime::FixedCalendarDateTimeFormatter;
use icu_datetime::fieldsets::{YM, YMD};
use icu_decimal::DecimalFormatter;
use icu_locale_core::Locale;
use writeable::Writeable;

use crate::ReportError;

/// Longest locale tag accepted.
pub const MAX_TAG_LEN: usize = 35;

/// Parses a locale tag as users write it (`es_ES`, `es-MX`, `en`) into its canonical
/// BCP 47 form (`es-ES`).
pub fn normalize(tag: &str) -> Result<String, ReportError> {
    let trimmed = tag.trim();
    if trimmed.is_empty() || trimmed.len() > MAX_TAG_LEN {
        return Err(ReportError::Locale(tag.to_owned()));
    }
    let locale = Locale::try_from_str(&trimmed.replace('_', "-"))
        .map_err(|_| ReportError::Locale(tag.to_owned()))?;
    if locale.id.language.is_unknown() {
        return Err(ReportError::Locale(tag.to_owned()));
    }
    Ok(locale.to_string())
}

/// Parses a locale tag like [`normalize`] and checks that the service has data for it: its
/// language must be one CLDR has date and number formats for (report words are English or
/// Spanish; numbers and dates follow the locale). `zz`, say, would silently render with the
/// root locale's formats (`2026 M01 15`), so it is refused ([`ReportError::Unsupported`]).
pub fn supported(tag: &str) -> Result<String, ReportError> {
    let canonical = normalize(tag)?;
    let locale =
        Locale::try_from_str(&canonical).map_err(|_| ReportError::Locale(tag.to_owned()))?;
    if has_data(&locale) {
        Ok(canonical)
    } else {
        Err(ReportError::Unsupported(tag.to_owned()))
    }
}

/// A date as the locale writes it (medium length), if it can be formatted at all.
fn sample_date(locale: &Locale) -> Option<String> {
    let formatter =
        FixedCalendarDateTimeFormatter::<Gregorian, YMD>::try_new(locale.into(), YMD::medium())
            .ok()?;
    let date = Date::try_new_gregorian(2026, 1, 15).ok()?;
    Some(formatter.format(&date).write_to_string().into_owned())
}

/// Whether ICU4X's compiled data has formats of the locale's own language: asked for a
/// language it has no data for, it falls back to the root locale, whose dates read
/// `2026 M01 15` (no month names), which no language with data writes.
fn has_data(locale: &Locale) -> bool {
    static ROOT: std::sync::LazyLock<Option<String>> =
        std::sync::LazyLock::new(|| sample_date(&Locale::UNKNOWN));
    !locale.id.language.is_unknown()
        && sample_date(locale).is_some_and(|own| Some(&own) != ROOT.as_ref())
}

/// The languages the service has data for ([`supported`]), sorted: every two- and
/// three-letter language code with data of its own, found once by asking for each.
pub fn supported_languages() -> &'static [String] {
    static LANGUAGES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        let letters = || b'a'..=b'z';
        let two = letters().flat_map(|a| letters().map(move |b| vec![a, b]));
        let three = letters()
            .flat_map(|a| letters().flat_map(move |b| letters().map(move |c| vec![a, b, c])));
        two.chain(three)
            .filter_map(|code| String::from_utf8(code).ok())
            .filter(|code| {
                Locale::try_from_str(code)
                    .is_ok_and(|l| l.id.language.as_str() == code && has_data(&l))
            })
            .collect()
    });
    &LANGUAGES
}

/// Formatters for one locale.
pub struct Formats {
    /// The canonical tag, e.g. `es-MX`.
    pub tag: String,
    /// The primary language, e.g. `es`.
    pub language: String,
    decimal: DecimalFormatter,
    date: FixedCalendarDateTimeFormatter<Gregorian, YMD>,
    month: FixedCalendarDateTimeFormatter<Gregorian, YM>,
}

impl Formats {
    /// Loads the formatters of a canonical tag (see [`normalize`]).
    pub fn new(tag: &str) -> Result<Self, ReportError> {
        let locale = Locale::try_from_str(tag).map_err(|_| ReportError::Locale(tag.to_owned()))?;
        let decimal = DecimalFormatter::try_new((&locale).into(), Default::default())
            .map_err(|e| ReportError::Internal(format!("number data for {tag}: {e}")))?;
        let date = FixedCalendarDateTimeFormatter::try_new((&locale).into(), YMD::medium())
            .map_err(|e| ReportError::Internal(format!("date data for {tag}: {e}")))?;
        let month = FixedCalendarDateTimeFormatter::try_new((&locale).into(), YM::medium())
            .map_err(|e| ReportError::Internal(format!("month data for {tag}: {e}")))?;
        Ok(Self {
            tag: tag.to_owned(),
            language: locale.id.language.to_string(),
            decimal,
            date,
            month,
        })
    }

    /// An amount in minor units with exactly `digits` decimals: `1234567, 2` → `12.345,67` (es-ES).
    pub fn amount(&self, minor: i64, digits: u8) -> String {
        let mut d = Decimal::from(minor);
        let digits = i16::from(digits);
        d.multiply_pow10(-digits);
        d.absolute.pad_end(-digits);
        self.decimal.format(&d).write_to_string().into_owned()
    }

    /// An amount followed or preceded by its currency code, as the language writes it.
    pub fn money(&self, minor: i64, currency: &str, digits: u8) -> String {
        let n = self.amount(minor, digits);
        if self.language == "en" {
            format!("{currency}\u{a0}{n}")
        } else {
            format!("{n}\u{a0}{currency}")
        }
    }

    /// A whole number: `12345` → `12.345` (es-ES).
    pub fn count(&self, n: i64) -> String {
        self.decimal
            .format(&Decimal::from(n))
            .write_to_string()
            .into_owned()
    }

    /// A date, medium length: `15 ene 2026` (es-ES), `Jan 15, 2026` (en).
    pub fn date(&self, date: NaiveDate) -> String {
        match gregorian(date) {
            Some(d) => self.date.format(&d).write_to_string().into_owned(),
            None => date.to_string(),
        }
    }

    /// A month and year: `ene 2026`, `Jan 2026`.
    pub fn month(&self, year: i32, month: u32) -> String {
        match NaiveDate::from_ymd_opt(year, month, 1).and_then(gregorian) {
            Some(d) => self.month.format(&d).write_to_string().into_owned(),
            None => format!("{year}-{month:02}"),
        }
    }
}

fn gregorian(date: NaiveDate) -> Option<Date<Gregorian>> {
    let month = u8::try_from(date.month()).ok()?;
    let day = u8::try_from(date.day()).ok()?;
    Date::try_new_gregorian(date.year(), month, day).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_without_data_are_refused_and_the_list_names_the_ones_with_data() {
        assert_eq!(supported("es_ES").unwrap(), "es-ES");
        assert_eq!(supported("en").unwrap(), "en");
        assert_eq!(supported("de-DE").unwrap(), "de-DE");
        assert!(matches!(supported("zz"), Err(ReportError::Unsupported(_))));
        assert!(matches!(
            supported("qaa-ES"),
            Err(ReportError::Unsupported(_))
        ));
        let list = supported_languages();
        for l in ["en", "es", "ca", "de", "fr", "pt"] {
            assert!(list.iter().any(|x| x == l), "{l} in {list:?}");
        }
        assert!(!list.iter().any(|x| x == "zz"), "{list:?}");
    }

    #[test]
    fn tags_are_normalized_and_garbage_refused() {
        assert_eq!(normalize("es_ES").unwrap(), "es-ES");
        assert_eq!(normalize(" es-mx ").unwrap(), "es-MX");
        assert_eq!(normalize("en").unwrap(), "en");
        for bad in [
            "",
            "x",
            "not a locale",
            "es_ES_EXTRA_TOO_LONG_TAG_VALUE_1234567",
            "und",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn spain_and_mexico_write_numbers_differently() {
        let es = Formats::new("es-ES").unwrap();
        let mx = Formats::new("es-MX").unwrap();
        let en = Formats::new("en").unwrap();
        assert_eq!(es.amount(1_234_567, 2), "12.345,67");
        assert_eq!(mx.amount(1_234_567, 2), "12,345.67");
        assert_eq!(en.amount(1_234_567, 2), "12,345.67");
        // CLDR: Spain does not group four-digit numbers.
        assert_eq!(es.amount(123_456, 2), "1234,56");
        assert_eq!(es.amount(-5, 2), "-0,05");
        assert_eq!(es.amount(100, 2), "1,00");
        assert_eq!(en.amount(1500, 0), "1,500");
        assert_eq!(en.amount(1_500, 3), "1.500");
        assert_eq!(es.count(1_000_000), "1.000.000");
    }

    #[test]
    fn dates_and_months_follow_the_locale() {
        let d = NaiveDate::from_ymd_opt(2026, 1, 15).unwrap();
        let es = Formats::new("es-ES").unwrap();
        let en = Formats::new("en").unwrap();
        assert!(es.date(d).contains("ene"), "{}", es.date(d));
        assert!(en.date(d).contains("Jan"), "{}", en.date(d));
        assert!(es.month(2026, 1).contains("2026"));
    }
}
