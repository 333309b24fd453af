//! The tax engine: which VAT treatment applies to an invoice and the tax lines it produces.
//!
//! The rules follow the EU VAT Directive 2006/112/EC and are data-driven: the
//! decision depends only on the issuer's and recipient's countries, whether
//! the recipient is a business with a VIES VAT id, and whether goods or
//! services are supplied. Each rule is pinned by a unit test that cites its
//! article (see `tax/tests.rs`).
//!
//! | Issuer | Recipient | Supply | Treatment |
//! |---|---|---|---|
//! | outside the EU | any | any | [`Treatment::NoVat`] |
//! | EU state X | in X | any | [`Treatment::Domestic`], X's standard rate |
//! | EU state X | other EU state, VIES VAT id | services | [`Treatment::IntraEuReverseCharge`] (arts. 44, 196) |
//! | EU state X | other EU state, VIES VAT id | goods | [`Treatment::IntraEuExemptSupply`] (art. 138) |
//! | EU state X | other EU state, no VIES VAT id | any | [`Treatment::IntraEuB2c`], X's rate (arts. 45, 32, 33 below the threshold) |
//! | EU state X | outside the EU | goods | [`Treatment::ExportExempt`] (art. 146) |
//! | EU state X | outside the EU, business | services | [`Treatment::NotSubjectOutsideEu`] (art. 44) |
//! | EU state X | outside the EU, consumer | services | [`Treatment::OutsideEuB2cServices`], X's rate (art. 45) |
//!
//! A business in another member state **without** a VIES VAT id is treated as
//! a consumer: the exemption of art. 138 and the reverse charge of art. 196
//! both require the recipient to be identified for VAT in another member state,
//! and the issuer can only prove that with a VIES-registered id.
//!
//! Spanish IRPF: when the issuer is a Spanish autónomo (`ES:Autonomo`)
//! supplying **services** to a business established in Spain, a withholding
//! of 15 % of each line's base is added as a negative line (art. 101.5 Ley
//! 35/2006, art. 95 RD 439/2007). Supplies of goods are not professional
//! income and carry no withholding.
//!
//! # Out of scope
//!
//! The engine never guesses; these cases are **not** handled and need a
//! manual tax line:
//! - B2C distance sales of goods and TBE services above the EU-wide
//!   €10,000 threshold, taxed in the customer's state through the One-Stop
//!   Shop (OSS, arts. 33, 58, 59c, 369a ff.); the issuer's rate is applied;
//! - services whose place of supply has a special rule (art. 47 immovable
//!   property, art. 53/54 events, art. 56 transport hire, art. 59 consultancy
//!   and similar to non-EU consumers, art. 58 electronic services);
//! - Canary Islands (IGIC), Ceuta and Melilla (IPSI), Northern Ireland goods
//!   (`XI`) and other territories excluded from the VAT area (art. 6);
//! - Spanish recargo de equivalencia, domestic reverse charges (construction,
//!   scrap, gold), reduced and super-reduced rates per product, exemptions of
//!   arts. 132 and 135 (health, education, finance, insurance);
//! - issuers under a small-enterprise VAT exemption (arts. 281-294), who
//!   must not charge VAT at all;
//! - IRPF rates other than the general 15 % (7 % for new professionals,
//!   module-based activities).

mod rates;
#[cfg(test)]
mod tests;
mod treatment;

pub use rates::standard_rate;
pub use treatment::Treatment;

use rust_decimal::Decimal;

use crate::country::CountryCode;
use crate::entity_type::EntityType;
use crate::money::{self, MoneyError};

/// The Spanish IRPF withholding on professional services, in percent (negative: it reduces the total).
pub const IRPF_PROFESSIONAL_RATE: Decimal = Decimal::from_parts(15, 0, 0, true, 0);

/// Why taxes could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaxError {
    /// An amount left the supported range.
    #[error(transparent)]
    Money(#[from] MoneyError),
    /// An EU member state is missing from the rate table (a bug in this crate, reported instead of guessing a rate).
    #[error("no standard VAT rate is known for {0}; add a manual tax line or contact support")]
    NoStandardRate(CountryCode),
}

/// What the engine needs to know about one side of an invoice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Party {
    /// Country of establishment (the entity type's country, not the postal address).
    pub country: CountryCode,
    /// Whether the party acts as a business (see [`is_business`]).
    pub is_business: bool,
    /// Whether the party has a VAT id registered in VIES.
    pub has_vies_vat_id: bool,
}

/// The issuer of an invoice: a [`Party`] plus what only matters on the issuing side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issuer {
    /// Country and VAT status of the issuer.
    pub party: Party,
    /// Whether the issuer's company type is `ES:Autonomo` (self-employed in Spain).
    pub is_spanish_autonomo: bool,
}

/// Whether goods or services are supplied; decides the place of supply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SupplyType {
    /// Services (the spec's default).
    #[default]
    Services,
    /// Goods that are dispatched or transported.
    Goods,
}

impl SupplyType {
    /// The spec's value: `services` or `goods`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Services => "services",
            Self::Goods => "goods",
        }
    }

    /// Parses `services` or `goods` (case-insensitive); `None` for anything else.
    pub fn from_code(code: &str) -> Option<Self> {
        match code.trim().to_ascii_lowercase().as_str() {
            "services" => Some(Self::Services),
            "goods" => Some(Self::Goods),
            _ => None,
        }
    }
}

/// The kind of a computed tax line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaxKind {
    /// Value added tax.
    Vat,
    /// An income-tax withholding (Spanish IRPF); its amount is negative.
    Withholding,
}

/// One invoice line as the engine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaxableLine {
    /// The line's subtotal in minor units (negative on corrective lines).
    pub subtotal_minor: i64,
    /// Whether the line is itself an explicit tax line; such lines are skipped.
    pub is_tax: bool,
}

/// One computed tax line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaxLine {
    /// Index, in the input slice, of the line this tax applies to.
    pub line_index: usize,
    /// VAT or withholding.
    pub kind: TaxKind,
    /// Rate in percent: 0 for zero-rated treatments, negative for a withholding.
    pub rate: Decimal,
    /// The taxed base in minor units (the line's subtotal).
    pub base_minor: i64,
    /// `base × rate / 100`, rounded half-even to a minor unit.
    pub amount_minor: i64,
    /// The VAT treatment of the invoice, repeated so a line can be shown alone.
    pub treatment: Treatment,
}

/// The result of [`compute_taxes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxComputation {
    /// The VAT treatment of the whole invoice.
    pub treatment: Treatment,
    /// VAT lines (one per taxable line unless the treatment is `NoVat`), then withholding lines.
    pub lines: Vec<TaxLine>,
    /// Sum of the taxable lines' subtotals.
    pub net_minor: i64,
    /// Sum of the VAT amounts.
    pub vat_minor: i64,
    /// Sum of the withholding amounts (zero or negative).
    pub withholding_minor: i64,
    /// `net + vat + withholding`: what the recipient pays.
    pub total_minor: i64,
}

/// Whether an entity acts as a business for VAT purposes.
///
/// An entity is a business when it has a fiscal id, a VIES VAT id, or a legal
/// form other than an individual's (see
/// [`INDIVIDUAL_LEGAL_FORMS`](crate::entity_type::INDIVIDUAL_LEGAL_FORMS)).
/// So `ES:SL` is a business even before its NIF is entered, and an
/// `ES:Particular` with no ids is a consumer.
pub fn is_business(has_fiscal_id: bool, has_vies_vat_id: bool, entity_type: &EntityType) -> bool {
    has_fiscal_id || has_vies_vat_id || !entity_type.is_individual()
}

/// Decides the VAT treatment of a supply from `issuer` to `recipient` (see the module table).
///
/// A non-EU issuer gets [`Treatment::NoVat`]; an EU issuer's rate comes from
/// [`standard_rate`], and an EU state missing from it would yield `NoVat`
/// here, which [`compute_taxes`] reports as an error instead.
pub fn determine_treatment(issuer: &Party, recipient: &Party, supply: SupplyType) -> Treatment {
    let Some(rate) = standard_rate(issuer.country) else {
        return Treatment::NoVat;
    };
    if recipient.country == issuer.country {
        return Treatment::Domestic { rate };
    }
    if recipient.country.is_eu() {
        // Only a VIES-registered recipient proves the status arts. 138 and 196 need.
        return match (recipient.has_vies_vat_id, supply) {
            (true, SupplyType::Services) => Treatment::IntraEuReverseCharge,
            (true, SupplyType::Goods) => Treatment::IntraEuExemptSupply,
            (false, _) => Treatment::IntraEuB2c { rate },
        };
    }
    match (supply, recipient.is_business || recipient.has_vies_vat_id) {
        (SupplyType::Goods, _) => Treatment::ExportExempt,
        (SupplyType::Services, true) => Treatment::NotSubjectOutsideEu,
        (SupplyType::Services, false) => Treatment::OutsideEuB2cServices { rate },
    }
}

/// Whether the Spanish IRPF withholding applies (see the module docs).
pub fn irpf_applies(issuer: &Issuer, recipient: &Party, supply: SupplyType) -> bool {
    let spain = |c: CountryCode| c.as_str() == "ES";
    issuer.is_spanish_autonomo
        && spain(issuer.party.country)
        && spain(recipient.country)
        && recipient.is_business
        && supply == SupplyType::Services
}

/// Computes the VAT and withholding lines and the totals of an invoice.
///
/// Every non-tax line gets one VAT line (zero-rated treatments included, so a
/// breakdown and the legal mention can be shown), except under `NoVat`; then,
/// when [`irpf_applies`], one withholding line per non-tax line. Each amount is
/// rounded half-even on its own line and the totals are sums of lines.
pub fn compute_taxes(
    issuer: &Issuer,
    recipient: &Party,
    supply: SupplyType,
    lines: &[TaxableLine],
) -> Result<TaxComputation, TaxError> {
    if issuer.party.country.is_eu() && standard_rate(issuer.party.country).is_none() {
        return Err(TaxError::NoStandardRate(issuer.party.country));
    }
    let treatment = determine_treatment(&issuer.party, recipient, supply);
    let taxable: Vec<(usize, i64)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_tax)
        .map(|(i, l)| (i, l.subtotal_minor))
        .collect();

    let mut out = Vec::new();
    let mut push_lines = |kind, rate| -> Result<(), TaxError> {
        for &(line_index, base_minor) in &taxable {
            out.push(TaxLine {
                line_index,
                kind,
                rate,
                base_minor,
                amount_minor: money::percent_of(base_minor, rate)?,
                treatment,
            });
        }
        Ok(())
    };
    if let Some(rate) = treatment.vat_rate() {
        push_lines(TaxKind::Vat, rate)?;
    }
    if irpf_applies(issuer, recipient, supply) {
        push_lines(TaxKind::Withholding, IRPF_PROFESSIONAL_RATE)?;
    }

    let sum_of = |kind| {
        money::checked_sum(
            out.iter()
                .filter(|l| l.kind == kind)
                .map(|l| l.amount_minor),
        )
    };
    let net_minor = money::checked_sum(taxable.iter().map(|&(_, base)| base))?;
    let vat_minor = sum_of(TaxKind::Vat)?;
    let withholding_minor = sum_of(TaxKind::Withholding)?;
    let total_minor = money::checked_sum([net_minor, vat_minor, withholding_minor])?;
    Ok(TaxComputation {
        treatment,
        lines: out,
        net_minor,
        vat_minor,
        withholding_minor,
        total_minor,
    })
}
