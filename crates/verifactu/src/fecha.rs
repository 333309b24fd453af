//! Dates (`dd-mm-yyyy`) and the record generation timestamp with its Spanish
//! UTC offset (`FechaHoraHusoGenRegistro`, e.g. `2024-01-01T19:20:30+01:00`).

use core::fmt;
use core::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeDelta, Timelike, Utc, Weekday};

use crate::error::ValidationError;

/// A calendar date written `dd-mm-yyyy` (XSD type `fecha`), e.g. `01-01-2024`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fecha(NaiveDate);

impl Fecha {
    /// Builds a date; the year must have four digits.
    pub fn new(year: i32, month: u32, day: u32) -> Result<Self, ValidationError> {
        let shown = format!("{day:02}-{month:02}-{year:04}");
        let date = NaiveDate::from_ymd_opt(year, month, day)
            .ok_or_else(|| ValidationError::format("Fecha", &shown, "not a calendar date"))?;
        Self::from_naive(date)
    }

    /// Wraps a `chrono` date; the year must have four digits.
    pub fn from_naive(date: NaiveDate) -> Result<Self, ValidationError> {
        if !(1000..=9999).contains(&date.year()) {
            return Err(ValidationError::format(
                "Fecha",
                &date.to_string(),
                "the AEAT format dd-mm-yyyy needs a four-digit year",
            ));
        }
        Ok(Self(date))
    }

    /// The underlying `chrono` date.
    pub const fn naive(self) -> NaiveDate {
        self.0
    }
}

impl fmt::Display for Fecha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}-{:02}-{:04}",
            self.0.day(),
            self.0.month(),
            self.0.year()
        )
    }
}

impl FromStr for Fecha {
    type Err = ValidationError;

    /// Parses exactly `dd-mm-yyyy`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = |reason| ValidationError::format("Fecha", t, reason);
        let b = t.as_bytes();
        let shape_ok = b.len() == 10
            && b[2] == b'-'
            && b[5] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 2 || i == 5 || c.is_ascii_digit());
        if !shape_ok {
            return Err(bad("expected dd-mm-yyyy"));
        }
        let num = |r: core::ops::Range<usize>| {
            t[r].parse::<u32>().map_err(|_| bad("expected dd-mm-yyyy"))
        };
        let (day, month, year) = (num(0..2)?, num(3..5)?, num(6..10)?);
        let year = i32::try_from(year).map_err(|_| bad("expected dd-mm-yyyy"))?;
        Self::new(year, month, day)
    }
}

/// The time zone whose offset is written in `FechaHoraHusoGenRegistro`.
///
/// Both follow the EU summer-time rule (Directive 2000/84/EC): summer time
/// from 01:00 UTC on the last Sunday of March to 01:00 UTC on the last Sunday
/// of October. The rule is applied to every year; it matches the legal time
/// in Spain from 1996 on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HusoHorario {
    /// Peninsula, Balearic Islands, Ceuta and Melilla (`Europe/Madrid`):
    /// `+01:00` in winter, `+02:00` in summer.
    #[default]
    Peninsula,
    /// Canary Islands (`Atlantic/Canary`): `+00:00` in winter, `+01:00` in summer.
    Canarias,
}

impl HusoHorario {
    /// UTC offset in seconds in force at `instant`.
    pub fn offset_seconds(self, instant: DateTime<Utc>) -> i32 {
        let base = match self {
            Self::Peninsula => 3600,
            Self::Canarias => 0,
        };
        if is_eu_summer_time(instant) {
            base + 3600
        } else {
            base
        }
    }
}

/// `true` when EU summer time is in force at `instant`.
fn is_eu_summer_time(instant: DateTime<Utc>) -> bool {
    let year = instant.year();
    match (eu_switch(year, 3), eu_switch(year, 10)) {
        (Some(start), Some(end)) => instant >= start && instant < end,
        _ => false,
    }
}

/// 01:00 UTC on the last Sunday of `month` (March or October, both 31 days long).
fn eu_switch(year: i32, month: u32) -> Option<DateTime<Utc>> {
    let last_day = NaiveDate::from_ymd_opt(year, month, 31)?;
    let back = last_day.weekday().num_days_from_sunday();
    let sunday = last_day.checked_sub_signed(TimeDelta::days(i64::from(back)))?;
    debug_assert_eq!(sunday.weekday(), Weekday::Sun);
    Some(sunday.and_hms_opt(1, 0, 0)?.and_utc())
}

/// `FechaHoraHusoGenRegistro`: local date and time with whole seconds and the
/// UTC offset in force, formatted `YYYY-MM-DDThh:mm:ss+hh:mm`.
///
/// ```
/// # use verifactu::{FechaHoraHuso, HusoHorario};
/// # use chrono::{TimeZone, Utc};
/// let t = Utc.with_ymd_and_hms(2024, 1, 1, 18, 20, 30).unwrap();
/// let f = FechaHoraHuso::from_utc(t, HusoHorario::Peninsula).unwrap();
/// assert_eq!(f.to_string(), "2024-01-01T19:20:30+01:00");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FechaHoraHuso {
    local: NaiveDateTime,
    offset_seconds: i32,
}

impl FechaHoraHuso {
    /// Converts a UTC instant to local time in `huso`, dropping fractions of a second.
    pub fn from_utc(instant: DateTime<Utc>, huso: HusoHorario) -> Result<Self, ValidationError> {
        let whole = instant.with_nanosecond(0).unwrap_or(instant);
        let offset_seconds = huso.offset_seconds(whole);
        let local = whole
            .naive_utc()
            .checked_add_signed(TimeDelta::seconds(i64::from(offset_seconds)))
            .filter(|l| (1000..=9999).contains(&l.year()))
            .ok_or_else(|| {
                ValidationError::format(
                    "FechaHoraHusoGenRegistro",
                    &instant.to_rfc3339(),
                    "the year must have four digits",
                )
            })?;
        Ok(Self {
            local,
            offset_seconds,
        })
    }

    /// The current time in the peninsula time zone (`Europe/Madrid`).
    pub fn now_madrid() -> Result<Self, ValidationError> {
        Self::from_utc(Utc::now(), HusoHorario::Peninsula)
    }

    /// Local date and time (whole seconds).
    pub const fn local(&self) -> NaiveDateTime {
        self.local
    }

    /// UTC offset in seconds (3600 for `+01:00`).
    pub const fn offset_seconds(&self) -> i32 {
        self.offset_seconds
    }

    /// The local calendar date, e.g. to use as `FechaExpedicionFactura`.
    pub fn fecha(&self) -> Result<Fecha, ValidationError> {
        Fecha::from_naive(self.local.date())
    }

    /// The instant in UTC.
    pub fn to_utc(&self) -> DateTime<Utc> {
        let utc = self.local - TimeDelta::seconds(i64::from(self.offset_seconds));
        utc.and_utc()
    }
}

impl fmt::Display for FechaHoraHuso {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.offset_seconds < 0 { '-' } else { '+' };
        let abs = self.offset_seconds.unsigned_abs();
        write!(
            f,
            "{}{sign}{:02}:{:02}",
            self.local.format("%Y-%m-%dT%H:%M:%S"),
            abs / 3600,
            (abs % 3600) / 60
        )
    }
}

impl FromStr for FechaHoraHuso {
    type Err = ValidationError;

    /// Parses exactly `YYYY-MM-DDThh:mm:ss±hh:mm`, the form this crate writes
    /// (so stored records can be rebuilt and re-hashed byte for byte).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || {
            ValidationError::format(
                "FechaHoraHusoGenRegistro",
                t,
                "expected YYYY-MM-DDThh:mm:ss+hh:mm",
            )
        };
        if t.len() != 25 || !t.is_ascii() {
            return Err(bad());
        }
        let local =
            NaiveDateTime::parse_from_str(&t[..19], "%Y-%m-%dT%H:%M:%S").map_err(|_| bad())?;
        let (sign, hh, mm) = (&t[19..20], &t[20..22], &t[23..25]);
        if &t[22..23] != ":" || !hh.bytes().chain(mm.bytes()).all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let magnitude = hh.parse::<i32>().map_err(|_| bad())? * 3600
            + mm.parse::<i32>().map_err(|_| bad())? * 60;
        let offset_seconds = match sign {
            "+" => magnitude,
            "-" => -magnitude,
            _ => return Err(bad()),
        };
        if magnitude > 14 * 3600 || !(1000..=9999).contains(&local.year()) {
            return Err(bad());
        }
        Ok(Self {
            local,
            offset_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn madrid(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> String {
        let t = Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap();
        FechaHoraHuso::from_utc(t, HusoHorario::Peninsula)
            .unwrap()
            .to_string()
    }

    #[test]
    fn fecha_round_trip() {
        let f: Fecha = "01-01-2024".parse().unwrap();
        assert_eq!(f.to_string(), "01-01-2024");
        assert_eq!(Fecha::new(2025, 2, 3).unwrap().to_string(), "03-02-2025");
        for bad in [
            "1-1-2024",
            "2024-01-01",
            "31-02-2024",
            "01/01/2024",
            "aa-bb-cccc",
            "01-01-0999",
        ] {
            assert!(bad.parse::<Fecha>().is_err(), "{bad}");
        }
    }

    #[test]
    fn winter_and_summer_offsets() {
        assert_eq!(madrid(2024, 1, 1, 18, 20, 30), "2024-01-01T19:20:30+01:00");
        assert_eq!(madrid(2026, 7, 15, 8, 0, 0), "2026-07-15T10:00:00+02:00");
        // New Year's Eve in UTC is already the next year in Madrid.
        assert_eq!(madrid(2025, 12, 31, 23, 30, 0), "2026-01-01T00:30:00+01:00");
    }

    #[test]
    fn switches_happen_at_one_utc_on_the_last_sunday() {
        // 2024: 31 March and 27 October.
        assert_eq!(madrid(2024, 3, 31, 0, 59, 59), "2024-03-31T01:59:59+01:00");
        assert_eq!(madrid(2024, 3, 31, 1, 0, 0), "2024-03-31T03:00:00+02:00");
        assert_eq!(madrid(2024, 10, 27, 0, 59, 59), "2024-10-27T02:59:59+02:00");
        assert_eq!(madrid(2024, 10, 27, 1, 0, 0), "2024-10-27T02:00:00+01:00");
        // 2025: 30 March and 26 October; 2026: 29 March and 25 October.
        assert_eq!(madrid(2025, 3, 30, 1, 0, 0), "2025-03-30T03:00:00+02:00");
        assert_eq!(madrid(2025, 10, 26, 1, 0, 0), "2025-10-26T02:00:00+01:00");
        assert_eq!(madrid(2026, 3, 29, 0, 59, 59), "2026-03-29T01:59:59+01:00");
        assert_eq!(madrid(2026, 10, 25, 0, 59, 59), "2026-10-25T02:59:59+02:00");
    }

    #[test]
    fn canarias_is_one_hour_behind() {
        let t = Utc.with_ymd_and_hms(2024, 7, 1, 12, 0, 0).unwrap();
        let f = FechaHoraHuso::from_utc(t, HusoHorario::Canarias).unwrap();
        assert_eq!(f.to_string(), "2024-07-01T13:00:00+01:00");
        let t = Utc.with_ymd_and_hms(2024, 1, 1, 12, 0, 0).unwrap();
        let f = FechaHoraHuso::from_utc(t, HusoHorario::Canarias).unwrap();
        assert_eq!(f.to_string(), "2024-01-01T12:00:00+00:00");
    }

    #[test]
    fn fractions_of_a_second_are_dropped() {
        let t =
            Utc.with_ymd_and_hms(2024, 1, 1, 18, 20, 30).unwrap() + TimeDelta::milliseconds(999);
        let f = FechaHoraHuso::from_utc(t, HusoHorario::Peninsula).unwrap();
        assert_eq!(f.to_string(), "2024-01-01T19:20:30+01:00");
    }

    #[test]
    fn parse_round_trip_and_utc() {
        let f: FechaHoraHuso = "2024-01-01T19:20:30+01:00".parse().unwrap();
        assert_eq!(f.to_string(), "2024-01-01T19:20:30+01:00");
        assert_eq!(
            f.to_utc(),
            Utc.with_ymd_and_hms(2024, 1, 1, 18, 20, 30).unwrap()
        );
        assert_eq!(f.fecha().unwrap().to_string(), "01-01-2024");
        for bad in [
            "2024-01-01T19:20:30Z",
            "2024-01-01 19:20:30+01:00",
            "2024-01-01T19:20:30+0100",
            "2024-13-01T19:20:30+01:00",
            "2024-01-01T19:20:30.5+01:00",
        ] {
            assert!(bad.parse::<FechaHoraHuso>().is_err(), "{bad}");
        }
    }
}
