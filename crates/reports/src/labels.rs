//! Every word a report prints, in English and Spanish (other languages get English
//! words with their own number and date formats).

/// The fixed texts of one language.
pub struct Labels {
    pub business_overview: &'static str,
    pub vat_summary: &'static str,
    pub profit_loss: &'static str,
    pub client_revenue: &'static str,
    pub expense_supplier: &'static str,
    pub generated: &'static str,
    pub amounts_in: &'static str,
    pub empty: &'static str,
    pub revenue: &'static str,
    pub expenses: &'static str,
    pub result: &'static str,
    pub invoices_issued: &'static str,
    pub correctives: &'static str,
    pub monthly: &'static str,
    pub top_customers: &'static str,
    pub customer: &'static str,
    pub customers: &'static str,
    pub supplier: &'static str,
    pub suppliers: &'static str,
    pub category: &'static str,
    pub uncategorized: &'static str,
    pub by_category: &'static str,
    pub invoices: &'static str,
    pub documents: &'static str,
    pub net: &'static str,
    pub tax: &'static str,
    pub total: &'static str,
    pub month: &'static str,
    pub output_vat: &'static str,
    pub input_vat: &'static str,
    pub vat_balance: &'static str,
    pub withholdings: &'static str,
    pub treatment: &'static str,
    pub rate: &'static str,
    pub base: &'static str,
    pub explicit_tax: &'static str,
    pub vat_note: &'static str,
    pub revenue_note: &'static str,
    pub by_month: &'static str,
    pub by_customer: &'static str,
    pub by_supplier: &'static str,
    pub invoiced_total: &'static str,
}

const EN: Labels = Labels {
    business_overview: "Business overview",
    vat_summary: "VAT summary",
    profit_loss: "Profit and loss",
    client_revenue: "Revenue by client",
    expense_supplier: "Expenses by supplier",
    generated: "Generated",
    amounts_in: "Amounts in",
    empty: "No invoices were issued and no expenses were recorded in this period.",
    revenue: "Revenue (net)",
    expenses: "Expenses (net)",
    result: "Result",
    invoices_issued: "Invoices issued",
    correctives: "corrective",
    monthly: "Revenue and expenses by month",
    top_customers: "Top customers",
    customer: "Customer",
    customers: "Customers",
    supplier: "Supplier",
    suppliers: "Suppliers",
    category: "Category",
    uncategorized: "Uncategorized",
    by_category: "Expenses by category",
    invoices: "Invoices",
    documents: "Documents",
    net: "Net",
    tax: "Tax",
    total: "Total",
    month: "Month",
    output_vat: "Output VAT",
    input_vat: "Input VAT",
    vat_balance: "VAT balance",
    withholdings: "Withholdings",
    treatment: "Treatment",
    rate: "Rate",
    base: "Base",
    explicit_tax: "Tax entered as lines",
    vat_note: "Output VAT comes from issued invoices, corrective invoices included; input VAT from expenses dated in the period. A positive balance is payable, a negative one deductible.",
    revenue_note: "Revenue is the taxable base of issued invoices (corrective invoices subtract). Amounts in different currencies are never added together.",
    by_month: "By month",
    by_customer: "By customer",
    by_supplier: "By supplier",
    invoiced_total: "Invoiced (total)",
};

const ES: Labels = Labels {
    business_overview: "Resumen del negocio",
    vat_summary: "Resumen de IVA",
    profit_loss: "Pérdidas y ganancias",
    client_revenue: "Ingresos por cliente",
    expense_supplier: "Gastos por proveedor",
    generated: "Generado",
    amounts_in: "Importes en",
    empty: "No se emitieron facturas ni se registraron gastos en este periodo.",
    revenue: "Ingresos (base)",
    expenses: "Gastos (base)",
    result: "Resultado",
    invoices_issued: "Facturas emitidas",
    correctives: "rectificativas",
    monthly: "Ingresos y gastos por mes",
    top_customers: "Principales clientes",
    customer: "Cliente",
    customers: "Clientes",
    supplier: "Proveedor",
    suppliers: "Proveedores",
    category: "Categoría",
    uncategorized: "Sin categoría",
    by_category: "Gastos por categoría",
    invoices: "Facturas",
    documents: "Documentos",
    net: "Base",
    tax: "Impuestos",
    total: "Total",
    month: "Mes",
    output_vat: "IVA repercutido",
    input_vat: "IVA soportado",
    vat_balance: "Resultado de IVA",
    withholdings: "Retenciones",
    treatment: "Régimen",
    rate: "Tipo",
    base: "Base imponible",
    explicit_tax: "Impuestos introducidos como líneas",
    vat_note: "El IVA repercutido procede de las facturas emitidas, rectificativas incluidas; el soportado, de los gastos del periodo. Un resultado positivo es a ingresar; uno negativo, a compensar o devolver.",
    revenue_note: "Los ingresos son la base imponible de las facturas emitidas (las rectificativas restan). Nunca se suman importes en monedas distintas.",
    by_month: "Por mes",
    by_customer: "Por cliente",
    by_supplier: "Por proveedor",
    invoiced_total: "Facturado (total)",
};

/// The labels of a primary language (`es`; anything else is English).
pub fn for_language(language: &str) -> &'static Labels {
    if language == "es" { &ES } else { &EN }
}

/// The name of a tax treatment code.
pub fn treatment(code: &str, language: &str) -> String {
    let es = language == "es";
    let name = match code {
        "domestic" => {
            if es {
                "Nacional"
            } else {
                "Domestic"
            }
        }
        "reverse_charge" => {
            if es {
                "Inversión del sujeto pasivo (UE)"
            } else {
                "Reverse charge (EU)"
            }
        }
        "intra_eu_exempt" => {
            if es {
                "Entrega intracomunitaria exenta"
            } else {
                "Intra-EU supply, exempt"
            }
        }
        "intra_eu_b2c" => {
            if es {
                "Venta a consumidor de la UE"
            } else {
                "EU consumer sale"
            }
        }
        "export_exempt" => {
            if es {
                "Exportación exenta"
            } else {
                "Export, exempt"
            }
        }
        "not_subject" => {
            if es {
                "No sujeto (fuera de la UE)"
            } else {
                "Not subject (outside the EU)"
            }
        }
        "outside_eu_b2c" => {
            if es {
                "Servicios a consumidor fuera de la UE"
            } else {
                "Services to non-EU consumer"
            }
        }
        "no_vat" => {
            if es {
                "Sin IVA"
            } else {
                "No VAT"
            }
        }
        other => return other.to_owned(),
    };
    name.to_owned()
}
