//! Tenant isolation over the whole route table: for every route, company A's
//! resources are invisible and untouchable with company B's token (404), and
//! never appear in B's lists or dashboard.

use serde_json::{Value, json};

use crate::support::*;

/// One of each resource in company A; returns the ids to substitute per path parameter.
async fn populate_a(app: &TestApp) -> Vec<(&'static str, String)> {
    app.settle(&app.a).await;
    let hook = app
        .call(
            "POST",
            "/v1/webhooks",
            As::Human(&app.a),
            Some(json!({"url": "https://example.com/hook", "events": ["invoice.created"]})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let entity = app.entity(&app.a, irish_customer()).await;
    let account = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "A main"})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let snapshot = app
        .call(
            "POST",
            &format!("/v1/bank-accounts/{account}/snapshots"),
            As::Human(&app.a),
            Some(json!({"balance_minor": 5})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let draft = app
        .draft(
            &app.a,
            json!({"recipient_id": entity, "lines": one_line(100)}),
        )
        .await;
    let issued = app
        .draft(
            &app.a,
            json!({"recipient_id": entity, "lines": one_line(200)}),
        )
        .await;
    let issued_id = issued["id"].as_str().unwrap().to_owned();
    app.issue(&app.a, &issued_id).await;
    let payment = app
        .call(
            "POST",
            &format!("/v1/invoices/{issued_id}/payments"),
            As::Human(&app.a),
            Some(json!({"amount_minor": 1})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let proforma = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(json!({"recipient_id": entity, "lines": one_line(300)})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let expense = app
        .call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(json!({"supplier_id": entity, "invoice_reference": "S-1",
            "lines": [{"concept": "x", "subtotal": 10}]})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call_raw(
        "PUT",
        &format!("/v1/expenses/{expense}/receipt"),
        As::Human(&app.a),
        Some(b"%PDF-1.4 x".to_vec()),
        "application/pdf",
    )
    .await
    .expect(200);
    let entry = app
        .call(
            "PATCH",
            "/v1/company",
            As::Ai(&app.a),
            Some(json!({"friendlyName": "held"})),
        )
        .await
        .expect(202)
        .json()["auditEntryId"]
        .as_str()
        .unwrap()
        .to_owned();
    let report = app
        .call(
            "POST",
            "/v1/reports",
            As::Human(&app.a),
            Some(
                json!({"report_type": "vat_summary", "period_start": "2026-01-01T00:00:00Z",
                "period_end": "2026-04-01T00:00:00Z"}),
            ),
        )
        .await
        .expect(201)
        .json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let recurring = app
        .call(
            "POST",
            "/v1/recurring-invoices",
            As::Human(&app.a),
            Some(json!({"recipient_id": entity, "lines": one_line(400),
                "frequency": "monthly", "start_date": "2026-01-01"})),
        )
        .await
        .expect(201)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(
        "POST",
        &format!("/v1/invoices/{issued_id}/send"),
        As::Human(&app.a),
        Some(json!({"to": ["ap@a-customer.example"]})),
    )
    .await
    .expect(201);
    let token = app.get("/v1/tokens", As::Human(&app.a)).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let delivery = app
        .get(
            &format!("/v1/webhooks/{hook}/deliveries"),
            As::Human(&app.a),
        )
        .await
        .json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    vec![
        ("/v1/webhooks/{id}", hook),
        ("{delivery_id}", delivery),
        ("/v1/entities/{id}", entity),
        ("/v1/bank-accounts/{id}", account),
        ("{sid}", snapshot),
        ("/v1/invoices/{id}/payments/{pid}", issued_id.clone()),
        ("{pid}", payment),
        ("/v1/invoices/{id}", issued_id.clone()),
        (
            "/v1/invoices/{id}/issue",
            draft["id"].as_str().unwrap().to_owned(),
        ),
        ("/v1/proformas/{id}", proforma),
        ("/v1/expenses/{id}", expense),
        ("/v1/ai-audit/{id}", entry),
        ("/v1/tokens/{id}", token),
        ("/v1/reports/{id}", report),
        ("/v1/recurring-invoices/{id}", recurring),
    ]
}

/// The id of A's resource that fits `path`.
fn id_for(ids: &[(&'static str, String)], path: &str, param: &str) -> Option<String> {
    if param != "{id}" {
        return ids
            .iter()
            .find(|(k, _)| *k == param)
            .map(|(_, v)| v.clone());
    }
    ids.iter()
        .filter(|(k, _)| k.starts_with('/'))
        .find(|(k, _)| path == *k || path.starts_with(&format!("{k}/")) || k.starts_with(path))
        .or_else(|| {
            let prefix = path.split("/{id}").next().unwrap_or(path);
            ids.iter()
                .find(|(k, _)| k.starts_with(&format!("{prefix}/{{id}}")))
        })
        .map(|(_, v)| v.clone())
}

db_test!(company_b_never_reaches_company_a, |app| {
    let ids = populate_a(&app).await;
    let a_ids: Vec<String> = ids.iter().map(|(_, v)| v.clone()).collect();
    let before = app.fingerprint().await;
    let doc = app.get("/openapi.json", As::Anonymous).await.json();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let m = method.to_uppercase();
            // Legal documents are the installation's, the same for every company.
            if path.starts_with("/v1/agreements/") {
                continue;
            }
            // Avatars are drawn from whatever id is asked for and read nothing: any user id,
            // of any company or none, gets a picture (tests/it/session.rs).
            if path.starts_with("/avatars/") {
                continue;
            }
            if !path.contains('{') {
                // Collections and singletons: B's answer never contains A's ids.
                if m == "GET" && path.starts_with("/v1") {
                    let text = app.get(path, As::Human(&app.b)).await.text();
                    for id in &a_ids {
                        assert!(
                            !text.contains(id.as_str()),
                            "GET {path} as B leaks A's {id}"
                        );
                    }
                    checked += 1;
                }
                continue;
            }
            let mut concrete = path.clone();
            let mut unknown = path.clone();
            concrete = concrete.replace("{email}", "owner@alpha.test");
            unknown = unknown.replace("{email}", "nobody@nowhere.test");
            for param in ["{id}", "{pid}", "{sid}", "{delivery_id}"] {
                if concrete.contains(param) {
                    let id = id_for(&ids, path, param)
                        .unwrap_or_else(|| panic!("no A resource for {param} in {path}"));
                    concrete = concrete.replace(param, &id);
                    unknown = unknown.replace(param, &uuid::Uuid::new_v4().to_string());
                }
            }
            let body = match m.as_str() {
                "GET" | "DELETE" => None,
                _ => Some(json!({})),
            };
            let resp = app
                .call(&m, &concrete, As::Human(&app.b), body.clone())
                .await;
            let status = resp.status.as_u16();
            // B learns nothing: A's id gets exactly the answer an id that exists nowhere gets.
            let control = app.call(&m, &unknown, As::Human(&app.b), body).await;
            assert_eq!(
                status,
                control.status.as_u16(),
                "{m} {path}: A's id and an unknown id differ"
            );
            assert!(
                status == 404 || (status == 400 && m != "GET"),
                "{m} {path} as company B answered {status}: {}",
                resp.text()
            );
            if status == 400 {
                assert_eq!(
                    resp.text(),
                    control.text(),
                    "{m} {path}: the 400 must not depend on the id"
                );
            }
            for id in &a_ids {
                assert!(!resp.text().contains(id.as_str()), "{m} {path} leaks {id}");
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 40,
        "the walk covered the route table ({checked})"
    );
    assert_eq!(app.fingerprint().await, before, "B changed nothing of A's");
    let dash: Value = app.get("/v1/dashboard", As::Human(&app.b)).await.json();
    assert_eq!(dash["revenue_total"], json!([]));
    assert_eq!(dash["invoice_counts"]["draft"], 0);
});
