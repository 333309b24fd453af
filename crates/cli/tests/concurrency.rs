//! Two server processes on one database issue 200 drafts of 4 companies at
//! once: per company and year, numbers are unique and contiguous.

mod common;

use std::collections::HashMap;

use common::*;
use serde_json::{Value, json};

fn issue_concurrently(db: TestDb) {
    let (ok, _, stderr) = run(&db, &["migrate"]);
    assert!(ok, "{stderr}");
    let mut companies = Vec::new();
    for i in 0..4 {
        let name = format!("Company {i}");
        let email = format!("owner{i}@example.test");
        let (ok, boot, stderr) = run(
            &db,
            &[
                "admin",
                "bootstrap",
                "--company-name",
                &name,
                "--email",
                &email,
            ],
        );
        assert!(ok, "{stderr}");
        companies.push(Company::from_bootstrap(&boot));
    }
    let servers = [
        Server::start(&db, &["serve"]),
        Server::start(&db, &["serve"]),
    ];
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();

    // Each company: settle, one customer, 50 drafts made through both servers.
    let mut drafts: Vec<(usize, String)> = Vec::new();
    for (ci, c) in companies.iter().enumerate() {
        let base = &bases[ci % 2];
        let (s, _) = call(
            base,
            c,
            "POST",
            "/v1/company/registration",
            Some(json!({
            "name": format!("Company {ci} Ltd"), "fiscal_id": "IE6388047V", "email": "b@example.test",
            "phone": "1", "address": {"lines": ["1 St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}})),
        );
        assert_eq!(s, 200);
        accept_agreements(base, c);
        let (s, e) = call(
            base,
            c,
            "POST",
            "/v1/entities",
            Some(json!({
            "name": "Customer", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}})),
        );
        assert_eq!(s, 201, "{e}");
        let customer = e["id"].as_str().unwrap().to_owned();
        for n in 0..50 {
            let (s, d) = call(
                &bases[n % 2],
                c,
                "POST",
                "/v1/invoices",
                Some(json!({
                "recipient_id": customer, "lines": [{"concept": "Work", "unit_price": 1000 + n}]})),
            );
            assert_eq!(s, 201, "{d}");
            drafts.push((ci, d["id"].as_str().unwrap().to_owned()));
        }
    }

    // Issue all 200 at once from 8 threads, alternating servers.
    let companies = std::sync::Arc::new(companies);
    let chunks: Vec<Vec<(usize, String)>> = (0..8)
        .map(|t| drafts.iter().skip(t).step_by(8).cloned().collect())
        .collect();
    let handles: Vec<_> = chunks
        .into_iter()
        .enumerate()
        .map(|(t, chunk)| {
            let companies = companies.clone();
            let bases = bases.clone();
            std::thread::spawn(move || {
                chunk
                    .into_iter()
                    .enumerate()
                    .map(|(k, (ci, id))| {
                        let (s, inv) = call(
                            &bases[(t + k) % 2],
                            &companies[ci],
                            "POST",
                            &format!("/v1/invoices/{id}/issue"),
                            None,
                        );
                        assert_eq!(s, 200, "{inv}");
                        (
                            ci,
                            inv["invoice_year"].as_i64().unwrap(),
                            inv["invoice_number"].as_i64().unwrap(),
                            inv["reference"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut numbers: HashMap<(usize, i64), Vec<i64>> = HashMap::new();
    let mut references: HashMap<usize, Vec<String>> = HashMap::new();
    for h in handles {
        for (ci, year, n, reference) in h.join().expect("issuer thread") {
            numbers.entry((ci, year)).or_default().push(n);
            references.entry(ci).or_default().push(reference);
        }
    }
    let total: usize = numbers.values().map(Vec::len).sum();
    assert_eq!(total, 200);
    for ((ci, year), mut ns) in numbers {
        ns.sort();
        let first = ns[0];
        let expected: Vec<i64> = (first..first + ns.len() as i64).collect();
        assert_eq!(
            ns, expected,
            "company {ci}, year {year}: unique and contiguous"
        );
    }
    for (ci, mut refs) in references {
        refs.sort();
        refs.dedup();
        assert_eq!(refs.len(), 50, "company {ci}: unique references");
    }
    for s in servers {
        assert!(s.stop().success());
    }
}

#[test]
fn two_servers_issue_concurrently_on_postgres() {
    issue_concurrently(TestDb::postgres());
}

#[test]
fn two_servers_issue_concurrently_on_sqlite() {
    issue_concurrently(TestDb::sqlite());
}

/// One Spanish issuer, two servers, 60 issues at once: the VERI*FACTU chain
/// stays one unbroken sequence.
fn chain_under_concurrency(db: TestDb) {
    let boot = migrate_and_bootstrap(
        &db,
        &[
            "--company-name",
            "Ejemplo SL",
            "--country",
            "ES",
            "--fiscal-id",
            "B12345674",
            "--legal-form",
            "SL",
            "--email",
            "es@example.test",
        ],
    );
    let company_id = boot["company_id"].as_str().unwrap();
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "verifactu",
            "authorize",
            "--company",
            company_id,
            "--method",
            "document",
        ],
    );
    assert!(ok, "{stderr}");
    let c = std::sync::Arc::new(Company::from_bootstrap(&boot));
    let servers = [
        Server::start(&db, &["serve"]),
        Server::start(&db, &["serve"]),
    ];
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let (s, _) = call(
        &bases[0],
        &c,
        "POST",
        "/v1/company/registration",
        Some(json!({
        "name": "Ejemplo SL", "fiscal_id": "B12345674", "email": "b@example.test", "phone": "1", "type": "ES:SL",
        "address": {"lines": ["Calle 1"], "zipcode": "28001", "city": "Madrid", "country": "ES"}})),
    );
    assert_eq!(s, 200);
    accept_agreements(&bases[0], &c);
    let (s, e) = call(
        &bases[0],
        &c,
        "POST",
        "/v1/entities",
        Some(json!({
        "name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})),
    );
    assert_eq!(s, 201, "{e}");
    let customer = e["id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = (0..60)
        .map(|n| {
            let (s, d) = call(&bases[n % 2], &c, "POST", "/v1/invoices", Some(json!({
                "recipient_id": customer, "lines": [{"concept": "Trabajo", "unit_price": 1000 + n}]})));
            assert_eq!(s, 201, "{d}");
            d["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let chunk: Vec<String> = ids.iter().skip(t).step_by(6).cloned().collect();
            let (c, bases) = (c.clone(), bases.clone());
            std::thread::spawn(move || {
                for (k, id) in chunk.iter().enumerate() {
                    let (s, inv) = call(
                        &bases[(t + k) % 2],
                        &c,
                        "POST",
                        &format!("/v1/invoices/{id}/issue"),
                        None,
                    );
                    assert_eq!(s, 200, "{inv}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("issuer thread");
    }
    let mut records: Vec<Value> = ids
        .iter()
        .map(|id| {
            let (s, r) = call(
                &bases[0],
                &c,
                "GET",
                &format!("/v1/invoices/{id}/verifactu"),
                None,
            );
            assert_eq!(s, 200);
            r["data"][0].clone()
        })
        .collect();
    records.sort_by_key(|r| r["seq"].as_i64().unwrap());
    let seqs: Vec<i64> = records.iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=60).collect::<Vec<_>>(),
        "one record each, no gaps, no duplicates"
    );
    assert!(records[0]["previous_huella"].is_null());
    for pair in records.windows(2) {
        assert_eq!(
            pair[1]["previous_huella"], pair[0]["huella"],
            "record {} links to {}",
            pair[1]["seq"], pair[0]["seq"]
        );
        let input = pair[1]["hash_input"].as_str().unwrap();
        assert!(input.contains(&format!("&Huella={}&", pair[0]["huella"].as_str().unwrap())));
    }
    for s in servers {
        assert!(s.stop().success());
    }
}

#[test]
fn verifactu_chain_stays_intact_on_postgres() {
    chain_under_concurrency(TestDb::postgres());
}

#[test]
fn verifactu_chain_stays_intact_on_sqlite() {
    chain_under_concurrency(TestDb::sqlite());
}
