//! `loadgen seed-bulk`: one company with many issued invoices (issue 6: the dashboard and
//! the list at 1,000,000 invoices), written straight into the database.
//!
//! ```text
//! loadgen seed-bulk --base URL --token T --proof P --database-url URL --invoices N
//!                   [--customers 1000] [--years 3] [--batch ROWS] [--tx-rows 20000]
//! ```
//!
//! The company is set up through the running service like any other (registration,
//! agreements, a bank account, `--customers` customers in four classes: Irish (EUR, VAT),
//! German with a VIES id (EUR, reverse charge), American (USD) and British (GBP), both with
//! a frozen rate to EUR). Six draft invoices per class are made through the API, read back
//! from the database as templates and deleted again, so the lines, taxes, totals, rates
//! and bank-account snapshots are exactly what the service computes and stores.
//!
//! The N issued invoices are then written with multi-row `INSERT`s (`--batch` rows each)
//! inside transactions of `--tx-rows` rows through the `store` crate's pool (one code path
//! for SQLite and PostgreSQL), each row as `POST /v1/invoices/{id}/issue` leaves it: gapless numbers per
//! series and year in issue order, references in the company's format, frozen issuer and
//! recipient snapshots, `issued_at` spread evenly over `--years` years up to an hour ago,
//! ids that are UUIDv7 of their creation time (so the list's keyset order is issue order),
//! recipients skewed towards a few big customers, about 1% corrective invoices (full
//! reversals of a recent invoice, as `POST /v1/invoices/{id}/correct` makes them), half
//! with a due date 30 days out, about 80% paid in full and 5% in part (with their
//! `invoice_payments` rows), and the document counters and dashboard rollups left where
//! issuing would leave them (the rollups recomputed once by `store::dashboard::rebuild`).
//!
//! Batch sizes: on SQLite 10 rows, because sqlx-sqlite looks each `$N` parameter up by
//! name and that lookup walks every parameter (quadratic: 400 rows of 33 parameters are
//! five times slower than 10); on PostgreSQL 400 rows, because every statement larger
//! than a TLS record (16 KiB) waits about 40 ms for a delayed ACK (sqlx does not set
//! `TCP_NODELAY`), so fewer, larger statements win. A PostgreSQL URL with
//! `?sslmode=disable` (loopback only) saves another third.
//!
//! Afterwards it checks `GET /v1/dashboard` against figures summed while generating,
//! checks the first list page, issues one more invoice through the API (its number must
//! follow the seeded ones) and prints the company's JSON line for `loadgen run`.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    time::Instant,
};

use chrono::{DateTime, Datelike, TimeZone, Utc};
use serde_json::{Value, json};
use store::{invoices::InvoiceRow, payments::PaymentRow};

use crate::{Company, agent, arg, company_line, create_and_issue, need, send, send_raw, settle};

const SECOND: i64 = 1_000_000;
const DAY: i64 = 86_400 * SECOND;
/// Draft templates per customer class.
const VARIANTS: usize = 6;
/// Share of corrective invoices among the seeded ones.
const CORRECTIVE_SHARE: f64 = 0.01;

/// SplitMix64: a small deterministic generator, so every run seeds the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The four kinds of customer: country, currency and so tax treatment.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Class {
    Irish,
    German,
    American,
    British,
}

impl Class {
    const ALL: [Class; 4] = [Class::Irish, Class::German, Class::American, Class::British];

    /// 60% Irish, 15% German, 15% American, 10% British.
    fn of(customer: usize) -> Self {
        match customer % 20 {
            0..12 => Class::Irish,
            12..15 => Class::German,
            15..18 => Class::American,
            _ => Class::British,
        }
    }

    fn entity(self, i: usize) -> Value {
        let street = format!("{} High Street", i + 1);
        match self {
            Class::Irish => json!({"name": format!("Customer {i} Ltd"), "type": "IE:LTD",
                "fiscal_id": "IE6388047V", "email": format!("billing{i}@customer.test"),
                "address": {"lines": [street], "zipcode": "D01", "city": "Dublin", "country": "IE"}}),
            Class::German => json!({"name": format!("Kunde {i} GmbH"), "type": "DE:GmbH",
                "vies_vat_id": "DE136695976",
                "address": {"lines": [street], "zipcode": "10115", "city": "Berlin", "country": "DE"}}),
            Class::American => json!({"name": format!("Client {i} Inc"), "type": "US:Inc",
                "currency_code": "USD",
                "address": {"lines": [street], "zipcode": "10001", "city": "New York", "state": "NY", "country": "US"}}),
            Class::British => json!({"name": format!("Client {i} Ltd"), "type": "GB:Ltd",
                "currency_code": "GBP",
                "address": {"lines": [street], "zipcode": "EC1A 1BB", "city": "London", "country": "GB"}}),
        }
    }

    /// The rate to the company currency (EUR) a draft in this class's currency carries.
    fn rates(self) -> Value {
        match self {
            Class::Irish | Class::German => json!([]),
            Class::American => json!([{"from": "USD", "to": "EUR", "rate": "0.9212"}]),
            Class::British => json!([{"from": "GBP", "to": "EUR", "rate": "1.1734"}]),
        }
    }
}

/// Lines of draft template `v`: one to four lines of varied quantities and prices.
fn template_lines(v: usize) -> Value {
    const CONCEPTS: [&str; 6] = [
        "Consulting",
        "Software licence",
        "Support plan",
        "Travel expenses",
        "Training day",
        "Hosting",
    ];
    const QUANTITIES: [f64; 6] = [1.0, 2.0, 1.5, 8.0, 3.0, 12.0];
    let lines: Vec<Value> = (0..1 + v % 4)
        .map(|j| {
            json!({"concept": format!("{}, package {}", CONCEPTS[(v + j) % 6], v + 1),
                   "quantity": QUANTITIES[(v * 3 + j) % 6],
                   "unit_price": 2500 + ((v * 7919 + j * 104_729) % 95) as i64 * 500})
        })
        .collect();
    Value::Array(lines)
}

/// An issued invoice's content as the service computed it for a draft.
struct Template {
    currency_code: String,
    supply_type: String,
    treatment: Option<String>,
    line_count: i64,
    lines_json: String,
    totals: [i64; 4],
    /// The full reversal a corrective invoice of it carries.
    reversed_json: String,
    reversed_totals: [i64; 4],
    placeholders_json: String,
    rates_json: String,
    bank_accounts_json: String,
}

impl Template {
    fn from_draft(row: &InvoiceRow) -> anyhow::Result<Self> {
        let lines: Vec<domain::invoice::Line> = serde_json::from_str(&row.lines_json)?;
        let reversed = domain::invoice::reversed(&lines);
        let t = domain::invoice::totals(&reversed)
            .map_err(|e| anyhow::anyhow!("reversing a template: {e}"))?;
        Ok(Self {
            currency_code: row.currency_code.clone(),
            supply_type: row.supply_type.clone(),
            treatment: row.treatment.clone(),
            line_count: row.line_count,
            lines_json: row.lines_json.clone(),
            totals: [
                row.net_total,
                row.tax_total,
                row.withholding_total,
                row.total,
            ],
            reversed_json: serde_json::to_string(&reversed)?,
            reversed_totals: [t.net, t.tax, t.withholding, t.total],
            placeholders_json: row.custom_placeholder_values_json.clone(),
            rates_json: row.exchange_rates_json.clone(),
            bank_accounts_json: row.bank_accounts_json.clone(),
        })
    }
}

/// An ordinary invoice that a later corrective invoice may reverse.
struct Candidate {
    id: String,
    customer: usize,
    template: usize,
}

/// What the dashboard must show once the seeding is done, summed while generating.
#[derive(Default)]
struct Expected {
    revenue_total: BTreeMap<String, i64>,
    revenue_this_month: BTreeMap<String, i64>,
    /// EUR revenue by `YYYY-MM`.
    monthly: BTreeMap<String, i64>,
    /// EUR revenue and invoice count (corrective ones included) by customer.
    by_customer: HashMap<usize, (i64, i64)>,
    /// First ordinary invoice of each customer.
    first_issued: HashMap<usize, i64>,
    issued: i64,
    corrective: i64,
    paid: i64,
    partially_paid: i64,
    corrected: i64,
    /// Due dates of ordinary invoices not fully paid.
    unpaid_due: Vec<i64>,
    /// Due dates of ordinary invoices paid in part (past it, they count as overdue, not as
    /// partially paid).
    partly_paid_due: Vec<i64>,
}

fn month_key(micros: i64) -> String {
    store::from_micros(micros)
        .expect("the generator makes times in range")
        .format("%Y-%m")
        .to_string()
}

/// Start of the UTC month `offset` months after the month of `t` (as the dashboard counts).
fn month_start(t: DateTime<Utc>, offset: i32) -> DateTime<Utc> {
    let index = t.year() * 12 + t.month0() as i32 + offset;
    let (year, month0) = (index.div_euclid(12), index.rem_euclid(12) as u32);
    Utc.with_ymd_and_hms(year, month0 + 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

/// A UUIDv7 of the instant `micros`, as `store::new_id` makes at that instant.
fn id_at(micros: i64) -> String {
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        micros.div_euclid(SECOND) as u64,
        (micros.rem_euclid(SECOND) * 1000) as u32,
    );
    uuid::Uuid::new_v7(ts).to_string()
}

fn num(args: &[String], name: &str, default: usize) -> anyhow::Result<usize> {
    arg(args, name).map_or(Ok(default), |s| {
        s.parse().map_err(|e| anyhow::anyhow!("{name} {s}: {e}"))
    })
}

pub(crate) fn seed_bulk(args: &[String]) -> anyhow::Result<()> {
    let base = need(args, "--base")?;
    let url = need(args, "--database-url")?;
    let invoices = num(args, "--invoices", 100_000)?;
    anyhow::ensure!(invoices > 0, "--invoices must be positive");
    // At least one customer of every class (they repeat every 20 customers).
    let customers = num(args, "--customers", 1000)?.max(20);
    let years = num(args, "--years", 3)?.max(1);
    let postgres = url.starts_with("postgres");
    let batch = num(args, "--batch", if postgres { 400 } else { 10 })?.clamp(1, 900);
    let tx_rows = num(args, "--tx-rows", 20_000)?.max(batch);
    let mut c = Company {
        token: need(args, "--token")?,
        proof: need(args, "--proof")?,
        ..Company::default()
    };
    let started = Instant::now();
    let http = agent();
    let rt = tokio::runtime::Runtime::new()?;

    // 1. The company, its bank account and customers, through the API.
    settle(&http, &base, &c)?;
    let (s, company) = send(&http, &c, "GET", &format!("{base}/v1/company"), None)?;
    anyhow::ensure!(s == 200, "GET /v1/company answered {s}");
    let company_id = store::CompanyId::parse(company["id"].as_str().unwrap_or_default())?;
    let (s, account) = send(
        &http,
        &c,
        "POST",
        &format!("{base}/v1/bank-accounts"),
        Some(
            json!({"name": "Main account", "bank_name": "Allied Irish Banks",
                    "iban": "IE29AIBK93115212345678", "bic": "AIBKIE2D"}),
        ),
    )?;
    anyhow::ensure!(s == 201, "bank account answered {s}: {account}");
    let account_id = account["id"].as_str().unwrap_or_default().to_owned();
    let mut entity_ids = Vec::with_capacity(customers);
    // What issuing freezes as `recipient_snapshot_json`: the entity as the API shows it.
    let mut snapshots = Vec::with_capacity(customers);
    for i in 0..customers {
        let (s, body) = send_raw(
            &http,
            &c,
            "POST",
            &format!("{base}/v1/entities"),
            Some(Class::of(i).entity(i)),
        )?;
        let text = String::from_utf8(body)?;
        anyhow::ensure!(s == 201, "entity answered {s}: {text}");
        let v: Value = serde_json::from_str(&text)?;
        entity_ids.push(v["id"].as_str().unwrap_or_default().to_owned());
        snapshots.push(text);
    }
    eprintln!(
        "seed-bulk: company {company_id}, {customers} customers ({:.1} s)",
        started.elapsed().as_secs_f64()
    );

    // 2. Templates: drafts priced by the service, read back, then deleted.
    let db = rt.block_on(store::Db::connect(&url))?;
    let mut templates: HashMap<Class, Vec<Template>> = HashMap::new();
    for class in Class::ALL {
        let customer = (0..customers)
            .find(|i| Class::of(*i) == class)
            .unwrap_or_default();
        for v in 0..VARIANTS {
            let body = json!({"recipient_id": entity_ids[customer], "lines": template_lines(v),
                "bank_account_ids": [account_id], "exchange_rates": class.rates()});
            let (s, d) = send(
                &http,
                &c,
                "POST",
                &format!("{base}/v1/invoices"),
                Some(body),
            )?;
            anyhow::ensure!(s == 201, "template draft answered {s}: {d}");
            let id = store::InvoiceId::parse(d["id"].as_str().unwrap_or_default())?;
            let row = rt.block_on(async {
                let mut conn = db.pool().acquire().await?;
                store::invoices::get(&mut conn, &company_id, &id).await
            })?;
            let row = row.ok_or_else(|| anyhow::anyhow!("template {id} not in the database"))?;
            templates
                .entry(class)
                .or_default()
                .push(Template::from_draft(&row)?);
            let (s, _) = send(
                &http,
                &c,
                "DELETE",
                &format!("{base}/v1/invoices/{id}"),
                None,
            )?;
            anyhow::ensure!(s == 204, "deleting template {id} answered {s}");
        }
    }
    let company_row = rt
        .block_on(async {
            let mut conn = db.pool().acquire().await?;
            store::companies::get(&mut conn, &company_id).await
        })?
        .ok_or_else(|| anyhow::anyhow!("company {company_id} not in the database"))?;

    // 3. The invoices, straight into the database.
    let now = Utc::now();
    let expected = rt.block_on(write_invoices(
        &db,
        &company_row,
        &Plan {
            invoices,
            years,
            batch,
            tx_rows,
            now,
            entity_ids: &entity_ids,
            snapshots: &snapshots,
            templates: &templates,
            account_id: &account_id,
        },
        started,
    ))?;
    // The rows were written as invoices issued before documents existed (with the snapshot
    // columns issuing used to fill): the service's one migration gives them their documents,
    // as it would a real database of that age. Its time is part of what this measures.
    let t = Instant::now();
    let backfilled = rt.block_on(api::documents::legacy::backfill(&db))?;
    anyhow::ensure!(
        backfilled.failed == 0 && backfilled.done as usize == invoices,
        "documents for {} of {invoices} seeded invoices ({} failed)",
        backfilled.done,
        backfilled.failed
    );
    eprintln!(
        "seed-bulk: documents built for {} invoices in {:.1} s",
        backfilled.done,
        t.elapsed().as_secs_f64()
    );
    if db.backend() == store::Backend::Postgres {
        // What autovacuum does soon after a bulk load: statistics and the visibility map.
        let t = Instant::now();
        rt.block_on(async {
            let mut conn = db.pool().acquire().await?;
            store::bench_support::execute(&mut conn, "VACUUM ANALYZE invoices").await?;
            store::bench_support::execute(&mut conn, "VACUUM ANALYZE invoice_payments").await?;
            // Write the load's gigabytes of dirty pages out now, so measurements that follow
            // do not share the disk with the checkpoint PostgreSQL would otherwise run in
            // their midst. It needs a superuser or pg_checkpoint; without, say so and go on.
            if let Err(e) = store::bench_support::execute(&mut conn, "CHECKPOINT").await {
                eprintln!(
                    "seed-bulk: CHECKPOINT refused ({e}); measurements may share the disk with it"
                );
            }
            Ok::<_, anyhow::Error>(())
        })?;
        eprintln!(
            "seed-bulk: VACUUM ANALYZE and CHECKPOINT {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    rt.block_on(db.close());

    // 4. Checks through the API, then one more invoice issued the normal way.
    check_dashboard(&http, &base, &c, &expected, &entity_ids)?;
    let (s, page) = send(
        &http,
        &c,
        "GET",
        &format!("{base}/v1/invoices?limit=50"),
        None,
    )?;
    anyhow::ensure!(s == 200, "list answered {s}");
    let data = page["data"].as_array().cloned().unwrap_or_default();
    anyhow::ensure!(
        data.len() == invoices.min(50),
        "the first list page has {} invoices",
        data.len()
    );
    eprintln!(
        "seed-bulk: list ok, newest {} issued {}",
        data.first().map_or(&Value::Null, |d| &d["reference"]),
        data.first().map_or(&Value::Null, |d| &d["issued_at"])
    );
    c.entity = entity_ids[0].clone();
    let issued = create_and_issue(
        &http,
        &base,
        &c,
        json!({"recipient_id": c.entity, "lines": template_lines(0)}),
    )?;
    let year = i64::from(Utc::now().year());
    let format = domain::reference::ReferenceFormat::parse(&company_row.invoice_reference_format)
        .map_err(|e| anyhow::anyhow!("the company's reference format: {e}"))?;
    let seeded_this_year = expected.numbers.get(&("invoice", year)).copied();
    let want = format.render(
        year,
        seeded_this_year.unwrap_or(company_row.first_invoice_yearly_number),
    );
    anyhow::ensure!(
        issued["reference"] == want.as_str(),
        "an invoice issued after seeding got {}, expected {want}",
        issued["reference"]
    );
    c.invoice = issued["id"].as_str().unwrap_or_default().to_owned();
    eprintln!(
        "seed-bulk: done in {:.1} s; an invoice issued through the API afterwards got {want}",
        started.elapsed().as_secs_f64()
    );
    println!("{}", company_line(&c));
    Ok(())
}

/// What to write.
struct Plan<'a> {
    invoices: usize,
    years: usize,
    batch: usize,
    tx_rows: usize,
    now: DateTime<Utc>,
    entity_ids: &'a [String],
    snapshots: &'a [String],
    templates: &'a HashMap<Class, Vec<Template>>,
    account_id: &'a str,
}

/// The figures summed while writing, and the next number of each series and year.
struct Written {
    figures: Expected,
    numbers: HashMap<(&'static str, i64), i64>,
}

impl std::ops::Deref for Written {
    type Target = Expected;
    fn deref(&self) -> &Expected {
        &self.figures
    }
}

async fn write_invoices(
    db: &store::Db,
    company: &store::companies::CompanyRow,
    plan: &Plan<'_>,
    started: Instant,
) -> anyhow::Result<Written> {
    let issuer_snapshot = issuer_snapshot(company).to_string();
    let formats = (
        domain::reference::ReferenceFormat::parse(&company.invoice_reference_format)
            .map_err(|e| anyhow::anyhow!("invoice reference format: {e}"))?,
        domain::reference::ReferenceFormat::parse(&company.corrective_invoice_reference_format)
            .map_err(|e| anyhow::anyhow!("corrective reference format: {e}"))?,
    );
    let mut rng = Rng(0x5EED_0000_0000_0006);
    let end = plan.now.timestamp_micros() - 3600 * SECOND;
    let span = plan.years as i64 * 36525 * DAY / 100;
    let start = end - span;
    let step = (span / plan.invoices.max(1) as i64).max(1);
    let this_month = month_start(plan.now, 0).timestamp_micros();
    let now_micros = plan.now.timestamp_micros();

    let mut numbers: HashMap<(&'static str, i64), i64> = HashMap::new();
    let mut figures = Expected::default();
    let mut candidates: VecDeque<Candidate> = VecDeque::new();
    let mut rows: Vec<InvoiceRow> = Vec::with_capacity(plan.batch);
    let mut payments: Vec<PaymentRow> = Vec::new();
    let mut written = 0usize;
    let mut paid_rows = 0usize;
    let mut tx = Some(db.begin_write().await?);
    let mut in_tx = 0usize;

    for i in 0..plan.invoices {
        let issued_at = start + step * i as i64 + rng.below(step as u64) as i64;
        let created_at = issued_at - 600 * SECOND;
        let corrective = rng.unit() < CORRECTIVE_SHARE && !candidates.is_empty();
        let (customer, template, corrected) = if corrective {
            let k = rng.below(candidates.len() as u64) as usize;
            let original = candidates
                .swap_remove_back(k)
                .ok_or_else(|| anyhow::anyhow!("no candidate"))?;
            (original.customer, original.template, Some(original.id))
        } else {
            // Skewed: a few customers get most invoices, as in real books.
            let u = rng.unit();
            let customer = ((plan.entity_ids.len() as f64) * u * u) as usize;
            let customer = customer.min(plan.entity_ids.len() - 1);
            (customer, rng.below(VARIANTS as u64) as usize, None)
        };
        let t = &plan.templates[&Class::of(customer)][template];
        let series: &'static str = if corrective { "corrective" } else { "invoice" };
        let year = i64::from(
            store::from_micros(issued_at)
                .expect("the generator makes times in range")
                .year(),
        );
        let first = if corrective {
            company.first_corrective_invoice_yearly_number
        } else {
            company.first_invoice_yearly_number
        };
        let counter = numbers.entry((series, year)).or_insert(first);
        let number = *counter;
        *counter += 1;
        let reference = if corrective {
            formats.1.render(year, number)
        } else {
            formats.0.render(year, number)
        };
        let [net, tax, withholding, total] = if corrective {
            t.reversed_totals
        } else {
            t.totals
        };
        let id = id_at(created_at);
        let due_date = (!corrective && rng.unit() < 0.5).then_some(issued_at + 30 * DAY);

        // Payments: most invoices are paid in full some days after issue, a few in part.
        let mut paid_minor = 0;
        if !corrective && total > 0 {
            let u = rng.unit();
            let (amount, paid_at) = if u < 0.80 {
                (total, issued_at + (5 + rng.below(40) as i64) * DAY)
            } else if u < 0.85 {
                (total * 2 / 5, issued_at + 15 * DAY)
            } else {
                (0, 0)
            };
            if amount > 0 && paid_at < now_micros {
                paid_minor = amount;
                payments.push(PaymentRow {
                    id: id_at(paid_at),
                    invoice_id: id.clone(),
                    amount_minor: amount,
                    paid_at,
                    bank_account_id: Some(plan.account_id.to_owned()),
                    note: None,
                    created_at: paid_at,
                });
            }
        }

        // The figures the dashboard must show.
        let f = &mut figures;
        *f.revenue_total.entry(t.currency_code.clone()).or_default() += net;
        if issued_at >= this_month {
            *f.revenue_this_month
                .entry(t.currency_code.clone())
                .or_default() += net;
        }
        if t.currency_code == "EUR" {
            *f.monthly.entry(month_key(issued_at)).or_default() += net;
            let e = f.by_customer.entry(customer).or_default();
            e.0 += net;
            e.1 += 1;
        }
        if corrective {
            f.corrective += 1;
            f.corrected += 1;
        } else {
            f.issued += 1;
            f.first_issued.entry(customer).or_insert(issued_at);
            if total > 0 && paid_minor >= total {
                f.paid += 1;
            } else if paid_minor > 0 {
                f.partially_paid += 1;
                if let Some(d) = due_date {
                    f.partly_paid_due.push(d);
                }
            }
            if paid_minor < total
                && let Some(d) = due_date
            {
                f.unpaid_due.push(d);
            }
            candidates.push_back(Candidate {
                id: id.clone(),
                customer,
                template,
            });
            if candidates.len() > 2000 {
                candidates.pop_front();
            }
        }

        rows.push(InvoiceRow {
            id,
            company_id: company.id.clone(),
            recipient_id: plan.entity_ids[customer].clone(),
            series: series.parse()?,
            status: store::invoices::InvoiceStatus::Issued,
            origin: if corrective {
                store::invoices::Origin::Correction
            } else {
                store::invoices::Origin::Api
            },
            supply_type: t.supply_type.clone(),
            currency_code: t.currency_code.clone(),
            treatment: t.treatment.clone(),
            invoice_number: Some(number),
            invoice_year: Some(year),
            reference: Some(reference),
            issued_at: Some(issued_at),
            order_number: None,
            order_year: None,
            net_total: net,
            tax_total: tax,
            withholding_total: withholding,
            total,
            line_count: t.line_count,
            lines_json: if corrective {
                t.reversed_json.clone()
            } else {
                t.lines_json.clone()
            },
            custom_placeholder_values_json: t.placeholders_json.clone(),
            exchange_rates_json: t.rates_json.clone(),
            bank_accounts_json: t.bank_accounts_json.clone(),
            issuer_snapshot_json: Some(issuer_snapshot.clone()),
            recipient_snapshot_json: Some(plan.snapshots[customer].clone()),
            corrected_invoice_id: corrected,
            correction_reason: None,
            proforma_id: None,
            created_at,
            updated_at: Some(issued_at),
            due_date,
            paid_minor,
            details_json: "{}".into(),
            document_json: None,
            recurring_invoice_id: None,
        });
        in_tx += 1;

        let last = i + 1 == plan.invoices;
        if rows.len() >= plan.batch || last {
            let conn = tx
                .as_mut()
                .ok_or_else(|| anyhow::anyhow!("no transaction"))?
                .conn();
            store::bench_support::insert_invoices(conn, &rows).await?;
            written += rows.len();
            rows.clear();
            // Payments name their invoices, so they follow them.
            for chunk in payments.chunks(plan.batch * 2) {
                store::bench_support::insert_payments(conn, &company.id, chunk).await?;
            }
            paid_rows += payments.len();
            payments.clear();
        }
        if in_tx >= plan.tx_rows || last {
            let mut done = tx.take().ok_or_else(|| anyhow::anyhow!("no transaction"))?;
            if last {
                // Issuing keeps the dashboard rollups in step one invoice at a time; here
                // they are computed once from the rows, as the migration does.
                let t = Instant::now();
                store::dashboard::rebuild(done.conn(), &company.id).await?;
                eprintln!(
                    "seed-bulk: dashboard rollups rebuilt in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                for ((series, year), next) in &numbers {
                    store::bench_support::set_counter(
                        done.conn(),
                        &company.id,
                        series,
                        *year,
                        *next,
                    )
                    .await?;
                }
            }
            done.commit().await?;
            in_tx = 0;
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "seed-bulk: {written}/{} invoices, {paid_rows} payments ({secs:.1} s)",
                plan.invoices
            );
            if !last {
                tx = Some(db.begin_write().await?);
            }
        }
    }
    Ok(Written { figures, numbers })
}

/// The company data frozen at issue: the same fields, in the same `json!`, as
/// `issuer_snapshot` in `crates/api/src/routes/invoices/issue.rs`.
fn issuer_snapshot(c: &store::companies::CompanyRow) -> Value {
    json!({
        "id": c.id,
        "name": c.name,
        "fiscal_id": c.fiscal_id,
        "vies_vat_id": c.vies_vat_id,
        "type": c.company_type,
        "email": c.email,
        "phone": c.phone,
        "address": c.address_json.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
        "footer_invoice_typst": c.footer_invoice_typst,
        "post_invoice_typst": c.post_invoice_typst,
    })
}

/// Compares `GET /v1/dashboard` with the figures summed while writing.
fn check_dashboard(
    http: &ureq::Agent,
    base: &str,
    c: &Company,
    e: &Written,
    entity_ids: &[String],
) -> anyhow::Result<()> {
    let t = Instant::now();
    let (s, d) = send(http, c, "GET", &format!("{base}/v1/dashboard"), None)?;
    anyhow::ensure!(s == 200, "dashboard answered {s}: {d}");
    let took = t.elapsed().as_secs_f64() * 1000.0;
    let now = Utc::now();
    let amounts = |m: &BTreeMap<String, i64>| -> Value {
        m.iter()
            .map(|(c, a)| json!({"currency": c, "amount_minor": a}))
            .collect()
    };
    let monthly: Value = (-11..=0)
        .map(|o| {
            let key = month_start(now, o).format("%Y-%m").to_string();
            json!({"month": key, "amount_minor": e.monthly.get(&key).copied().unwrap_or(0)})
        })
        .collect();
    let mut top: Vec<(&usize, &(i64, i64))> = e.by_customer.iter().collect();
    top.sort_by(|a, b| {
        b.1.0
            .cmp(&a.1.0)
            .then_with(|| entity_ids[*a.0].cmp(&entity_ids[*b.0]))
    });
    let top: Value = top
        .iter()
        .take(5)
        .map(|(k, (rev, n))| json!({"entity_id": entity_ids[**k], "revenue_minor": rev, "invoice_count": n}))
        .collect();
    let got_top: Value = d["top_customers"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| json!({"entity_id": t["entity_id"], "revenue_minor": t["revenue_minor"], "invoice_count": t["invoice_count"]}))
                .collect()
        })
        .unwrap_or_default();
    let this_month = month_start(now, 0).timestamp_micros();
    let new_customers = e
        .first_issued
        .values()
        .filter(|t| **t >= this_month)
        .count();
    let overdue = e
        .unpaid_due
        .iter()
        .filter(|d| **d < now.timestamp_micros())
        .count();
    // The dashboard counts a partly paid invoice past its due date as overdue only, and the
    // ordinary invoices neither paid, partly paid nor overdue as unpaid.
    let partially_paid = e.partially_paid
        - i64::try_from(
            e.partly_paid_due
                .iter()
                .filter(|d| **d < now.timestamp_micros())
                .count(),
        )?;
    let unpaid = e.issued - e.paid - partially_paid - i64::try_from(overdue)?;
    let checks = [
        (
            "revenue_total",
            d["revenue_total"].clone(),
            amounts(&e.revenue_total),
        ),
        (
            "revenue_this_month",
            d["revenue_this_month"].clone(),
            amounts(&e.revenue_this_month),
        ),
        ("monthly_revenue", d["monthly_revenue"].clone(), monthly),
        ("top_customers", got_top, top),
        (
            "customer_stats",
            d["customer_stats"].clone(),
            json!({"total": e.first_issued.len(), "new_this_month": new_customers}),
        ),
        (
            "invoice_counts",
            d["invoice_counts"].clone(),
            json!({"draft": 0, "issued": e.issued, "unpaid": unpaid, "paid": e.paid, "partially_paid": partially_paid,
                   "overdue": overdue, "corrected": e.corrected, "corrective": e.corrective}),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, got, want) in checks {
        if got != want {
            wrong.push(format!("{name}: got {got}, expected {want}"));
        }
    }
    anyhow::ensure!(
        wrong.is_empty(),
        "the dashboard disagrees with the seeded data:\n{}",
        wrong.join("\n")
    );
    eprintln!(
        "seed-bulk: dashboard ok ({took:.0} ms): issued {} + {} corrective, paid {}, partially {}, overdue {overdue}, revenue {}",
        e.issued, e.corrective, e.paid, e.partially_paid, d["revenue_total"]
    );
    Ok(())
}
