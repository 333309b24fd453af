//! A small load generator for the service and the ceiling.
//!
//! `loadgen seed --base URL --token T --proof P [--pdf-invoices K]` settles a company,
//! issues one invoice and prints `{"token","proof","entity","invoice","invoice_500",
//! "pdf_invoices","pdf_500_invoices","pdf_snippet_invoices"}`. With `--pdf-invoices K` it
//! also issues an invoice of 500 lines (`invoice_500`), K more issued invoices of each size
//! (the two lists), and K+1 one-page invoices to a customer whose template has a footer
//! snippet, which the `pdf`, `pdf_500`, `pdf_snippet`, `facturx` and `ubl` scenarios go round
//! (see `op`). Seed those into a company of their own: 500-line invoices on the first list
//! page would make `list_page` measure their size. `loadgen run --base URL --scenario S --companies FILE
//! [--seconds N] [--concurrency C] [--warmup W] [--rate R] [--drafts D]` drives one
//! scenario with C threads (each on its own keep-alive connection, spread over the
//! companies), after W untimed requests, and prints one JSON line: requests, errors,
//! throughput, p50 and p99 latency. Without `--rate` the loop is closed (each client sends
//! its next request when the last is answered: the most the service can do); with it the
//! clients together start R operations a second on a fixed schedule and each latency counts
//! from when the operation was due (open loop: queueing is measured, not hidden). `issue`
//! issues drafts each client made before the clock started (D in all, default enough for
//! 3,000 a second, or 1.1 R); `create_issue` makes and issues one per operation.
//! `--base URL1,URL2` spreads the clients over several server processes.
//!
//! `loadgen seed-bulk` fills one company with many issued invoices straight into the
//! database (see `bulk.rs`) and prints the same kind of line.
#![forbid(unsafe_code)]
// Like the service's crates: no unwrap outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod bulk;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

pub(crate) fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

pub(crate) fn need(args: &[String], name: &str) -> anyhow::Result<String> {
    arg(args, name).ok_or_else(|| anyhow::anyhow!("missing {name}"))
}

/// A company's credentials and seeded ids.
#[derive(Clone, Default)]
pub(crate) struct Company {
    pub(crate) token: String,
    pub(crate) proof: String,
    pub(crate) entity: String,
    pub(crate) invoice: String,
    pub(crate) invoice_500: String,
    /// More issued one-page invoices, so PDF requests are not all for one document.
    pub(crate) pdf_invoices: Vec<String>,
    /// More issued 500-line invoices.
    pub(crate) pdf_500_invoices: Vec<String>,
    /// Issued one-page invoices to a customer whose template has a footer snippet: their
    /// PDFs render in a child process (company snippets are code; see the `api` crate's
    /// `isolation` module).
    pub(crate) pdf_snippet_invoices: Vec<String>,
}

/// One request; the answer's status and raw body. Never sends `If-None-Match`, so a PDF
/// is rendered every time rather than answered from the client's cache with a 304.
pub(crate) fn send_raw(
    http: &ureq::Agent,
    c: &Company,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let auth = format!("Bearer {}", c.token);
    let mut resp = match (method, body) {
        ("GET", _) => http.get(url).header("Authorization", &auth).call()?,
        ("DELETE", _) => http
            .delete(url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .call()?,
        ("POST", Some(b)) => http
            .post(url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .send_json(b)?,
        _ => http
            .post(url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .send_empty()?,
    };
    let status = resp.status().as_u16();
    let bytes = resp
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()?;
    Ok((status, bytes))
}

/// One request; the answer's status and JSON body (`null` when it is not JSON).
pub(crate) fn send(
    http: &ureq::Agent,
    c: &Company,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> anyhow::Result<(u16, Value)> {
    let (status, bytes) = send_raw(http, c, method, url, body)?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// Registers the company and accepts the current agreements, so it may issue.
pub(crate) fn settle(http: &ureq::Agent, base: &str, c: &Company) -> anyhow::Result<()> {
    let (s, _) = send(
        http,
        c,
        "POST",
        &format!("{base}/v1/company/registration"),
        Some(json!({
        "name": "Bench Ltd", "fiscal_id": "IE6388047V", "email": "bench@example.test", "phone": "1",
        "address": {"lines": ["1 Bench St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}})),
    )?;
    anyhow::ensure!(s == 200, "registration answered {s}");
    let (_, docs) = send(http, c, "GET", &format!("{base}/v1/agreements"), None)?;
    for d in docs["data"].as_array().cloned().unwrap_or_default() {
        send(
            http,
            c,
            "POST",
            &format!(
                "{base}/v1/agreements/{}/accept",
                d["id"].as_str().unwrap_or_default()
            ),
            None,
        )?;
    }
    Ok(())
}

/// Creates a draft from `body` and issues it; returns the invoice.
pub(crate) fn create_and_issue(
    http: &ureq::Agent,
    base: &str,
    c: &Company,
    body: Value,
) -> anyhow::Result<Value> {
    let (s, d) = send(http, c, "POST", &format!("{base}/v1/invoices"), Some(body))?;
    anyhow::ensure!(s == 201, "draft answered {s}: {d}");
    let id = d["id"].as_str().unwrap_or_default();
    let (s, issued) = send(
        http,
        c,
        "POST",
        &format!("{base}/v1/invoices/{id}/issue"),
        None,
    )?;
    anyhow::ensure!(s == 200, "issue answered {s}: {issued}");
    Ok(issued)
}

fn seed(args: &[String]) -> anyhow::Result<()> {
    let base = need(args, "--base")?;
    let mut c = Company {
        token: need(args, "--token")?,
        proof: need(args, "--proof")?,
        ..Company::default()
    };
    let http = agent();
    settle(&http, &base, &c)?;
    c.entity = entity(
        &http,
        &base,
        &c,
        json!({
        "name": "Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
    )?;
    let issued = create_and_issue(&http, &base, &c, draft_body(&c.entity))?;
    c.invoice = issued["id"].as_str().unwrap_or_default().to_owned();
    let extra: usize = arg(args, "--pdf-invoices").map_or(Ok(0), |s| s.parse())?;
    if extra > 0 {
        let issued = create_and_issue(&http, &base, &c, draft_body_500(&c.entity))?;
        let lines = issued["lines"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(lines == 500, "the long invoice has {lines} lines");
        c.invoice_500 = issued["id"].as_str().unwrap_or_default().to_owned();
    }
    for i in 0..extra {
        let mut body = draft_body(&c.entity);
        body["lines"][0]["concept"] = json!(format!("Consulting, batch {i}"));
        let issued = create_and_issue(&http, &base, &c, body)?;
        c.pdf_invoices
            .push(issued["id"].as_str().unwrap_or_default().to_owned());
        let issued = create_and_issue(&http, &base, &c, draft_body_500(&c.entity))?;
        c.pdf_500_invoices
            .push(issued["id"].as_str().unwrap_or_default().to_owned());
    }
    if extra > 0 {
        // A customer whose invoices carry a footer snippet, as most companies' do (their
        // registry details), for the `pdf_snippet` scenario.
        let entity = entity(
            &http,
            &base,
            &c,
            json!({
            "name": "Footer Customer Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"},
            "template": {"footer_typst":
                "Alpha Trading Ltd · Registered in Ireland no. 123456 · *Thank you for your business*"}}),
        )?;
        for i in 0..=extra {
            let mut body = draft_body(&entity);
            body["lines"][0]["concept"] = json!(format!("Consulting, footer batch {i}"));
            let issued = create_and_issue(&http, &base, &c, body)?;
            c.pdf_snippet_invoices
                .push(issued["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    println!("{}", company_line(&c));
    Ok(())
}

/// Creates an entity; returns its id.
fn entity(http: &ureq::Agent, base: &str, c: &Company, body: Value) -> anyhow::Result<String> {
    let (s, e) = send(http, c, "POST", &format!("{base}/v1/entities"), Some(body))?;
    anyhow::ensure!(s == 201, "entity answered {s}: {e}");
    Ok(e["id"].as_str().unwrap_or_default().to_owned())
}

/// The JSON line `run --companies` reads.
pub(crate) fn company_line(c: &Company) -> Value {
    json!({"token": c.token, "proof": c.proof, "entity": c.entity, "invoice": c.invoice,
           "invoice_500": c.invoice_500, "pdf_invoices": c.pdf_invoices,
           "pdf_500_invoices": c.pdf_500_invoices,
           "pdf_snippet_invoices": c.pdf_snippet_invoices})
}

fn draft_body(entity: &str) -> Value {
    json!({"recipient_id": entity, "lines": [
        {"concept": "Consulting", "quantity": 1.5, "unit_price": 12000},
        {"concept": "Travel", "quantity": 1, "unit_price": 4550}]})
}

/// A draft of 500 lines (the most a document may have), like the render benchmark's.
fn draft_body_500(entity: &str) -> Value {
    let lines: Vec<Value> = (1..=500)
        .map(|i| json!({"concept": format!("Consulting services, item {i}"), "quantity": 1, "unit_price": 10000}))
        .collect();
    json!({"recipient_id": entity, "lines": lines})
}

/// Whether a PDF request was answered with a freshly rendered PDF (not a 304, not an error).
fn pdf_ok(http: &ureq::Agent, c: &Company, url: &str) -> anyhow::Result<bool> {
    let (status, body) = send_raw(http, c, "GET", url, None)?;
    Ok(status == 200 && body.starts_with(b"%PDF"))
}

/// The `turn`-th of `first` and `more`, round robin.
fn nth<'a>(first: &'a str, more: &'a [String], turn: usize) -> &'a str {
    match turn % (more.len() + 1) {
        0 => first,
        k => &more[k - 1],
    }
}

/// One timed operation of a scenario (the `turn`-th of its thread); returns whether it
/// succeeded. `issue` takes its draft from `drafts` (made by [`make_drafts`] before the
/// clock starts, so only issuing is measured).
///
/// `pdf` and `pdf_500` take the company's invoices of that size in turn: Typst keeps a
/// memo cache of recent renders, so asking for one document again and again would measure
/// a cache hit (a few milliseconds) rather than laying out an invoice; with 40 extra
/// invoices (`seed --pdf-invoices 40`) each render misses it, as a new invoice would.
fn op(
    http: &ureq::Agent,
    base: &str,
    c: &Company,
    scenario: &str,
    turn: usize,
    drafts: &mut Vec<String>,
) -> anyhow::Result<bool> {
    let ok = |s: u16| (200..300).contains(&s);
    // Timed operations read each answer to its last byte and look at its status, but do not
    // decode it (unless they need a value from it, the new draft's id): a client's parsing
    // is not the server's latency, and on a machine whose cores the load generator shares
    // with the server, it would be taken from the server's CPU (a list page's 130 KB of
    // JSON decoded into a tree costs a millisecond; the ceiling's answers, none).
    let status = |method: &str, url: &str, body: Option<Value>| -> anyhow::Result<bool> {
        Ok(ok(send_raw(http, c, method, url, body)?.0))
    };
    let issue = |id: &str| status("POST", &format!("{base}/v1/invoices/{id}/issue"), None);
    Ok(match scenario {
        "get_invoice" => status("GET", &format!("{base}/v1/invoices/{}", c.invoice), None)?,
        "list_page" => status("GET", &format!("{base}/v1/invoices?limit=50"), None)?,
        "dashboard" => status("GET", &format!("{base}/v1/dashboard"), None)?,
        "pdf" => {
            let id = nth(&c.invoice, &c.pdf_invoices, turn);
            pdf_ok(http, c, &format!("{base}/v1/invoices/{id}/pdf"))?
        }
        // The e-invoices of the one-page invoices: the Factur-X PDF (the same bytes as
        // `pdf`, asked for as an e-invoice, so an invoice that could not be a Factur-X
        // counts as an error) and the UBL.
        "facturx" => {
            let id = nth(&c.invoice, &c.pdf_invoices, turn);
            pdf_ok(
                http,
                c,
                &format!("{base}/v1/invoices/{id}/einvoice?format=facturx"),
            )?
        }
        "ubl" => {
            let id = nth(&c.invoice, &c.pdf_invoices, turn);
            let (status, body) = send_raw(
                http,
                c,
                "GET",
                &format!("{base}/v1/invoices/{id}/einvoice?format=ubl"),
                None,
            )?;
            status == 200 && body.starts_with(b"<?xml")
        }
        "pdf_500" => {
            anyhow::ensure!(
                !c.invoice_500.is_empty(),
                "no 500-line invoice: seed the company with --pdf-invoices K"
            );
            let id = nth(&c.invoice_500, &c.pdf_500_invoices, turn);
            pdf_ok(http, c, &format!("{base}/v1/invoices/{id}/pdf"))?
        }
        "pdf_snippet" => {
            anyhow::ensure!(
                !c.pdf_snippet_invoices.is_empty(),
                "no invoice with a footer snippet: seed the company with --pdf-invoices K"
            );
            let id = &c.pdf_snippet_invoices[turn % c.pdf_snippet_invoices.len()];
            pdf_ok(http, c, &format!("{base}/v1/invoices/{id}/pdf"))?
        }
        "create_draft" => status(
            "POST",
            &format!("{base}/v1/invoices"),
            Some(draft_body(&c.entity)),
        )?,
        "issue" => {
            // Issues one of the drafts this client made before the clock started.
            let Some(id) = drafts.pop() else {
                return Ok(false);
            };
            issue(&id)?
        }
        "create_issue" => {
            let (s, d) = send_raw(
                http,
                c,
                "POST",
                &format!("{base}/v1/invoices"),
                Some(draft_body(&c.entity)),
            )?;
            if !ok(s) {
                return Ok(false);
            }
            // Only the id: the rest of the draft is skipped, not built into a tree.
            #[derive(serde::Deserialize)]
            struct Created {
                id: String,
            }
            let Ok(Created { id }) = serde_json::from_slice(&d) else {
                return Ok(false);
            };
            issue(&id)?
        }
        "ceiling_read" => status("GET", &format!("{base}/read"), None)?,
        "ceiling_write" => status("POST", &format!("{base}/write"), None)?,
        "ceiling_read_write" => status("POST", &format!("{base}/read-write"), None)?,
        other => anyhow::bail!("unknown scenario {other}"),
    })
}

/// Makes `n` drafts in company `c` for the `issue` scenario; returns their ids.
fn make_drafts(
    http: &ureq::Agent,
    base: &str,
    c: &Company,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    (0..n)
        .map(|_| {
            let (s, d) = send(
                http,
                c,
                "POST",
                &format!("{base}/v1/invoices"),
                Some(draft_body(&c.entity)),
            )?;
            anyhow::ensure!(s == 201, "draft answered {s}: {d}");
            Ok(d["id"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// What one client thread measured.
struct ClientRun {
    latencies: Vec<f64>,
    errors: u64,
    /// When its last operation ended (it stops early when its drafts run out).
    last_end: Instant,
    drafts_left: usize,
}

fn run(args: &[String]) -> anyhow::Result<()> {
    // Several servers behind one address: `--base URL1,URL2` sends each client to one of
    // them in turn, as a round-robin load balancer would.
    let bases: Vec<String> = need(args, "--base")?
        .split(',')
        .map(|b| b.trim().trim_end_matches('/').to_owned())
        .filter(|b| !b.is_empty())
        .collect();
    anyhow::ensure!(!bases.is_empty(), "--base names no server");
    let scenario = need(args, "--scenario")?;
    let seconds: u64 = arg(args, "--seconds").map_or(Ok(5), |s| s.parse())?;
    let concurrency: usize = arg(args, "--concurrency").map_or(Ok(8), |s| s.parse())?;
    let warmup: usize = arg(args, "--warmup").map_or(Ok(0), |s| s.parse())?;
    // Open loop: the clients together start `rate` operations a second on a fixed schedule,
    // whether or not earlier ones have finished, and each latency counts from when its
    // operation was due, so time spent queueing behind a slow answer is measured too (no
    // coordinated omission). Without it, each client starts its next operation when the last
    // one ends (closed loop), which measures the most the service can do.
    let rate: Option<f64> = arg(args, "--rate").map(|s| s.parse()).transpose()?;
    anyhow::ensure!(rate.is_none_or(|r| r > 0.0), "--rate must be above 0");
    // Drafts made before the clock starts for `issue`: enough for the run at up to 3,000
    // issues a second, or `--drafts N` in all.
    let drafts_total: usize = match arg(args, "--drafts") {
        Some(n) => n.parse()?,
        None => rate.map_or(3000.0, |r| r * 1.1).ceil() as usize * seconds as usize,
    };
    let companies: Vec<Company> = match arg(args, "--companies") {
        Some(file) => std::fs::read_to_string(&file)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l)?;
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                Ok(Company {
                    token: s("token"),
                    proof: s("proof"),
                    entity: s("entity"),
                    invoice: s("invoice"),
                    invoice_500: s("invoice_500"),
                    pdf_invoices: serde_json::from_value(v["pdf_invoices"].clone())
                        .unwrap_or_default(),
                    pdf_500_invoices: serde_json::from_value(v["pdf_500_invoices"].clone())
                        .unwrap_or_default(),
                    pdf_snippet_invoices: serde_json::from_value(v["pdf_snippet_invoices"].clone())
                        .unwrap_or_default(),
                })
            })
            .collect::<anyhow::Result<_>>()?,
        None => vec![Company::default()],
    };
    anyhow::ensure!(!companies.is_empty(), "no companies");
    // Untimed requests first (the first PDF of a process loads fonts and templates).
    let http = agent();
    for i in 0..warmup {
        let c = &companies[i % companies.len()];
        let mut drafts = if scenario == "issue" {
            make_drafts(&http, &bases[i % bases.len()], c, 1)?
        } else {
            Vec::new()
        };
        op(&http, &bases[i % bases.len()], c, &scenario, i, &mut drafts)?;
    }
    // Every client makes its drafts, then all start together.
    let ready = std::sync::Arc::new(std::sync::Barrier::new(concurrency + 1));
    let start_at = std::sync::Arc::new(std::sync::OnceLock::<Instant>::new());
    let workers: Vec<_> = (0..concurrency)
        .map(|t| {
            let (base, scenario, c) = (
                bases[t % bases.len()].clone(),
                scenario.clone(),
                companies[t % companies.len()].clone(),
            );
            let (ready, start_at) = (ready.clone(), start_at.clone());
            let mine = drafts_total / concurrency + usize::from(t < drafts_total % concurrency);
            std::thread::spawn(move || -> anyhow::Result<ClientRun> {
                let http = agent();
                let made = if scenario == "issue" {
                    make_drafts(&http, &base, &c, mine)
                } else {
                    Ok(Vec::new())
                };
                ready.wait();
                let mut drafts = made?;
                let start = *start_at.get_or_init(Instant::now);
                let deadline = start + Duration::from_secs(seconds);
                let (mut latencies, mut errors) = (Vec::new(), 0u64);
                let mut last_end = start;
                // Threads interleave, so together they go round the documents in order.
                let mut turn = warmup + t;
                for k in 0.. {
                    let due = match rate {
                        Some(r) => {
                            let due =
                                start + Duration::from_secs_f64((k * concurrency + t) as f64 / r);
                            if due >= deadline {
                                break;
                            }
                            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                                std::thread::sleep(wait);
                            }
                            due
                        }
                        None => Instant::now(),
                    };
                    if (rate.is_none() && due >= deadline)
                        || (scenario == "issue" && drafts.is_empty())
                    {
                        break;
                    }
                    let done = op(&http, &base, &c, &scenario, turn, &mut drafts);
                    turn += concurrency;
                    last_end = Instant::now();
                    match done {
                        Ok(true) => latencies.push((last_end - due).as_secs_f64() * 1000.0),
                        _ => errors += 1,
                    }
                }
                Ok(ClientRun {
                    latencies,
                    errors,
                    last_end,
                    drafts_left: drafts.len(),
                })
            })
        })
        .collect();
    ready.wait();
    let start = *start_at.get_or_init(Instant::now);
    let cpu_before = own_cpu();
    let (mut all, mut errors, mut end, mut drafts_left) = (Vec::new(), 0, start, 0);
    for w in workers {
        let run = w.join().map_err(|_| anyhow::anyhow!("worker panicked"))??;
        all.extend(run.latencies);
        errors += run.errors;
        end = end.max(run.last_end);
        drafts_left += run.drafts_left;
    }
    let elapsed = (end - start).as_secs_f64().max(f64::EPSILON);
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let mut line = json!({"scenario": scenario, "requests": all.len(), "errors": errors,
           "rps": (all.len() as f64 / elapsed * 10.0).round() / 10.0,
           "p50_ms": (pct(0.5) * 100.0).round() / 100.0, "p99_ms": (pct(0.99) * 100.0).round() / 100.0,
           "concurrency": concurrency, "seconds": seconds});
    if let Some(r) = rate {
        line["rate"] = json!(r);
    }
    // What the load generator itself cost per operation: on a machine whose cores it shares
    // with the server, CPU it takes is CPU the server does not get.
    if let (Some(before), Some(after)) = (cpu_before, own_cpu())
        && !all.is_empty()
    {
        line["client_cpu_us"] = json!((after - before).as_micros() / all.len() as u128);
    }
    if scenario == "issue" {
        // Drafts that ran out before the time was up would cut the run short: say so.
        line["drafts_left"] = json!(drafts_left);
    }
    println!("{line}");
    Ok(())
}

/// The CPU time this process has used, its threads' included (user and system, from
/// `/proc/self/stat`, whose fields 14 and 15 count ticks of 1/100 s on Linux); `None`
/// elsewhere.
fn own_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count from the `)` that ends it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |field: usize| fields.get(field - 3)?.parse::<u64>().ok();
    Some(Duration::from_millis((ticks(14)? + ticks(15)?) * 10))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("seed") => seed(&args),
        Some("run") => run(&args),
        Some("seed-bulk") => bulk::seed_bulk(&args),
        _ => anyhow::bail!("usage: loadgen seed|seed-bulk|run ... (see bench/run)"),
    }
}
