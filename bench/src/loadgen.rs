//! A small closed-loop load generator for the service and the ceiling.
//!
//! `loadgen seed --base URL --token T --proof P` settles a company and prints
//! `{"token","proof","entity","invoice"}`; `loadgen run --base URL --scenario S
//! --companies FILE [--seconds N] [--concurrency C]` drives one scenario with C
//! threads (each on its own keep-alive connection, spread over the companies)
//! and prints one JSON line: requests, errors, throughput, p50 and p99 latency.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn need(args: &[String], name: &str) -> anyhow::Result<String> {
    arg(args, name).ok_or_else(|| anyhow::anyhow!("missing {name}"))
}

/// A company's credentials and seeded ids.
#[derive(Clone)]
struct Company {
    token: String,
    proof: String,
    entity: String,
    invoice: String,
}

fn send(
    http: &ureq::Agent,
    c: &Company,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> anyhow::Result<(u16, Value)> {
    let auth = format!("Bearer {}", c.token);
    let mut resp = match (method, body) {
        ("GET", _) => http.get(url).header("Authorization", &auth).call()?,
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
    let bytes = resp.body_mut().read_to_vec()?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

fn seed(args: &[String]) -> anyhow::Result<()> {
    let base = need(args, "--base")?;
    let mut c = Company {
        token: need(args, "--token")?,
        proof: need(args, "--proof")?,
        entity: String::new(),
        invoice: String::new(),
    };
    let http = agent();
    let (s, _) = send(
        &http,
        &c,
        "POST",
        &format!("{base}/v1/company/registration"),
        Some(json!({
        "name": "Bench Ltd", "fiscal_id": "IE6388047V", "email": "bench@example.test", "phone": "1",
        "address": {"lines": ["1 Bench St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}})),
    )?;
    anyhow::ensure!(s == 200, "registration answered {s}");
    let (_, docs) = send(&http, &c, "GET", &format!("{base}/v1/agreements"), None)?;
    for d in docs["data"].as_array().cloned().unwrap_or_default() {
        send(
            &http,
            &c,
            "POST",
            &format!(
                "{base}/v1/agreements/{}/accept",
                d["id"].as_str().unwrap_or_default()
            ),
            None,
        )?;
    }
    let (s, e) = send(
        &http,
        &c,
        "POST",
        &format!("{base}/v1/entities"),
        Some(json!({
        "name": "Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V", "address": {"country": "IE"}})),
    )?;
    anyhow::ensure!(s == 201, "entity answered {s}: {e}");
    c.entity = e["id"].as_str().unwrap_or_default().to_owned();
    let (s, d) = send(
        &http,
        &c,
        "POST",
        &format!("{base}/v1/invoices"),
        Some(draft_body(&c.entity)),
    )?;
    anyhow::ensure!(s == 201, "draft answered {s}: {d}");
    let id = d["id"].as_str().unwrap_or_default().to_owned();
    let (s, _) = send(
        &http,
        &c,
        "POST",
        &format!("{base}/v1/invoices/{id}/issue"),
        None,
    )?;
    anyhow::ensure!(s == 200, "issue answered {s}");
    c.invoice = id;
    println!(
        "{}",
        json!({"token": c.token, "proof": c.proof, "entity": c.entity, "invoice": c.invoice})
    );
    Ok(())
}

fn draft_body(entity: &str) -> Value {
    json!({"recipient_id": entity, "lines": [
        {"concept": "Consulting", "quantity": 1.5, "unit_price": 12000},
        {"concept": "Travel", "quantity": 1, "unit_price": 4550}]})
}

/// One timed operation of a scenario; returns whether it succeeded.
fn op(
    http: &ureq::Agent,
    base: &str,
    c: &Company,
    scenario: &str,
    timer: &mut Option<Instant>,
) -> anyhow::Result<bool> {
    let ok = |s: u16| (200..300).contains(&s);
    Ok(match scenario {
        "get_invoice" => ok(send(
            http,
            c,
            "GET",
            &format!("{base}/v1/invoices/{}", c.invoice),
            None,
        )?
        .0),
        "list_page" => ok(send(
            http,
            c,
            "GET",
            &format!("{base}/v1/invoices?limit=50"),
            None,
        )?
        .0),
        "dashboard" => ok(send(http, c, "GET", &format!("{base}/v1/dashboard"), None)?.0),
        "pdf" => ok(send(
            http,
            c,
            "GET",
            &format!("{base}/v1/invoices/{}/pdf", c.invoice),
            None,
        )?
        .0),
        "create_draft" => ok(send(
            http,
            c,
            "POST",
            &format!("{base}/v1/invoices"),
            Some(draft_body(&c.entity)),
        )?
        .0),
        "issue" | "create_issue" => {
            if scenario == "issue" {
                // The draft is made outside the measured time.
                *timer = None;
            }
            let (s, d) = send(
                http,
                c,
                "POST",
                &format!("{base}/v1/invoices"),
                Some(draft_body(&c.entity)),
            )?;
            if !ok(s) {
                return Ok(false);
            }
            if timer.is_none() {
                *timer = Some(Instant::now());
            }
            let id = d["id"].as_str().unwrap_or_default();
            ok(send(
                http,
                c,
                "POST",
                &format!("{base}/v1/invoices/{id}/issue"),
                None,
            )?
            .0)
        }
        "ceiling_read" => ok(send(http, c, "GET", &format!("{base}/read"), None)?.0),
        "ceiling_write" => ok(send(http, c, "POST", &format!("{base}/write"), None)?.0),
        other => anyhow::bail!("unknown scenario {other}"),
    })
}

fn run(args: &[String]) -> anyhow::Result<()> {
    let base = need(args, "--base")?;
    let scenario = need(args, "--scenario")?;
    let seconds: u64 = arg(args, "--seconds").map_or(Ok(5), |s| s.parse())?;
    let concurrency: usize = arg(args, "--concurrency").map_or(Ok(8), |s| s.parse())?;
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
                })
            })
            .collect::<anyhow::Result<_>>()?,
        None => vec![Company {
            token: String::new(),
            proof: String::new(),
            entity: String::new(),
            invoice: String::new(),
        }],
    };
    anyhow::ensure!(!companies.is_empty(), "no companies");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|t| {
            let (base, scenario, c) = (
                base.clone(),
                scenario.clone(),
                companies[t % companies.len()].clone(),
            );
            std::thread::spawn(move || {
                let http = agent();
                let (mut latencies, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let mut timer = Some(Instant::now());
                    match op(&http, &base, &c, &scenario, &mut timer) {
                        Ok(true) => latencies
                            .push(timer.map_or(0.0, |t| t.elapsed().as_secs_f64() * 1000.0)),
                        _ => errors += 1,
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::new(), 0);
    for w in workers {
        let (l, e) = w.join().map_err(|_| anyhow::anyhow!("worker panicked"))?;
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "{}",
        json!({"scenario": scenario, "requests": all.len(), "errors": errors,
               "rps": (all.len() as f64 / elapsed * 10.0).round() / 10.0,
               "p50_ms": (pct(0.5) * 100.0).round() / 100.0, "p99_ms": (pct(0.99) * 100.0).round() / 100.0,
               "concurrency": concurrency, "seconds": seconds})
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("seed") => seed(&args),
        Some("run") => run(&args),
        _ => anyhow::bail!("usage: loadgen seed|run ... (see bench/run)"),
    }
}
