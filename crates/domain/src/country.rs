//! ISO 3166-1 alpha-2 country codes and EU membership.

use std::fmt;

/// Every officially assigned ISO 3166-1 alpha-2 code.
const ISO_3166_ALPHA2: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

/// The 27 member states of the European Union.
const EU_MEMBERS: &str =
    "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK";

/// Which of the 26 x 26 two-letter codes are in `codes` (upper-case pairs, one space
/// between), indexed by [`slot`]; made when compiling, which fails if `codes` has any
/// other shape.
const fn table(codes: &str) -> [bool; 676] {
    let b = codes.as_bytes();
    let mut t = [false; 676];
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_uppercase() && b[i + 1].is_ascii_uppercase());
        assert!(i + 2 == b.len() || b[i + 2] == b' ');
        t[slot(b[i], b[i + 1])] = true;
        i += 3;
    }
    t
}

/// The place of an upper-case pair of letters in a [`table`].
const fn slot(a: u8, b: u8) -> usize {
    (a - b'A') as usize * 26 + (b - b'A') as usize
}

/// [`ISO_3166_ALPHA2`] as a table: a lookup rather than a scan of the string, which took
/// 6% of the server's instructions under create+issue (`bench/instructions`).
const ASSIGNED: [bool; 676] = table(ISO_3166_ALPHA2);

/// [`EU_MEMBERS`] as a table.
const IN_EU: [bool; 676] = table(EU_MEMBERS);

/// A valid ISO 3166-1 alpha-2 code, stored upper-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CountryCode([u8; 2]);

/// The code is not an ISO 3166-1 alpha-2 country.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an ISO 3166-1 alpha-2 country code (for example ES, DE, US)")]
pub struct UnknownCountry(pub String);

impl CountryCode {
    /// Parses a two-letter code; lower case is accepted and normalised.
    pub fn parse(code: &str) -> Result<Self, UnknownCountry> {
        if let &[a, b] = code.trim().as_bytes() {
            let (a, b) = (a.to_ascii_uppercase(), b.to_ascii_uppercase());
            if a.is_ascii_uppercase() && b.is_ascii_uppercase() && ASSIGNED[slot(a, b)] {
                return Ok(Self([a, b]));
            }
        }
        Err(UnknownCountry(code.to_owned()))
    }

    /// The two-letter code, e.g. `ES`.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("??")
    }

    /// Whether the country is an EU member state (VAT Directive territory).
    pub fn is_eu(&self) -> bool {
        IN_EU[slot(self.0[0], self.0[1])]
    }
}

/// The name of the country `code` (ISO 3166-1 alpha-2, any case) as printed on documents
/// in `language` (Spanish for `es...`, English otherwise); `None` for an unknown code.
pub fn name(code: &str, language: &str) -> Option<&'static str> {
    let code = code.trim().to_ascii_uppercase();
    let spanish = language
        .get(..2)
        .is_some_and(|l| l.eq_ignore_ascii_case("es"));
    crate::country_names::NAMES
        .binary_search_by(|(c, _, _)| (*c).cmp(code.as_str()))
        .ok()
        .and_then(|i| crate::country_names::NAMES.get(i))
        .map(|(_, en, es)| if spanish { *es } else { *en })
}

impl fmt::Display for CountryCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_codes() {
        assert_eq!(CountryCode::parse("es").unwrap().as_str(), "ES");
        assert!(CountryCode::parse("ES").unwrap().is_eu());
        assert!(!CountryCode::parse("GB").unwrap().is_eu());
        assert!(!CountryCode::parse("US").unwrap().is_eu());
        assert!(CountryCode::parse("XX").is_err());
        assert!(CountryCode::parse("ESP").is_err());
        assert_eq!(EU_MEMBERS.split(' ').count(), 27);
    }

    #[test]
    fn the_tables_hold_exactly_the_listed_codes() {
        let listed: Vec<&str> = ISO_3166_ALPHA2.split(' ').collect();
        let eu: Vec<&str> = EU_MEMBERS.split(' ').collect();
        assert_eq!(listed.len(), 249);
        for a in b'A'..=b'Z' {
            for b in b'A'..=b'Z' {
                let code = String::from_utf8(vec![a, b]).unwrap();
                let parsed = CountryCode::parse(&code);
                assert_eq!(parsed.is_ok(), listed.contains(&code.as_str()), "{code}");
                let lower = code.to_ascii_lowercase();
                assert_eq!(
                    CountryCode::parse(&format!(" {lower} ")).ok(),
                    parsed.clone().ok()
                );
                if let Ok(c) = parsed {
                    assert_eq!(c.as_str(), code);
                    assert_eq!(c.is_eu(), eu.contains(&code.as_str()), "{code}");
                }
            }
        }
        for odd in ["", "E", "ESP", "E1", "1E", "é", "E\u{301}", "ÉS"] {
            assert!(CountryCode::parse(odd).is_err(), "{odd:?}");
        }
    }

    #[test]
    fn names_every_country_in_english_and_spanish() {
        assert_eq!(name("de", "en"), Some("Germany"));
        assert_eq!(name("DE", "es_ES"), Some("Alemania"));
        assert_eq!(name("XX", "en"), None);
        for code in ISO_3166_ALPHA2.split(' ') {
            assert!(name(code, "en").is_some(), "{code}");
            assert!(name(code, "es").is_some(), "{code}");
        }
    }
}
