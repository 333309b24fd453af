//! Every word the templates print, in English and Spanish.
//!
//! Labels travel to Typst inside the JSON data (as `labels`), so templates hold layout only
//! and a new language is one more table here.

use serde::Serialize;

use crate::format::Lang;
use crate::model::{CorrectionReason, DocumentKind};

/// The fixed texts of one language, serialized into the template data.
#[derive(Debug, Serialize)]
pub struct Labels {
    /// Diagonal watermark on drafts.
    pub watermark: &'static str,
    /// Printed instead of a reference while a document is a draft.
    pub draft_reference: &'static str,
    pub reference: &'static str,
    pub issue_date: &'static str,
    pub due_date: &'static str,
    pub issuer: &'static str,
    pub recipient: &'static str,
    pub fiscal_id: &'static str,
    pub vat_id: &'static str,
    /// Header row of the line table: concept, quantity, unit price, taxes, amount.
    pub columns: [&'static str; 5],
    pub tax_breakdown: &'static str,
    /// Header row of the tax table: tax, base, amount.
    pub tax_columns: [&'static str; 3],
    pub vat: &'static str,
    pub withholding: &'static str,
    pub net: &'static str,
    pub taxes: &'static str,
    pub total: &'static str,
    pub exchange_rates: &'static str,
    pub payment: &'static str,
    pub bank: &'static str,
    pub iban: &'static str,
    pub bic: &'static str,
    pub corrective: &'static str,
    pub notes: &'static str,
    #[serde(skip)]
    pub payment_terms: &'static str,
    /// `{n}` is replaced by the number of days.
    #[serde(skip)]
    pub days: &'static str,
    #[serde(skip)]
    pub supply_date: &'static str,
    #[serde(skip)]
    pub period: &'static str,
    #[serde(skip)]
    pub buyer_reference: &'static str,
    #[serde(skip)]
    pub order_reference: &'static str,
    pub amounts_in: &'static str,
    #[serde(skip)]
    pub rate_frozen_on: &'static str,
    #[serde(skip)]
    pub corrects: &'static str,
    #[serde(skip)]
    pub dated: &'static str,
    #[serde(skip)]
    pub reason: &'static str,
}

static EN: Labels = Labels {
    watermark: "DRAFT",
    draft_reference: "Draft",
    reference: "Number",
    issue_date: "Issue date",
    due_date: "Due date",
    issuer: "From",
    recipient: "Bill to",
    fiscal_id: "Tax ID",
    vat_id: "VAT number",
    columns: ["Description", "Quantity", "Unit price", "Tax", "Amount"],
    tax_breakdown: "Tax breakdown",
    tax_columns: ["Tax", "Base", "Amount"],
    vat: "VAT",
    withholding: "Withholding",
    net: "Net amount",
    taxes: "Taxes",
    total: "Total",
    exchange_rates: "Exchange rates",
    payment: "Payment instructions",
    bank: "Bank",
    iban: "IBAN",
    bic: "BIC",
    corrective: "Correction",
    notes: "Notes",
    payment_terms: "Payment terms",
    days: "{n} days from the issue date",
    supply_date: "Date of supply",
    period: "Period",
    buyer_reference: "Your reference",
    order_reference: "Purchase order",
    amounts_in: "Amounts in",
    rate_frozen_on: "rate frozen on",
    corrects: "Corrects invoice",
    dated: "of",
    reason: "Reason",
};

static ES: Labels = Labels {
    watermark: "BORRADOR",
    draft_reference: "Borrador",
    reference: "Número",
    issue_date: "Fecha de expedición",
    due_date: "Fecha de vencimiento",
    issuer: "Emisor",
    recipient: "Destinatario",
    fiscal_id: "NIF",
    vat_id: "NIF-IVA",
    columns: [
        "Concepto",
        "Cantidad",
        "Precio unitario",
        "Impuestos",
        "Importe",
    ],
    tax_breakdown: "Desglose de impuestos",
    tax_columns: ["Impuesto", "Base imponible", "Cuota"],
    vat: "IVA",
    withholding: "Retención IRPF",
    net: "Base imponible",
    taxes: "Impuestos",
    total: "Total",
    exchange_rates: "Tipos de cambio",
    payment: "Instrucciones de pago",
    bank: "Banco",
    iban: "IBAN",
    bic: "BIC",
    corrective: "Rectificación",
    notes: "Observaciones",
    payment_terms: "Condiciones de pago",
    days: "{n} días desde la fecha de expedición",
    supply_date: "Fecha de la operación",
    period: "Periodo",
    buyer_reference: "Su referencia",
    order_reference: "Pedido",
    amounts_in: "Importes en",
    rate_frozen_on: "tipo fijado el",
    corrects: "Rectifica la factura",
    dated: "de",
    reason: "Motivo",
};

/// The labels of a language.
pub fn labels(lang: Lang) -> &'static Labels {
    match lang {
        Lang::En => &EN,
        Lang::Es => &ES,
    }
}

/// The document title.
pub fn title(kind: DocumentKind, lang: Lang) -> &'static str {
    match (kind, lang) {
        (DocumentKind::Invoice, Lang::En) => "Invoice",
        (DocumentKind::Invoice, Lang::Es) => "Factura",
        (DocumentKind::CorrectiveInvoice, Lang::En) => "Corrective invoice",
        (DocumentKind::CorrectiveInvoice, Lang::Es) => "Factura rectificativa",
        (DocumentKind::Proforma, Lang::En) => "Proforma invoice",
        (DocumentKind::Proforma, Lang::Es) => "Factura proforma",
    }
}

/// The notice printed on proformas.
pub fn proforma_notice(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "This proforma is not an invoice and has no tax effect.",
        Lang::Es => "Esta factura proforma no es una factura y no tiene efectos fiscales.",
    }
}

/// The code of a correction reason, as printed.
pub fn reason_code(reason: CorrectionReason) -> &'static str {
    match reason {
        CorrectionReason::R1 => "R1",
        CorrectionReason::R2 => "R2",
        CorrectionReason::R3 => "R3",
        CorrectionReason::R4 => "R4",
        CorrectionReason::R5 => "R5",
    }
}

/// A short name for a VAT treatment code; empty where the rate says it all.
///
/// Unknown codes are printed as they are, so a new treatment never disappears silently.
pub fn treatment(code: &str, lang: Lang) -> String {
    let known = match (code, lang) {
        ("domestic" | "intra_eu_b2c" | "outside_eu_b2c" | "", _) => "",
        ("reverse_charge", Lang::En) => "Reverse charge",
        ("reverse_charge", Lang::Es) => "Inversión del sujeto pasivo",
        ("intra_eu_exempt", Lang::En) => "Exempt intra-EU supply",
        ("intra_eu_exempt", Lang::Es) => "Entrega intracomunitaria exenta",
        ("export_exempt", Lang::En) => "Exempt export",
        ("export_exempt", Lang::Es) => "Exportación exenta",
        ("not_subject", Lang::En) => "Not subject",
        ("not_subject", Lang::Es) => "No sujeta",
        ("no_vat", Lang::En) => "No VAT",
        ("no_vat", Lang::Es) => "Sin IVA",
        (other, _) => return other.to_owned(),
    };
    known.to_owned()
}
