//! Bank account identifiers: IBAN (ISO 13616) and BIC (ISO 9362).

use std::{fmt, str::FromStr};

use iban::IbanLike;

use crate::country::CountryCode;

/// Why an IBAN was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IbanError {
    /// The value does not have the IBAN shape (country, 2 check digits, up to 30 letters or digits).
    #[error(
        "`{0}` is not an IBAN; expected a 2-letter country code, 2 check digits and the account number, e.g. ES91 2100 0418 4502 0005 1332"
    )]
    Format(String),
    /// The IBAN check digits do not match the rest of the number.
    #[error("`{0}` has wrong IBAN check digits; check the IBAN for typos")]
    Checksum(String),
    /// The country prefix does not use IBANs.
    #[error("`{0}` starts with a country that does not use IBANs; check the first two letters")]
    UnknownCountry(String),
    /// The account part does not have the length or layout its country prescribes.
    #[error(
        "`{0}` does not have the length or layout of an IBAN of its country; check for missing or extra characters"
    )]
    CountryFormat(String),
}

/// A validated IBAN, stored in its electronic form (upper-case, no spaces).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Iban(String);

impl Iban {
    /// Parses an IBAN given in electronic or paper form; spaces, hyphens and an `IBAN` label are ignored.
    pub fn parse(input: &str) -> Result<Self, IbanError> {
        let compact: String = input
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .flat_map(char::to_uppercase)
            .collect();
        // Paper forms often start with the label, as in "IBAN ES91 ...".
        let compact = compact.strip_prefix("IBAN").unwrap_or(&compact);
        let shown = || input.trim().to_owned();
        match compact.parse::<iban::Iban>() {
            Ok(parsed) => Ok(Self(parsed.electronic_str().to_owned())),
            Err(iban::ParseIbanError::InvalidBaseIban {
                source: iban::ParseBaseIbanError::InvalidChecksum,
            }) => Err(IbanError::Checksum(shown())),
            Err(iban::ParseIbanError::InvalidBaseIban { .. }) => Err(IbanError::Format(shown())),
            Err(iban::ParseIbanError::UnknownCountry(_)) => Err(IbanError::UnknownCountry(shown())),
            Err(iban::ParseIbanError::InvalidBban(_)) => Err(IbanError::CountryFormat(shown())),
        }
    }

    /// The electronic form, e.g. `ES9121000418450200051332`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The paper form in groups of four, e.g. `ES91 2100 0418 4502 0005 1332`.
    pub fn display_grouped(&self) -> String {
        let mut out = String::with_capacity(self.0.len() + self.0.len() / 4);
        for (i, c) in self.0.chars().enumerate() {
            if i > 0 && i % 4 == 0 {
                out.push(' ');
            }
            out.push(c);
        }
        out
    }

    /// The two-letter country prefix as written in the IBAN, e.g. `ES`.
    pub fn country_code(&self) -> &str {
        self.0.get(..2).unwrap_or_default()
    }

    /// The ISO country of the IBAN; `None` for the few IBAN prefixes that are not ISO 3166 codes (Kosovo's `XK`).
    pub fn country(&self) -> Option<CountryCode> {
        CountryCode::parse(self.country_code()).ok()
    }
}

impl FromStr for Iban {
    type Err = IbanError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Iban {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a BIC was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BicError {
    /// The value does not have the BIC layout.
    #[error(
        "`{0}` is not a BIC; expected 8 or 11 characters: 4-letter bank code, 2-letter country, 2-character location and an optional 3-character branch, e.g. CAIXESBBXXX"
    )]
    Format(String),
    /// Characters 5 and 6 are not an ISO country code.
    #[error(
        "`{bic}` has `{country}` as its country, which is not an ISO 3166 country code; check characters 5 and 6"
    )]
    UnknownCountry {
        /// The BIC as given.
        bic: String,
        /// The two characters in the country position.
        country: String,
    },
}

/// A validated BIC (SWIFT code), stored upper-case without spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bic {
    code: String,
    country: CountryCode,
}

impl Bic {
    /// Parses an 8- or 11-character BIC; case and spaces are ignored.
    pub fn parse(input: &str) -> Result<Self, BicError> {
        let compact: String = input
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_uppercase)
            .collect();
        let format_error = || BicError::Format(input.trim().to_owned());
        if !compact.is_ascii() || !(compact.len() == 8 || compact.len() == 11) {
            return Err(format_error());
        }
        let b = compact.as_bytes();
        let layout_ok = b[..4].iter().all(u8::is_ascii_uppercase)
            && b[4..6].iter().all(u8::is_ascii_uppercase)
            && b[6..].iter().all(u8::is_ascii_alphanumeric);
        if !layout_ok {
            return Err(format_error());
        }
        let country = CountryCode::parse(&compact[4..6]).map_err(|_| BicError::UnknownCountry {
            bic: input.trim().to_owned(),
            country: compact[4..6].to_owned(),
        })?;
        Ok(Self {
            code: compact,
            country,
        })
    }

    /// The BIC as stored, e.g. `CAIXESBBXXX`.
    pub fn as_str(&self) -> &str {
        &self.code
    }

    /// The 4-letter bank (institution) code, e.g. `CAIX`.
    pub fn bank_code(&self) -> &str {
        self.code.get(..4).unwrap_or_default()
    }

    /// The country of the bank.
    pub fn country(&self) -> CountryCode {
        self.country
    }

    /// The 2-character location code, e.g. `BB`.
    pub fn location(&self) -> &str {
        self.code.get(6..8).unwrap_or_default()
    }

    /// The 3-character branch code, if the BIC has 11 characters (`XXX` is the head office).
    pub fn branch(&self) -> Option<&str> {
        self.code.get(8..11)
    }
}

impl FromStr for Bic {
    type Err = BicError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Bic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_groups_ibans() {
        let iban = Iban::parse("es91 2100 0418 4502 0005 1332").unwrap();
        assert_eq!(iban.as_str(), "ES9121000418450200051332");
        assert_eq!(iban.display_grouped(), "ES91 2100 0418 4502 0005 1332");
        assert_eq!(iban.country_code(), "ES");
        assert_eq!(iban.country().unwrap().as_str(), "ES");
        let de = Iban::parse("IBAN DE44-5001-0517-5407-3249-31").unwrap();
        assert_eq!(de.to_string(), "DE44500105175407324931");
        assert_eq!(de.display_grouped(), "DE44 5001 0517 5407 3249 31");
        let kosovo = Iban::parse("XK051212012345678906").unwrap();
        assert_eq!(kosovo.country(), None);
    }

    #[test]
    fn rejects_bad_ibans() {
        assert!(matches!(
            Iban::parse("ES91 2100 0418 4502 0005 1333"),
            Err(IbanError::Checksum(_))
        ));
        assert!(matches!(Iban::parse("hello"), Err(IbanError::Format(_))));
        assert!(matches!(Iban::parse(""), Err(IbanError::Format(_))));
        assert!(matches!(
            Iban::parse("ES91 2100 0418 4502 0005 13é2"),
            Err(IbanError::Format(_))
        ));
        // Valid mod-97 check digits, but Spain's IBANs have 24 characters.
        assert!(matches!(
            Iban::parse("ES9712340"),
            Err(IbanError::CountryFormat(_))
        ));
        assert!(matches!(
            Iban::parse("ZZ4312345"),
            Err(IbanError::UnknownCountry(_))
        ));
    }

    #[test]
    fn parses_bics() {
        let bic = Bic::parse("caixesbbxxx").unwrap();
        assert_eq!(bic.as_str(), "CAIXESBBXXX");
        assert_eq!(bic.bank_code(), "CAIX");
        assert_eq!(bic.country().as_str(), "ES");
        assert_eq!(bic.location(), "BB");
        assert_eq!(bic.branch(), Some("XXX"));
        let short = Bic::parse(" DEUT DE FF ").unwrap();
        assert_eq!(short.to_string(), "DEUTDEFF");
        assert_eq!(short.branch(), None);
        assert!(Bic::parse("DEUTDEFF500").is_ok());
    }

    #[test]
    fn rejects_bad_bics() {
        for bad in [
            "",
            "DEUTDEF",
            "DEUTDEFF5",
            "DEUTDEFF5000",
            "DEU1DEFF",
            "DEUT1EFF",
            "DEUTDEF!",
            "DEUTDEFFÄ00",
        ] {
            assert!(matches!(Bic::parse(bad), Err(BicError::Format(_))), "{bad}");
        }
        assert_eq!(
            Bic::parse("DEUTXXFF"),
            Err(BicError::UnknownCountry {
                bic: "DEUTXXFF".into(),
                country: "XX".into()
            })
        );
    }
}
