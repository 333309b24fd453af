//! The country-prefixed legal form of a company or entity, such as `ES:SL` or `DE:GmbH`.
//!
//! The country is the one the entity is incorporated in (or, for a person, is
//! tax resident in). It decides how documents to and from the entity are taxed,
//! so it is mandatory and never derived from the postal address. The spec's
//! prose names a hyphen as the separator while its examples use a colon, so
//! both are accepted; the canonical form uses a colon.

use std::{fmt, str::FromStr};

use crate::country::{CountryCode, UnknownCountry};

/// Why an entity type was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntityTypeError {
    /// No `CC:` or `CC-` country prefix.
    #[error(
        "`{0}` has no country prefix; write the ISO country, a colon and the legal form, e.g. ES:SL, DE:GmbH or US:Inc"
    )]
    MissingCountry(String),
    /// The prefix is not an ISO 3166-1 alpha-2 code.
    #[error(transparent)]
    UnknownCountry(#[from] UnknownCountry),
    /// Nothing after the separator.
    #[error("`{0}` has no legal form after the country; write it after the colon, e.g. ES:SL")]
    MissingLegalForm(String),
    /// The legal form is longer than 40 characters or contains control characters.
    #[error("`{0}` has an invalid legal form; use 1 to 40 printable characters after the country")]
    InvalidLegalForm(String),
}

/// Whether a stored type (`ES:SL`, `es-autonomo`) names Spain: the rule for Spanish issuers
/// (VERI*FACTU, Spanish documents) in one place.
pub fn is_spanish(entity_type: &str) -> bool {
    entity_type
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("ES:") || p.eq_ignore_ascii_case("ES-"))
}

/// A country plus a legal form, e.g. `ES:SL`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EntityType {
    country: CountryCode,
    legal_form: String,
}

/// Legal forms that denote a natural person rather than a legal entity.
///
/// Compared after lower-casing, folding accents and dropping spaces, dots,
/// hyphens and underscores, so `Autónomo`, `autonomo` and `P.F.` all match.
/// The list applies whatever the country, because these words are unambiguous:
/// - Spanish: `Autonomo`/`Autónomo` (self-employed), `PF` and `Persona Física`
///   (natural person), `Particular` (private individual);
/// - generic: `Individual`, `Person`, `Natural Person`, `Private`,
///   `Private Person`, `Consumer`, `Sole Trader`, `Sole Proprietor`,
///   `Sole Proprietorship`, `Freelancer`.
pub const INDIVIDUAL_LEGAL_FORMS: &[&str] = &[
    "autonomo",
    "pf",
    "personafisica",
    "particular",
    "individual",
    "person",
    "naturalperson",
    "private",
    "privateperson",
    "consumer",
    "soletrader",
    "soleproprietor",
    "soleproprietorship",
    "freelancer",
];

impl EntityType {
    /// Parses `CC:LegalForm` or `CC-LegalForm`; the country is case-insensitive, the legal form is kept as given (trimmed).
    pub fn parse(input: &str) -> Result<Self, EntityTypeError> {
        let trimmed = input.trim();
        let Some(split) = trimmed.find([':', '-']) else {
            return Err(EntityTypeError::MissingCountry(trimmed.to_owned()));
        };
        let (country, rest) = (trimmed[..split].trim(), &trimmed[split + 1..]);
        if country.chars().count() != 2 {
            return Err(EntityTypeError::MissingCountry(trimmed.to_owned()));
        }
        let country = CountryCode::parse(country)?;
        Self::new(country, rest).map_err(|e| match e {
            EntityTypeError::MissingLegalForm(_) => {
                EntityTypeError::MissingLegalForm(trimmed.to_owned())
            }
            other => other,
        })
    }

    /// Builds an entity type from its parts; the legal form is trimmed and must have 1-40 printable characters.
    pub fn new(country: CountryCode, legal_form: &str) -> Result<Self, EntityTypeError> {
        let legal_form = legal_form.trim();
        if legal_form.is_empty() {
            return Err(EntityTypeError::MissingLegalForm(format!("{country}:")));
        }
        if legal_form.chars().count() > 40 || legal_form.chars().any(char::is_control) {
            return Err(EntityTypeError::InvalidLegalForm(legal_form.to_owned()));
        }
        Ok(Self {
            country,
            legal_form: legal_form.to_owned(),
        })
    }

    /// The country of incorporation or tax residence.
    pub fn country(&self) -> CountryCode {
        self.country
    }

    /// The legal form as given, e.g. `GmbH`.
    pub fn legal_form(&self) -> &str {
        &self.legal_form
    }

    /// The canonical text form `CC:LegalForm`, e.g. `ES:SL`.
    pub fn canonical(&self) -> String {
        format!("{}:{}", self.country, self.legal_form)
    }

    /// Whether the legal form denotes a natural person (see [`INDIVIDUAL_LEGAL_FORMS`]).
    pub fn is_individual(&self) -> bool {
        INDIVIDUAL_LEGAL_FORMS.contains(&fold(&self.legal_form).as_str())
    }

    /// Whether this is a Spanish self-employed person (`ES:Autonomo`), who withholds IRPF.
    pub fn is_spanish_autonomo(&self) -> bool {
        self.country.as_str() == "ES" && fold(&self.legal_form) == "autonomo"
    }
}

impl FromStr for EntityType {
    type Err = EntityTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.country, self.legal_form)
    }
}

/// Lower-cases, folds common Latin accents and drops punctuation used inside abbreviations.
fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '.' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ñ' => 'n',
            'ç' => 'c',
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> EntityType {
        EntityType::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_both_separators() {
        let sl = parse("ES:SL");
        assert_eq!(sl.country().as_str(), "ES");
        assert_eq!(sl.legal_form(), "SL");
        assert_eq!(parse("es-sl").canonical(), "ES:sl");
        assert_eq!(parse(" DE : GmbH ").to_string(), "DE:GmbH");
        // Only the first separator splits; the legal form may contain more.
        assert_eq!(parse("US:S-Corp").legal_form(), "S-Corp");
        assert_eq!(parse("US-S-Corp").legal_form(), "S-Corp");
        assert_eq!(
            parse(&format!("FR:{}", "x".repeat(40))).legal_form().len(),
            40
        );
    }

    #[test]
    fn rejects_bad_types() {
        assert!(matches!(
            EntityType::parse("SL"),
            Err(EntityTypeError::MissingCountry(_))
        ));
        assert!(matches!(
            EntityType::parse("ESP:SL"),
            Err(EntityTypeError::MissingCountry(_))
        ));
        assert!(matches!(
            EntityType::parse(":SL"),
            Err(EntityTypeError::MissingCountry(_))
        ));
        assert!(matches!(
            EntityType::parse("XX:SL"),
            Err(EntityTypeError::UnknownCountry(_))
        ));
        assert_eq!(
            EntityType::parse("ES:  "),
            Err(EntityTypeError::MissingLegalForm("ES:".into()))
        );
        assert!(matches!(
            EntityType::parse(&format!("FR:{}", "x".repeat(41))),
            Err(EntityTypeError::InvalidLegalForm(_))
        ));
        assert!(matches!(
            EntityType::parse("FR:S\u{0}A"),
            Err(EntityTypeError::InvalidLegalForm(_))
        ));
    }

    #[test]
    fn individuals() {
        for s in [
            "ES:Autonomo",
            "ES:Autónomo",
            "es:AUTÓNOMO",
            "ES:PF",
            "ES:P.F.",
            "ES:Persona física",
            "ES:Particular",
            "GB:Sole Trader",
            "US:individual",
            "DE:Private person",
            "FR:Consumer",
        ] {
            assert!(parse(s).is_individual(), "{s}");
        }
        for s in [
            "ES:SL",
            "ES:SA",
            "DE:GmbH",
            "US:Inc",
            "GB:Ltd",
            "ES:Autonomos SL",
        ] {
            assert!(!parse(s).is_individual(), "{s}");
        }
        assert!(parse("ES:Autónomo").is_spanish_autonomo());
        assert!(!parse("ES:PF").is_spanish_autonomo());
        assert!(!parse("AR:Autonomo").is_spanish_autonomo());
    }
}
