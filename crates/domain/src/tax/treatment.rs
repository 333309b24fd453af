//! The VAT treatment of a supply, with its stable code and the legal mention an invoice must carry.

use std::fmt;

use rust_decimal::Decimal;

/// How VAT applies to a supply, decided by [`determine_treatment`](super::determine_treatment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Treatment {
    /// Issuer and recipient in the same member state: the issuer's VAT at `rate`.
    Domestic {
        /// Standard rate of the issuer's state, in percent.
        rate: Decimal,
    },
    /// B2B services to another member state: no VAT, the recipient self-assesses (arts. 44 and 196).
    IntraEuReverseCharge,
    /// B2B goods dispatched to a VIES-registered recipient in another member state: exempt (art. 138).
    IntraEuExemptSupply,
    /// Supplies to a non-registered recipient in another member state: the issuer's VAT (arts. 45 and 32/33 below the threshold).
    IntraEuB2c {
        /// Standard rate of the issuer's state, in percent.
        rate: Decimal,
    },
    /// Goods dispatched outside the EU: exempt (art. 146).
    ExportExempt,
    /// Services to a business established outside the EU: place of supply abroad, not subject (art. 44).
    NotSubjectOutsideEu,
    /// Services to a consumer outside the EU: the issuer's VAT under the general rule (art. 45).
    OutsideEuB2cServices {
        /// Standard rate of the issuer's state, in percent.
        rate: Decimal,
    },
    /// The issuer is established outside the EU: the engine computes no VAT at all.
    NoVat,
}

impl Treatment {
    /// Every stable code, in declaration order.
    pub const CODES: [&'static str; 8] = [
        "domestic",
        "reverse_charge",
        "intra_eu_exempt",
        "intra_eu_b2c",
        "export_exempt",
        "not_subject",
        "outside_eu_b2c",
        "no_vat",
    ];

    /// A stable snake_case code for storage and APIs, e.g. `reverse_charge`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Domestic { .. } => "domestic",
            Self::IntraEuReverseCharge => "reverse_charge",
            Self::IntraEuExemptSupply => "intra_eu_exempt",
            Self::IntraEuB2c { .. } => "intra_eu_b2c",
            Self::ExportExempt => "export_exempt",
            Self::NotSubjectOutsideEu => "not_subject",
            Self::OutsideEuB2cServices { .. } => "outside_eu_b2c",
            Self::NoVat => "no_vat",
        }
    }

    /// Rebuilds a treatment from its [`code`](Self::code) and the stored VAT rate.
    ///
    /// The rate is needed because three treatments carry one; it is ignored for
    /// the others. `None` for an unknown code.
    pub fn from_code(code: &str, rate: Decimal) -> Option<Self> {
        Some(match code {
            "domestic" => Self::Domestic { rate },
            "reverse_charge" => Self::IntraEuReverseCharge,
            "intra_eu_exempt" => Self::IntraEuExemptSupply,
            "intra_eu_b2c" => Self::IntraEuB2c { rate },
            "export_exempt" => Self::ExportExempt,
            "not_subject" => Self::NotSubjectOutsideEu,
            "outside_eu_b2c" => Self::OutsideEuB2cServices { rate },
            "no_vat" => Self::NoVat,
            _ => return None,
        })
    }

    /// The VAT rate in percent: zero for exempt, reverse-charge and not-subject supplies, `None` when no VAT is computed.
    pub fn vat_rate(&self) -> Option<Decimal> {
        match self {
            Self::Domestic { rate }
            | Self::IntraEuB2c { rate }
            | Self::OutsideEuB2cServices { rate } => Some(*rate),
            Self::IntraEuReverseCharge
            | Self::IntraEuExemptSupply
            | Self::ExportExempt
            | Self::NotSubjectOutsideEu => Some(Decimal::ZERO),
            Self::NoVat => None,
        }
    }

    /// The mention the invoice must print (art. 226(11) and (11a)), in `en` or `es`; `None` when none is needed.
    ///
    /// The language is matched on its first two letters (`es_ES`, `es-MX` give
    /// Spanish); any other language gets English. The Spanish texts cite the
    /// Spanish VAT Act (Ley 37/1992) as Spanish issuers print them, except the
    /// reverse charge, which cites the Directive.
    pub fn legal_mention(&self, lang: &str) -> Option<&'static str> {
        let spanish = lang.get(..2).is_some_and(|l| l.eq_ignore_ascii_case("es"));
        let (en, es) = match self {
            Self::IntraEuReverseCharge => (
                "Reverse charge: VAT to be accounted for by the recipient (Article 196 of Directive 2006/112/EC)",
                "Inversión del sujeto pasivo (art. 196 Directiva 2006/112/CE)",
            ),
            Self::IntraEuExemptSupply => (
                "Exempt intra-Community supply of goods (Article 138 of Directive 2006/112/EC)",
                "Entrega intracomunitaria exenta (art. 25 Ley 37/1992)",
            ),
            Self::ExportExempt => (
                "Exempt export of goods outside the EU (Article 146 of Directive 2006/112/EC)",
                "Exportación exenta (art. 21 Ley 37/1992)",
            ),
            Self::NotSubjectOutsideEu => (
                "Not subject to EU VAT: place of supply outside the EU (Article 44 of Directive 2006/112/EC)",
                "Operación no sujeta (art. 69 Ley 37/1992)",
            ),
            Self::Domestic { .. }
            | Self::IntraEuB2c { .. }
            | Self::OutsideEuB2cServices { .. }
            | Self::NoVat => return None,
        };
        Some(if spanish { es } else { en })
    }
}

impl fmt::Display for Treatment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}
