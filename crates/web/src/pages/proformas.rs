//! Proformas (`/proformas`): quotes with their own references, written with
//! the invoice's line editor and tax preview ([`super::document_form`]), and
//! turned into a draft invoice once the customer agrees. Every read and write
//! is a `/v1/proformas` call.

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::html;

use super::{
    Ctx,
    document_form::{self, Draft, Kind},
    invoices::{download_pdf, names},
    layout, redirect_with, s, when,
};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::SignedIn,
};

/// A proforma: the API keeps its customer, supply, currency and lines (no
/// dates, references or notes; those go on the invoice made from it).
pub const PROFORMA: Kind = Kind {
    nav: "proformas",
    web: "/proformas",
    api: "/v1/proformas",
    new_title: "New proforma",
    edit_title: "Edit proforma",
    details: &[],
    notes: None,
    save: "Save proforma",
    created: "Proforma created.",
    saved: "Proforma saved.",
    own_fields: None,
    own_body: None,
};

fn page_of(id: &str) -> String {
    format!("/proformas/{}", enc(id))
}

/// The page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    cursor: String,
}

/// `GET /proformas`: newest first, 50 a page.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, PROFORMA.nav).await;
    let page =
        match client::list_page(&state, &signed.0, "/v1/proformas?limit=50", &lq.cursor).await {
            Ok(p) => p,
            Err(resp) => return resp,
        };
    let rows = page.rows;
    let next = page.next.as_deref();
    let ids: Vec<&str> = rows.iter().map(|p| s(p, "recipient_id")).collect();
    let names = names(&state, &signed.0, &ids).await;
    layout(
        &ctx,
        "Proformas",
        html! {
            div.actions { a.button.primary href="/proformas/new" { "New proforma" } }
            @if rows.is_empty() {
                p.empty { "No proforma yet. A proforma is a quote: send it, and turn it into an invoice once the customer agrees." }
            } @else {
                div.scroll { table.proformas {
                    thead { tr {
                        th scope="col" { "Proforma" } th scope="col" { "Customer" } th.wide-only scope="col" { "Created" }
                        th.wide-only scope="col" { "Invoice" } th.num scope="col" { "Total" }
                    } }
                    tbody {
                        @for p in &rows {
                            tr {
                                td { a href=(page_of(s(p, "id"))) { (s(p, "reference")) } }
                                td { (names.get(s(p, "recipient_id")).map_or("", String::as_str)) }
                                td.wide-only { (when(&p["createdAt"])) }
                                td.wide-only {
                                    @if let Some(i) = p["invoice_id"].as_str() {
                                        a href=(format!("/invoices/{}", enc(i))) { "Invoiced" }
                                    } @else { span.muted { "Not yet" } }
                                }
                                td.num { (money(p["total"].as_i64().unwrap_or(0), s(p, "currency_code"))) }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/proformas?cursor={}", enc(c))) { "Next page" } }
            }
        },
    )
}

/// `GET /proformas/new`.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, PROFORMA.nav).await;
    document_form::new_page(&ctx, &PROFORMA, &Draft::default()).await
}

/// `POST /proformas/new`: add a line, preview, or create the proforma.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    document_form::submit(&state, &headers, post, None, &PROFORMA).await
}

/// `GET /proformas/{id}/edit`.
pub async fn edit_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, PROFORMA.nav).await;
    let p = match client::get_json(&state, &signed.0, &format!("/v1/proformas/{}", enc(&id))).await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let draft = Draft::from_json(&p, &PROFORMA, s(&p, "currency_code"));
    document_form::edit_page(&ctx, &PROFORMA, &id, &draft).await
}

/// `POST /proformas/{id}/edit`: add a line, preview, or save the proforma.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    document_form::submit(&state, &headers, post, Some(id), &PROFORMA).await
}

/// `GET /proformas/{id}`: the proforma, its lines and totals, and what can be done with it.
pub async fn detail(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, PROFORMA.nav).await;
    let p = match client::get_json(&state, &signed.0, &format!("/v1/proformas/{}", enc(&id))).await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let recipient_id = s(&p, "recipient_id");
    let names = names(&state, &signed.0, &[recipient_id]).await;
    let currency = s(&p, "currency_code");
    let m = |key: &str| money(p[key].as_i64().unwrap_or(0), currency);
    let lines = p["lines"].as_array().map_or(0, Vec::len) as i64;
    let invoice = p["invoice_id"].as_str();
    let page = page_of(&id);
    layout(
        &ctx,
        &format!("Proforma {}", s(&p, "reference")),
        html! {
            dl.fields.summary {
                dt { "Customer" } dd { a href=(format!("/entities/{}", enc(recipient_id))) { (names.get(recipient_id).map_or(recipient_id, String::as_str)) } }
                dt { "Currency" } dd { (currency) }
                dt { "Created" } dd { (when(&p["createdAt"])) }
                @if !p["updatedAt"].is_null() { dt { "Changed" } dd { (when(&p["updatedAt"])) } }
                dt { "Invoice" } dd {
                    @if let Some(i) = invoice {
                        a href=(format!("/invoices/{}", enc(i))) { "The invoice made from it" }
                    } @else { "Not invoiced yet" }
                }
            }
            h2 { "Lines (" (p["lineCount"].as_i64().unwrap_or(lines)) ")" }
            (document_form::lines_table(&p, currency))
            dl.fields.totals {
                dt { "Net" } dd.num { (m("net_total")) }
                dt { "Taxes" } dd.num { (m("tax_total")) }
                @if p["withholding_total"].as_i64().unwrap_or(0) != 0 { dt { "Withholding" } dd.num { (m("withholding_total")) } }
                dt { strong { "Total" } } dd.num { strong { (m("total")) } }
            }
            div.actions {
                a.button href=(format!("{page}/pdf")) download { "Download PDF" }
                a.button href=(format!("{page}/edit")) { "Edit proforma" }
                @if invoice.is_none() {
                    form method="post" action=(format!("{page}/invoice")) {
                        (ctx.csrf())
                        button.primary type="submit" { "Turn into an invoice" }
                    }
                }
            }
            @if invoice.is_none() {
                p.muted { "Turning it into an invoice makes a draft invoice with these lines, to check and issue; the proforma stays, linked to it." }
            }
            details.confirm {
                summary { "Delete proforma…" }
                p { "This deletes the proforma " strong { (s(&p, "reference")) } " with its lines. "
                    @if invoice.is_some() { "The invoice made from it stays. " }
                    "It cannot be undone." }
                form method="post" action=(format!("{page}/delete")) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete proforma" }
                }
            }
        },
    )
}

/// `GET /proformas/{id}/pdf`: the API's PDF, as a download.
pub async fn pdf(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let path = format!("/v1/proformas/{}/pdf", enc(&id));
    download_pdf(&state, &signed.0, &path, &format!("proforma-{id}.pdf")).await
}

/// `POST /proformas/{id}/invoice`: a draft invoice with the proforma's lines, then its page.
pub async fn to_invoice(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/proformas/{}/invoice", enc(&id)),
        None,
    )
    .await;
    match answer {
        Ok(a) if a.status == StatusCode::CREATED => {
            let inv = a.json();
            redirect_with(
                &state,
                &format!("/invoices/{}", enc(s(&inv, "id"))),
                "ok",
                "A draft invoice is made from the proforma. Check it, then issue it.",
            )
        }
        Ok(a) if a.ok() => redirect_with(
            &state,
            &page_of(&id),
            "ok",
            "The request waits in the review queue.",
        ),
        Ok(a) => redirect_with(&state, &page_of(&id), "error", &a.message()),
        Err(resp) => resp,
    }
}

/// `POST /proformas/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/proformas/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(&state, "/proformas", "ok", "The proforma is deleted."),
        Ok(a) => redirect_with(&state, "/proformas", "error", &a.message()),
        Err(resp) => resp,
    }
}
