//! The JSON the templates read: an [`InvoiceDocument`] with every value already formatted.
//!
//! The templates load it with `json("/data.json")` and only place strings; no value in it is
//! ever parsed as Typst markup or code.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::RenderError;
use crate::format::{self, Lang, MAX_MINOR_DIGITS};
use crate::i18n::{self, Labels};
use crate::model::{DocumentKind, DocumentStatus, InvoiceDocument, Party, TaxKind};

/// Everything a template shows.
#[derive(Debug, Serialize)]
pub struct View<'a> {
    lang: &'static str,
    labels: &'static Labels,
    title: &'static str,
    draft: bool,
    reference: String,
    issue_date: String,
    due_date: Option<String>,
    /// Label and value of each statement of [`crate::model::LegalDetails`] the document makes.
    details: Vec<[String; 2]>,
    issuer: PartyView,
    recipient: PartyView,
    currency: &'a str,
    lines: Vec<[String; 5]>,
    /// Indices of the lines with a word of [`LONG_WORD_CHARS`] characters or more: the
    /// template passes only their cells through `soft()` (break opportunities inside long
    /// words), sparing a function call for each of up to 2,500 cells.
    soft_lines: Vec<usize>,
    /// For each number column of `lines` (quantity, unit price, taxes, subtotal), its
    /// longest values: the template measures these once to size the column, rather than
    /// letting the table measure every cell.
    widest: Vec<Vec<String>>,
    taxes: Vec<TaxRow>,
    totals: Vec<TotalRow>,
    exchange_rates: Vec<String>,
    bank_accounts: Vec<Vec<String>>,
    corrective: Option<[String; 2]>,
    notes: Option<&'a str>,
    notice: Option<&'static str>,
    qr: Option<&'a str>,
    has_footer: bool,
    has_post: bool,
    /// Whether `/factur-x.xml` is attached (the PDF is then PDF/A-3b: see `lib.rs`).
    facturx: bool,
    /// Read by the expressions that replace `{{key}}` tokens in company snippets.
    placeholders: &'a BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
struct PartyView {
    name: String,
    lines: Vec<String>,
}

#[derive(Debug, Serialize)]
struct TaxRow {
    label: String,
    treatment: String,
    base: String,
    amount: String,
    mention: Option<String>,
}

#[derive(Debug, Serialize)]
struct TotalRow {
    label: &'static str,
    amount: String,
    strong: bool,
}

/// Builds the view, rejecting malformed decimals and currencies.
pub fn build<'a>(doc: &'a InvoiceDocument) -> Result<View<'a>, RenderError> {
    let lang = Lang::from_tag(&doc.language);
    let labels = i18n::labels(lang);
    let digits = doc.currency.minor_digits;
    if digits > MAX_MINOR_DIGITS {
        return Err(invalid(format!(
            "currency.minor_digits is {digits}; at most {MAX_MINOR_DIGITS} are supported"
        )));
    }
    if doc.kind == DocumentKind::CorrectiveInvoice && doc.corrective.is_none() {
        return Err(invalid("a corrective invoice needs `corrective`".into()));
    }
    let money = |minor: i64| format::amount(minor, digits, lang);
    let dec = |what: &str, value: &str| {
        format::decimal(value, lang)
            .ok_or_else(|| invalid(format!("{what} `{value}` is not a decimal number")))
    };
    let percent = |what: &str, value: &str| dec(what, value).map(|v| format!("{v} %"));

    let mut lines = Vec::with_capacity(doc.lines.len());
    for (i, line) in doc.lines.iter().enumerate() {
        let mut quantity = dec(&format!("lines[{i}].quantity"), &line.quantity)?;
        if let Some(unit) = line.unit.as_deref().filter(|u| !u.trim().is_empty()) {
            quantity = format!("{quantity} {unit}");
        }
        let taxes = line
            .taxes
            .iter()
            .map(|t| percent(&format!("lines[{i}].taxes.rate"), &t.rate))
            .collect::<Result<Vec<_>, _>>()?
            .join(", ");
        lines.push([
            line.concept.clone(),
            quantity,
            money(line.unit_price_minor),
            taxes,
            money(line.subtotal_minor),
        ]);
    }

    let mut taxes = Vec::new();
    for entry in &doc.tax_breakdown {
        taxes.push(TaxRow {
            label: format!(
                "{} {}",
                labels.vat,
                percent("tax_breakdown.rate", &entry.rate)?
            ),
            treatment: i18n::treatment(&entry.treatment, lang),
            base: money(entry.base_minor),
            amount: money(entry.amount_minor),
            mention: entry.legal_mention.clone().filter(|m| !m.trim().is_empty()),
        });
    }
    for entry in &doc.withholding {
        let rate = percent("withholding.rate", &entry.rate)?;
        taxes.push(TaxRow {
            label: format!("{} {}", labels.withholding, rate),
            treatment: String::new(),
            base: money(entry.base_minor),
            amount: money(entry.amount_minor),
            mention: None,
        });
    }

    let t = &doc.totals;
    let mut totals = vec![
        total_row(labels.net, money(t.net_minor), false),
        total_row(labels.taxes, money(t.tax_minor), false),
    ];
    let withholds = t.withholding_minor != 0
        || !doc.withholding.is_empty()
        || doc
            .lines
            .iter()
            .flat_map(|l| &l.taxes)
            .any(|x| x.kind == TaxKind::Withholding);
    if withholds {
        totals.push(total_row(
            labels.withholding,
            money(t.withholding_minor),
            false,
        ));
    }
    let total = format!("{} {}", money(t.total_minor), doc.currency.code);
    totals.push(total_row(labels.total, total, true));

    let exchange_rates = doc
        .exchange_rates
        .iter()
        .map(|x| {
            let rate = dec("exchange_rates.rate", &x.rate)?;
            let on = format::date(x.frozen_on, lang);
            Ok(format!(
                "1 {} = {rate} {} ({} {on})",
                x.from, x.to, labels.rate_frozen_on
            ))
        })
        .collect::<Result<Vec<_>, RenderError>>()?;

    let bank_accounts = doc
        .bank_accounts
        .iter()
        .map(|account| {
            let mut rows = vec![account.name.clone()];
            let labelled = [
                (labels.bank, account.bank_name.clone()),
                (labels.iban, account.iban.as_deref().map(format::iban)),
                (labels.bic, account.bic.clone()),
            ];
            for (label, value) in labelled {
                if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
                    rows.push(format!("{label}: {value}"));
                }
            }
            rows
        })
        .collect();

    let corrective = doc.corrective.as_ref().map(|c| {
        let date = format::date(c.corrected_issue_date, lang);
        let code = i18n::reason_code(c.reason);
        [
            format!(
                "{} {} {} {date}",
                labels.corrects, c.corrected_reference, labels.dated
            ),
            format!("{}: {code} \u{2014} {}", labels.reason, c.reason_text),
        ]
    });

    Ok(View {
        lang: lang.code(),
        labels,
        title: i18n::title(doc.kind, lang),
        draft: doc.status == DocumentStatus::Draft,
        reference: doc
            .reference
            .clone()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| labels.draft_reference.to_owned()),
        issue_date: format::date(doc.issue_date, lang),
        due_date: doc.due_date.map(|d| format::date(d, lang)),
        details: details(&doc.legal, labels, lang),
        issuer: party(&doc.issuer, labels),
        recipient: party(&doc.recipient, labels),
        currency: &doc.currency.code,
        widest: widest_cells(&lines),
        soft_lines: lines
            .iter()
            .enumerate()
            .filter(|(_, cells)| cells.iter().any(|c| has_long_word(c)))
            .map(|(i, _)| i)
            .collect(),
        lines,
        taxes,
        totals,
        exchange_rates,
        bank_accounts,
        corrective: if doc.kind == DocumentKind::CorrectiveInvoice {
            corrective
        } else {
            None
        },
        notes: doc.notes.as_deref().filter(|n| !n.trim().is_empty()),
        notice: (doc.kind == DocumentKind::Proforma).then(|| i18n::proforma_notice(lang)),
        qr: doc.qr.as_ref().map(|q| q.caption.as_str()),
        has_footer: crate::model::has_text(&doc.footer_typst),
        has_post: crate::model::has_text(&doc.post_typst),
        facturx: doc.facturx.is_some(),
        placeholders: &doc.placeholders,
    })
}

/// Words this long get break opportunities from the templates' `soft()` (its `\S{25,}`).
const LONG_WORD_CHARS: usize = 25;

/// Whether `soft()` would change the text: it has a run of 25 or more non-whitespace characters.
fn has_long_word(text: &str) -> bool {
    text.split_whitespace()
        .any(|word| word.chars().nth(LONG_WORD_CHARS - 1).is_some())
}

/// Candidates for the widest cell of each number column: the three longest values.
/// Digits are of one width (`number-width: "tabular"`), so the longest string is nearly
/// always the widest; three leave room for units and separators of other widths.
fn widest_cells(lines: &[[String; 5]]) -> Vec<Vec<String>> {
    (1..5)
        .map(|column| {
            let mut best: Vec<&String> = Vec::with_capacity(4);
            for line in lines {
                let cell = &line[column];
                if best.contains(&cell) {
                    continue;
                }
                best.push(cell);
                best.sort_by_key(|b| std::cmp::Reverse(b.chars().count()));
                best.truncate(3);
            }
            best.into_iter().cloned().collect()
        })
        .collect()
}

/// The legal statements as label and value, in the order printed.
fn details(legal: &crate::model::LegalDetails, labels: &Labels, lang: Lang) -> Vec<[String; 2]> {
    let mut out = Vec::new();
    if let Some(days) = legal.payment_terms_days {
        out.push([
            labels.payment_terms.to_owned(),
            labels.days.replace("{n}", &days.to_string()),
        ]);
    }
    if let Some(d) = legal.delivery_date {
        out.push([labels.supply_date.to_owned(), format::date(d, lang)]);
    }
    if let Some((a, b)) = legal.period {
        out.push([
            labels.period.to_owned(),
            format!(
                "{} \u{2013} {}",
                format::date(a, lang),
                format::date(b, lang)
            ),
        ]);
    }
    for (label, value) in [
        (labels.buyer_reference, &legal.buyer_reference),
        (labels.order_reference, &legal.order_reference),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            out.push([label.to_owned(), v.to_owned()]);
        }
    }
    out
}

fn total_row(label: &'static str, amount: String, strong: bool) -> TotalRow {
    TotalRow {
        label,
        amount,
        strong,
    }
}

fn party(p: &Party, labels: &Labels) -> PartyView {
    let mut lines: Vec<String> = p.address_lines.clone();
    let zip_city = [p.zipcode.trim(), p.city.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    lines.push(zip_city);
    lines.extend(p.state.clone());
    lines.push(p.country.clone());
    lines.retain(|l| !l.trim().is_empty());
    if let Some(id) = p.fiscal_id.as_deref().filter(|s| !s.trim().is_empty()) {
        lines.push(format!("{}: {id}", labels.fiscal_id));
    }
    if let Some(id) = p.vat_id.as_deref().filter(|s| !s.trim().is_empty()) {
        lines.push(format!("{}: {id}", labels.vat_id));
    }
    PartyView {
        name: p.name.clone(),
        lines,
    }
}

fn invalid(message: String) -> RenderError {
    RenderError::InvalidInput(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_runs_of_25_characters() {
        assert!(!has_long_word("Consulting services, item 1"));
        assert!(!has_long_word(&format!("{} x", "a".repeat(24))));
        assert!(has_long_word(&format!("x {}", "a".repeat(25))));
        // Characters, not bytes: 24 two-byte letters are not long, 25 are.
        assert!(!has_long_word(&"é".repeat(24)));
        assert!(has_long_word(&"é".repeat(25)));
        // Any Unicode whitespace ends a word (as `\S` in the template's pattern).
        assert!(!has_long_word(&format!(
            "{}\u{3000}{}",
            "x".repeat(20),
            "y".repeat(20)
        )));
    }
}
