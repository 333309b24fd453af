//! Business reports: figures from issued invoices and expenses, formatted per locale with
//! ICU4X, laid out by the `render` crate's report template.
//!
//! Pure: rows in, PDF bytes out. The database side is `store::reports`, the background
//! job `jobs` (`report.render`), the HTTP side `api` (`/v1/reports`). See docs/REPORTS.md.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod figures;
mod labels;
pub mod links;
pub mod locale;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

pub use figures::{CurrencyFigures, ExpenseIn, InvoiceIn};
pub use locale::{Formats, normalize, supported, supported_languages};

/// Most locales one request may ask for.
pub const MAX_LOCALES: usize = 10;

/// Rows shown in the "top customers" table of the overview.
const TOP_CUSTOMERS: usize = 10;

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("`{0}` is not a locale: use a language tag such as `en`, `es`, `es_ES` or `es-MX`")]
    Locale(String),
    #[error(
        "the service has no number and date formats for `{0}`: use a language it has data for \
         ({languages}), optionally with a region such as `es-MX` (report words are English or \
         Spanish)",
        languages = locale::supported_languages().join(", ")
    )]
    Unsupported(String),
    #[error("period_end must be after period_start")]
    Period,
    #[error(
        "the period spans more than {} months; ask for ten years at most",
        figures::MAX_MONTHS
    )]
    PeriodTooLong,
    #[error("a sum of this report does not fit in 64 bits; ask for a shorter period")]
    Overflow,
    #[error(
        "the report took longer than {0:?} to render; ask for a shorter period or raise INVOICING_REPORT_TIMEOUT_SECS"
    )]
    Timeout(std::time::Duration),
    #[error("rendering the report failed: {0}")]
    Render(#[from] render::RenderError),
    #[error("{0}")]
    Internal(String),
}

/// The five kinds of report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportType {
    BusinessOverview,
    VatSummary,
    ProfitLoss,
    ClientRevenue,
    ExpenseSupplier,
}

impl ReportType {
    /// Every type's code, as the API takes it.
    pub const CODES: [&'static str; 5] = [
        "business_overview",
        "vat_summary",
        "profit_loss",
        "client_revenue",
        "expense_supplier",
    ];

    /// The API code, e.g. `vat_summary`.
    pub fn code(self) -> &'static str {
        match self {
            Self::BusinessOverview => "business_overview",
            Self::VatSummary => "vat_summary",
            Self::ProfitLoss => "profit_loss",
            Self::ClientRevenue => "client_revenue",
            Self::ExpenseSupplier => "expense_supplier",
        }
    }

    /// The report's title in a language.
    pub fn title(self, language: &str) -> &'static str {
        let l = labels::for_language(language);
        match self {
            Self::BusinessOverview => l.business_overview,
            Self::VatSummary => l.vat_summary,
            Self::ProfitLoss => l.profit_loss,
            Self::ClientRevenue => l.client_revenue,
            Self::ExpenseSupplier => l.expense_supplier,
        }
    }
}

impl FromStr for ReportType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "business_overview" => Self::BusinessOverview,
            "vat_summary" => Self::VatSummary,
            "profit_loss" => Self::ProfitLoss,
            "client_revenue" => Self::ClientRevenue,
            "expense_supplier" => Self::ExpenseSupplier,
            other => {
                return Err(format!(
                    "`{other}` is not a report type: use one of {}",
                    Self::CODES.join(", ")
                ));
            }
        })
    }
}

/// Everything one report needs.
#[derive(Debug, Clone)]
pub struct Input {
    pub report_type: ReportType,
    /// Canonical locale tag (see [`normalize`]).
    pub locale: String,
    pub company_name: String,
    pub company_fiscal_id: Option<String>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub generated_at: DateTime<Utc>,
    pub invoices: Vec<InvoiceIn>,
    pub expenses: Vec<ExpenseIn>,
}

/// Computes the figures and renders the PDF.
pub fn render(input: &Input, limits: &render::Limits) -> Result<Vec<u8>, ReportError> {
    let view = view(input)?;
    render::render_report(&view, input.generated_at.date_naive(), limits).map_err(|e| match e {
        render::RenderError::Timeout(d) => ReportError::Timeout(d),
        other => ReportError::Render(other),
    })
}

/// The data the template reads: every text already formatted.
#[derive(Debug, Serialize)]
pub struct View {
    lang: String,
    title: String,
    company: String,
    fiscal_id: Option<String>,
    period: String,
    generated: String,
    empty: String,
    sections: Vec<Section>,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Section {
    title: String,
    subtitle: String,
    figures: Vec<Figure>,
    blocks: Vec<Block>,
}

#[derive(Debug, Serialize)]
struct Figure {
    label: String,
    value: String,
}

#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Block {
    Table {
        title: String,
        columns: Vec<String>,
        align: Vec<&'static str>,
        rows: Vec<Vec<String>>,
        total: Option<Vec<String>>,
    },
    Chart {
        title: String,
        legend: Vec<String>,
        max_label: String,
        bars: Vec<Bar>,
    },
}

#[derive(Debug, Serialize)]
struct Bar {
    label: String,
    /// Heights from 0 to 1 of the chart's height (negative values draw as 0).
    values: Vec<f64>,
}

/// Builds the template data of a report (public for tests and previews).
pub fn view(input: &Input) -> Result<View, ReportError> {
    let f = Formats::new(&input.locale)?;
    let l = labels::for_language(&f.language);
    let figures = figures::compute(
        input.period_start,
        input.period_end,
        &input.invoices,
        &input.expenses,
    )?;
    let last_day = (input.period_end - chrono::Duration::microseconds(1)).date_naive();
    let mut sections = Vec::new();
    for c in &figures {
        sections.push(section(input.report_type, c, &f, l)?);
    }
    let notes = match input.report_type {
        ReportType::VatSummary => vec![l.vat_note.to_owned()],
        _ => vec![l.revenue_note.to_owned()],
    };
    Ok(View {
        lang: f.language.clone(),
        title: input.report_type.title(&f.language).to_owned(),
        company: input.company_name.clone(),
        fiscal_id: input.company_fiscal_id.clone(),
        period: format!(
            "{} – {}",
            f.date(input.period_start.date_naive()),
            f.date(last_day)
        ),
        generated: format!(
            "{} {}",
            l.generated,
            f.date(input.generated_at.date_naive())
        ),
        empty: l.empty.to_owned(),
        sections,
        notes,
    })
}

fn section(
    kind: ReportType,
    c: &CurrencyFigures,
    f: &Formats,
    l: &labels::Labels,
) -> Result<Section, ReportError> {
    let digits = domain::currency::CurrencyCode::parse(&c.currency)
        .map(|cc| u8::try_from(cc.minor_units()).unwrap_or(2))
        .unwrap_or(2);
    let amount = |v: i64| f.amount(v, digits);
    let money = |v: i64| f.money(v, &c.currency, digits);
    let figure = |label: &str, value: String| Figure {
        label: label.to_owned(),
        value,
    };
    let sums_row = |name: String, s: &figures::Sums| {
        vec![
            name,
            f.count(s.count),
            amount(s.net),
            amount(s.tax),
            amount(s.total),
        ]
    };
    let sums_total = |rows: &[figures::Named]| -> Result<Vec<String>, ReportError> {
        let mut t = figures::Sums::default();
        for r in rows {
            t.count += r.sums.count;
            t.net = t.net.checked_add(r.sums.net).ok_or(ReportError::Overflow)?;
            t.tax = t.tax.checked_add(r.sums.tax).ok_or(ReportError::Overflow)?;
            t.total = t
                .total
                .checked_add(r.sums.total)
                .ok_or(ReportError::Overflow)?;
        }
        Ok(sums_row(l.total.to_owned(), &t))
    };
    let named = |n: &figures::Named| n.name.clone().unwrap_or_else(|| l.uncategorized.into());
    let sums_table = |title: &str, first: &str, count: &str, rows: &[figures::Named]| {
        Ok::<_, ReportError>(Block::Table {
            title: title.to_owned(),
            columns: vec![
                first.into(),
                count.into(),
                l.net.into(),
                l.tax.into(),
                l.total.into(),
            ],
            align: vec!["left", "right", "right", "right", "right"],
            rows: rows.iter().map(|r| sums_row(named(r), &r.sums)).collect(),
            total: Some(sums_total(rows)?),
        })
    };
    let invoices_figure = {
        let mut s = f.count(c.invoices);
        if c.correctives > 0 {
            s.push_str(&format!(" + {} {}", f.count(c.correctives), l.correctives));
        }
        s
    };

    let (figures, blocks) = match kind {
        ReportType::BusinessOverview => (
            vec![
                figure(l.revenue, money(c.revenue.net)),
                figure(l.expenses, money(c.expenses.net)),
                figure(l.result, money(c.result()?)),
                figure(l.invoices_issued, invoices_figure),
            ],
            vec![
                chart(l, f, c, digits),
                Block::Table {
                    title: l.top_customers.into(),
                    columns: vec![
                        l.customer.into(),
                        l.invoices.into(),
                        l.net.into(),
                        l.total.into(),
                    ],
                    align: vec!["left", "right", "right", "right"],
                    rows: c
                        .customers
                        .iter()
                        .take(TOP_CUSTOMERS)
                        .map(|r| {
                            vec![
                                named(r),
                                f.count(r.sums.count),
                                amount(r.sums.net),
                                amount(r.sums.total),
                            ]
                        })
                        .collect(),
                    total: None,
                },
            ],
        ),
        ReportType::VatSummary => {
            let mut rows: Vec<Vec<String>> = c
                .output_vat
                .iter()
                .map(|r| {
                    vec![
                        labels::treatment(&r.treatment, &f.language),
                        format!("{} %", r.rate),
                        amount(r.base),
                        amount(r.amount),
                    ]
                })
                .collect();
            if c.explicit_tax != 0 {
                rows.push(vec![
                    l.explicit_tax.into(),
                    String::new(),
                    String::new(),
                    amount(c.explicit_tax),
                ]);
            }
            let mut blocks = vec![Block::Table {
                title: l.output_vat.into(),
                columns: vec![
                    l.treatment.into(),
                    l.rate.into(),
                    l.base.into(),
                    l.tax.into(),
                ],
                align: vec!["left", "right", "right", "right"],
                rows,
                total: Some(vec![
                    l.total.into(),
                    String::new(),
                    amount(c.revenue.net),
                    amount(c.revenue.tax),
                ]),
            }];
            if !c.withholdings.is_empty() {
                blocks.push(Block::Table {
                    title: l.withholdings.into(),
                    columns: vec![l.rate.into(), l.base.into(), l.withholdings.into()],
                    align: vec!["left", "right", "right"],
                    rows: c
                        .withholdings
                        .iter()
                        .map(|r| vec![format!("{} %", r.rate), amount(r.base), amount(r.amount)])
                        .collect(),
                    total: Some(vec![l.total.into(), String::new(), amount(c.withholding)]),
                });
            }
            blocks.push(Block::Table {
                title: l.input_vat.into(),
                columns: vec![
                    l.category.into(),
                    l.documents.into(),
                    l.base.into(),
                    l.tax.into(),
                ],
                align: vec!["left", "right", "right", "right"],
                rows: c
                    .categories
                    .iter()
                    .map(|r| {
                        vec![
                            named(r),
                            f.count(r.sums.count),
                            amount(r.sums.net),
                            amount(r.sums.tax),
                        ]
                    })
                    .collect(),
                total: Some(vec![
                    l.total.into(),
                    f.count(c.expenses.count),
                    amount(c.expenses.net),
                    amount(c.expenses.tax),
                ]),
            });
            (
                vec![
                    figure(l.output_vat, money(c.revenue.tax)),
                    figure(l.input_vat, money(c.expenses.tax)),
                    figure(l.vat_balance, money(c.vat_balance()?)),
                    figure(l.withholdings, money(c.withholding)),
                ],
                blocks,
            )
        }
        ReportType::ProfitLoss => {
            let mut rows = Vec::new();
            for m in &c.months {
                let result = m
                    .revenue
                    .checked_sub(m.expenses)
                    .ok_or(ReportError::Overflow)?;
                rows.push(vec![
                    f.month(m.year, m.month),
                    amount(m.revenue),
                    amount(m.expenses),
                    amount(result),
                ]);
            }
            (
                vec![
                    figure(l.revenue, money(c.revenue.net)),
                    figure(l.expenses, money(c.expenses.net)),
                    figure(l.result, money(c.result()?)),
                ],
                vec![
                    Block::Table {
                        title: l.by_month.into(),
                        columns: vec![
                            l.month.into(),
                            l.revenue.into(),
                            l.expenses.into(),
                            l.result.into(),
                        ],
                        align: vec!["left", "right", "right", "right"],
                        rows,
                        total: Some(vec![
                            l.total.into(),
                            amount(c.revenue.net),
                            amount(c.expenses.net),
                            amount(c.result()?),
                        ]),
                    },
                    sums_table(l.by_category, l.category, l.documents, &c.categories)?,
                ],
            )
        }
        ReportType::ClientRevenue => (
            vec![
                figure(l.customers, f.count(c.customers.len() as i64)),
                figure(l.revenue, money(c.revenue.net)),
                figure(l.invoiced_total, money(c.revenue.total)),
            ],
            vec![sums_table(
                l.by_customer,
                l.customer,
                l.invoices,
                &c.customers,
            )?],
        ),
        ReportType::ExpenseSupplier => (
            vec![
                figure(l.suppliers, f.count(c.suppliers.len() as i64)),
                figure(l.expenses, money(c.expenses.net)),
                figure(l.total, money(c.expenses.total)),
            ],
            vec![
                sums_table(l.by_supplier, l.supplier, l.documents, &c.suppliers)?,
                sums_table(l.by_category, l.category, l.documents, &c.categories)?,
            ],
        ),
    };
    Ok(Section {
        title: c.currency.clone(),
        subtitle: format!("{} {}", l.amounts_in, c.currency),
        figures,
        blocks,
    })
}

/// Monthly revenue and expenses as bars scaled to the largest month.
fn chart(l: &labels::Labels, f: &Formats, c: &CurrencyFigures, digits: u8) -> Block {
    let max = c
        .months
        .iter()
        .flat_map(|m| [m.revenue, m.expenses])
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |v: i64| (v.max(0) as f64 / max as f64).clamp(0.0, 1.0);
    Block::Chart {
        title: l.monthly.into(),
        legend: vec![l.revenue.into(), l.expenses.into()],
        max_label: f.amount(max, digits),
        bars: c
            .months
            .iter()
            .map(|m| Bar {
                label: f.month(m.year, m.month),
                values: vec![scale(m.revenue), scale(m.expenses)],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn input(kind: ReportType, locale: &str) -> Input {
        let at = |m| Utc.with_ymd_and_hms(2026, m, 10, 9, 0, 0).unwrap();
        Input {
            report_type: kind,
            locale: locale.into(),
            company_name: "Acme SL".into(),
            company_fiscal_id: Some("B12345674".into()),
            period_start: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            period_end: Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).unwrap(),
            generated_at: Utc.with_ymd_and_hms(2026, 4, 2, 0, 0, 0).unwrap(),
            invoices: vec![InvoiceIn {
                recipient_id: "c1".into(),
                recipient_name: "Cliente Uno".into(),
                corrective: false,
                currency: "EUR".into(),
                issued_at: at(2),
                net: 1_234_567,
                tax: 259_259,
                withholding: 0,
                total: 1_493_826,
                lines: vec![],
            }],
            expenses: vec![ExpenseIn {
                supplier_id: "s1".into(),
                supplier_name: "Proveedor".into(),
                category: Some("rent".into()),
                currency: "JPY".into(),
                date: at(3),
                net: 150_000,
                tax: 15_000,
                total: 165_000,
            }],
        }
    }

    #[test]
    fn every_type_renders_a_pdf_in_both_languages() {
        for kind in ReportType::CODES {
            for locale in ["en", "es-ES"] {
                let kind: ReportType = kind.parse().unwrap();
                let pdf = render(&input(kind, locale), &render::Limits::default())
                    .unwrap_or_else(|e| panic!("{kind:?} {locale}: {e}"));
                assert!(pdf.starts_with(b"%PDF"), "{kind:?} {locale}");
            }
        }
    }

    #[test]
    fn currencies_get_their_own_sections_and_minor_units() {
        let v = view(&input(ReportType::BusinessOverview, "es-ES")).unwrap();
        let json = serde_json::to_value(&v).unwrap();
        let titles: Vec<_> = json["sections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["title"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(titles, ["EUR", "JPY"]);
        // EUR with two decimals, es-ES grouping; JPY with none.
        assert_eq!(
            json["sections"][0]["figures"][0]["value"],
            "12.345,67\u{a0}EUR"
        );
        assert_eq!(
            json["sections"][1]["figures"][1]["value"],
            "150.000\u{a0}JPY"
        );
        assert_eq!(json["title"], "Resumen del negocio");
    }

    #[test]
    fn unknown_types_are_named() {
        let err = "sales".parse::<ReportType>().unwrap_err();
        assert!(err.contains("business_overview"), "{err}");
    }
}
