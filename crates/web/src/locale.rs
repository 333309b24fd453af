//! Values as the signed-in person's language writes them: amounts, dates and
//! times. The numbers and dates are the reports' own ([`reports::Formats`],
//! ICU4X with compiled CLDR data), so a person reads `12.345,67 EUR` and
//! `15 ene 2026` alike in a report and on a page. The page's words stay English.

use chrono::{DateTime, NaiveDate, Utc};

/// The formats of one person's language; English when the language is unknown
/// or has no data.
pub struct Local {
    formats: Option<reports::Formats>,
}

impl Default for Local {
    fn default() -> Self {
        Self::english()
    }
}

impl Local {
    /// English (`1,234.56 EUR`, `Jan 15, 2026`).
    pub fn english() -> Self {
        Self {
            formats: reports::Formats::new("en").ok(),
        }
    }

    /// The formats of a person's `language` setting as stored (`es_ES`, `de`, `fr-FR`).
    pub fn of(language: &str) -> Self {
        match reports::supported(language).and_then(|tag| reports::Formats::new(&tag)) {
            Ok(formats) => Self {
                formats: Some(formats),
            },
            Err(_) => Self::english(),
        }
    }

    /// The canonical tag the values are written in (`es-ES`), for the HTML `lang` of a value.
    pub fn tag(&self) -> &str {
        self.formats.as_ref().map_or("en", |f| f.tag.as_str())
    }

    /// Minor units in a currency: `123456` EUR → `1,234.56 EUR` (en), `1234,56 EUR`
    /// (es-ES, which groups from five digits), `1 234,56 EUR` (fr).
    pub fn money(&self, minor: i64, currency: &str) -> String {
        let digits = domain::currency::CurrencyCode::parse(currency)
            .ok()
            .and_then(|c| u8::try_from(c.minor_units()).ok())
            .unwrap_or(2);
        match &self.formats {
            Some(f) => format!("{} {currency}", f.amount(minor, digits)),
            None => crate::json_view::money(minor, currency),
        }
    }

    /// A day: `Jan 15, 2026` (en), `15 ene 2026` (es-ES), `15.01.2026` (de).
    pub fn date(&self, day: NaiveDate) -> String {
        match &self.formats {
            Some(f) => f.date(day),
            None => day.to_string(),
        }
    }

    /// A moment, to the minute, in UTC: `Jan 15, 2026, 14:05 UTC`.
    pub fn time(&self, at: DateTime<Utc>) -> String {
        format!("{}, {}", self.date(at.date_naive()), at.format("%H:%M UTC"))
    }

    /// A stored time (microseconds); a damaged one says so rather than showing 1970.
    pub fn stamp(&self, micros: i64) -> String {
        store::from_micros(micros)
            .map_or_else(|_| "(time out of range)".to_owned(), |t| self.time(t))
    }

    /// A value an API payload carries as text, when it is a day (`2026-01-31`) or a
    /// moment (RFC 3339): as the language writes it; anything else is `None`.
    pub fn date_text(&self, text: &str) -> Option<String> {
        if text.len() == 10
            && let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        {
            return Some(self.date(day));
        }
        if (20..=40).contains(&text.len())
            && let Ok(at) = DateTime::parse_from_rfc3339(text)
        {
            return Some(self.time(at.with_timezone(&Utc)));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_follow_the_language() {
        assert_eq!(Local::english().money(119_000, "EUR"), "1,190.00 EUR");
        assert_eq!(Local::of("en_US").money(-5, "EUR"), "-0.05 EUR");
        assert_eq!(Local::of("es_ES").money(1_210_000, "EUR"), "12.100,00 EUR");
        // CLDR: Spanish groups from five digits.
        assert_eq!(Local::of("es_ES").money(119_000, "EUR"), "1190,00 EUR");
        assert_eq!(Local::of("de").money(119_000, "EUR"), "1.190,00 EUR");
        let fr = Local::of("fr");
        assert_eq!(
            fr.money(119_000, "EUR")
                .replace(['\u{202f}', '\u{a0}'], " "),
            "1 190,00 EUR"
        );
        assert_eq!(Local::of("de").money(1_000, "JPY"), "1.000 JPY");
        assert_eq!(Local::of("es").money(1_234, "KWD"), "1,234 KWD");
    }

    #[test]
    fn unknown_languages_read_as_english() {
        for tag in ["", "zz", "not a tag"] {
            assert_eq!(Local::of(tag).money(119_000, "EUR"), "1,190.00 EUR");
            assert_eq!(Local::of(tag).tag(), "en");
        }
        assert_eq!(Local::of("es_ES").tag(), "es-ES");
    }

    #[test]
    fn days_and_moments_follow_the_language() {
        let es = Local::of("es_ES");
        let en = Local::english();
        assert_eq!(
            es.date_text("2026-01-31").as_deref(),
            Some("31 ene 2026"),
            "{:?}",
            es.date_text("2026-01-31")
        );
        assert_eq!(en.date_text("2026-01-31").as_deref(), Some("Jan 31, 2026"));
        assert_eq!(
            en.date_text("2026-01-31T14:05:09Z").as_deref(),
            Some("Jan 31, 2026, 14:05 UTC")
        );
        assert_eq!(
            es.date_text("2026-01-31T15:05:00+01:00").as_deref(),
            Some("31 ene 2026, 14:05 UTC")
        );
        for not_a_day in ["Consulting", "2026-13-01", "2026-01-31 extra", "12345"] {
            assert_eq!(en.date_text(not_a_day), None, "{not_a_day}");
        }
        assert_eq!(es.stamp(i64::MAX), "(time out of range)");
    }
}
