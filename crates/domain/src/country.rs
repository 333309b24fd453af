//! ISO 3166-1 alpha-2 country codes and EU membership.

use std::fmt;

/// Every officially assigned ISO 3166-1 alpha-2 code.
const ISO_3166_ALPHA2: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

/// The 27 member states of the European Union.
const EU_MEMBERS: &str =
    "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK";

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
        let upper = code.trim().to_ascii_uppercase();
        if upper.len() == 2 && ISO_3166_ALPHA2.split(' ').any(|c| c == upper) {
            let b = upper.as_bytes();
            Ok(Self([b[0], b[1]]))
        } else {
            Err(UnknownCountry(code.to_owned()))
        }
    }

    /// The two-letter code, e.g. `ES`.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("??")
    }

    /// Whether the country is an EU member state (VAT Directive territory).
    pub fn is_eu(&self) -> bool {
        EU_MEMBERS.split(' ').any(|c| c == self.as_str())
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
