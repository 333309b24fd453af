//! Standard VAT rates of the EU-27 member states.
//!
//! Rates in force as of 2026, in percent. Reduced, super-reduced and parking
//! rates (per product category) are out of scope: the engine only applies the
//! standard rate and never guesses a reduced one. When a state changes its
//! rate, this table changes in one commit and the test below pins the values.

use rust_decimal::Decimal;

use crate::country::CountryCode;

/// A whole-number percentage, usable in a `const`.
const fn whole(percent: u32) -> Decimal {
    Decimal::from_parts(percent, 0, 0, false, 0)
}

/// Standard VAT rate per member state, keyed by ISO code (`GR` for Greece).
const STANDARD_RATES: [(&str, Decimal); 27] = [
    ("AT", whole(20)),
    ("BE", whole(21)),
    ("BG", whole(20)),
    ("CY", whole(19)),
    ("CZ", whole(21)),
    ("DE", whole(19)),
    ("DK", whole(25)),
    ("EE", whole(24)),
    ("ES", whole(21)),
    // Finland raised its rate to 25.5 % in September 2024.
    ("FI", Decimal::from_parts(255, 0, 0, false, 1)),
    ("FR", whole(20)),
    ("GR", whole(24)),
    ("HR", whole(25)),
    ("HU", whole(27)),
    ("IE", whole(23)),
    ("IT", whole(22)),
    ("LT", whole(21)),
    ("LU", whole(17)),
    ("LV", whole(21)),
    ("MT", whole(18)),
    ("NL", whole(21)),
    ("PL", whole(23)),
    ("PT", whole(23)),
    ("RO", whole(21)),
    ("SE", whole(25)),
    ("SI", whole(22)),
    ("SK", whole(23)),
];

/// The standard VAT rate of an EU member state in percent; `None` outside the EU.
pub fn standard_rate(country: CountryCode) -> Option<Decimal> {
    STANDARD_RATES
        .iter()
        .find(|(code, _)| *code == country.as_str())
        .map(|(_, rate)| *rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(code: &str) -> Option<String> {
        standard_rate(CountryCode::parse(code).unwrap()).map(|r| r.to_string())
    }

    #[test]
    fn every_member_state_has_exactly_one_rate() {
        for (code, _) in STANDARD_RATES {
            let country = CountryCode::parse(code).unwrap();
            assert!(country.is_eu(), "{code}");
            let count = STANDARD_RATES.iter().filter(|(c, _)| *c == code).count();
            assert_eq!(count, 1, "{code}");
        }
        assert_eq!(rate("US"), None);
        assert_eq!(rate("GB"), None);
        assert_eq!(rate("CH"), None);
    }

    #[test]
    fn rates_as_of_2026() {
        let expected = "AT 20 BE 21 BG 20 CY 19 CZ 21 DE 19 DK 25 EE 24 ES 21 FI 25.5 FR 20 \
                        GR 24 HR 25 HU 27 IE 23 IT 22 LT 21 LU 17 LV 21 MT 18 NL 21 PL 23 \
                        PT 23 RO 21 SE 25 SI 22 SK 23";
        let pairs: Vec<&str> = expected.split_whitespace().collect();
        assert_eq!(pairs.len(), 54);
        for pair in pairs.chunks(2) {
            assert_eq!(rate(pair[0]).as_deref(), Some(pair[1]), "{}", pair[0]);
        }
    }
}
