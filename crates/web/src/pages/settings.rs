//! Company settings and the VERI*FACTU authorization page
//! (`requiresAuthorizationUrl` of a refused issue points here).

use axum::{
    body::Bytes,
    extract::{FromRequest, Multipart, Request, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::html;
use serde_json::{Map, Value, json};

use super::{Ctx, after, error_page, layout, redirect_with, s, when};
use crate::{
    WebState, client,
    forms::Post,
    session::{SignedIn, check_origin, forbidden_cross_site},
};

/// Text fields of the company form: (API field, label, input type).
const FIELDS: &[(&str, &str, &str)] = &[
    ("name", "Legal name", "text"),
    ("friendlyName", "Short name", "text"),
    ("email", "Contact e-mail", "email"),
    ("phone", "Phone", "tel"),
    ("currencyCode", "Default currency (ISO 4217)", "text"),
    (
        "invoiceReferenceFormat",
        "Invoice reference format ({year}, {number})",
        "text",
    ),
    (
        "correctiveInvoiceReferenceFormat",
        "Corrective invoice reference format",
        "text",
    ),
    (
        "proformaReferenceFormat",
        "Proforma reference format",
        "text",
    ),
];

/// Typst snippets of the company form: (API field, label).
const SNIPPETS: &[(&str, &str)] = &[
    (
        "footerInvoiceTypst",
        "Invoice footer (Typst; {{key}} placeholders)",
    ),
    ("postInvoiceTypst", "After the invoice body (Typst)"),
];

/// Fields that may be cleared (sent as null when left empty).
const NULLABLE: &[&str] = &[
    "friendlyName",
    "currencyCode",
    "footerInvoiceTypst",
    "postInvoiceTypst",
];

/// `GET /settings`.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    let c = match client::get_json(&state, &signed.0, "/v1/company").await {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    layout(
        &ctx,
        "Settings",
        html! {
            p { a href="/settings/verifactu" { "VERI*FACTU authorization" } " · " a href="/settings/webhooks" { "Webhooks" } " · " a href="/password" { "Change your password" } }
            dl.fields.summary {
                dt { "Company id" } dd { code { (s(&c, "id")) } }
            }
            form.card method="post" action="/settings" {
                (ctx.csrf())
                @for (key, label, kind) in FIELDS {
                    label for=(key) { (label) }
                    input id=(key) name=(key) type=(kind) value=(text(key));
                }
                (super::settings_company::fields(&c))
                @for (key, label) in SNIPPETS {
                    label for=(key) { (label) }
                    textarea id=(key) name=(key) rows="4" spellcheck="false" { (text(key)) }
                }
                button.primary type="submit" { "Save settings" }
            }
        },
    )
}

/// `POST /settings`: sends the changed fields as one `PATCH /v1/company`.
pub async fn save(State(state): State<WebState>, post: Post) -> Response {
    let current = match client::get_json(&state, &post.session, "/v1/company").await {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let mut patch = Map::new();
    for key in FIELDS
        .iter()
        .map(|f| f.0)
        .chain(SNIPPETS.iter().map(|f| f.0))
    {
        let Some(sent) = post.fields.get(key) else {
            continue;
        };
        let sent = sent.trim().replace("\r\n", "\n");
        let now = current.get(key).and_then(Value::as_str).unwrap_or("");
        if sent == now {
            continue;
        }
        let value = if sent.is_empty() && NULLABLE.contains(&key) {
            Value::Null
        } else {
            json!(sent)
        };
        patch.insert(key.to_owned(), value);
    }
    if let Err(e) = super::settings_company::changes(&post.fields, &current, &mut patch) {
        return redirect_with(&state, "/settings", "error", &e);
    }
    if patch.is_empty() {
        return redirect_with(&state, "/settings", "ok", "Nothing changed.");
    }
    after(
        &state,
        "/settings",
        client::call(
            &state,
            &post.session,
            Method::PATCH,
            "/v1/company",
            Some(&Value::Object(patch)),
        )
        .await,
        "Settings saved.",
    )
}

/// `GET /settings/verifactu`: where the company stands and how to get authorized.
pub async fn verifactu(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    let a = match client::get_json(&state, &signed.0, "/v1/verifactu/authorization").await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    let required = a["required"].as_bool().unwrap_or(false);
    let in_effect = a["in_effect"].as_bool().unwrap_or(false);
    let status = s(&a, "status");
    layout(
        &ctx,
        "VERI*FACTU authorization",
        html! {
            @if !required {
                p.flash.ok { "Your company does not issue under Spanish rules (its type is not ES:…): VERI*FACTU does not apply and invoices can be issued." }
            } @else if in_effect {
                p.flash.ok role="status" { "The authorization is in effect: invoices are issued and reported to the AEAT." }
            } @else {
                p.flash.error role="status" {
                    "Invoices cannot be issued yet. Spanish law requires that every issued invoice is reported to the "
                    "tax agency (AEAT) through VERI*FACTU, and that the company authorizes this service to do it."
                }
            }
            dl.fields.summary {
                dt { "Status" } dd { span class=(format!("status {status}")) { (status.replace('_', " ")) } }
                dt { "How" } dd { (a["method"].as_str().unwrap_or("—").replace('_', " ")) }
                @if let Some(n) = a["note"].as_str() { dt { "Note" } dd { (n) } }
                @if !a["updated_at"].is_null() { dt { "Updated" } dd { (when(&a["updated_at"])) } }
            }
            @if required && !in_effect {
                section.card aria-labelledby="doc-h" {
                    h2 id="doc-h" { "1. Upload the signed authorization" }
                    p { "The authorization as a PDF, signed electronically (PAdES, e.g. with AutoFirma) with a certificate that names the company's fiscal id: the company's representative certificate, or your own as a self-employed person, from a Spanish certification authority such as the FNMT. Upload the file exactly as signed. It takes effect at once." }
                    form method="post" action="/settings/verifactu/document" enctype="multipart/form-data" {
                        (ctx.csrf())
                        label for="document" { "Signed PDF (at most 10 MiB)" }
                        input id="document" name="document" type="file" accept="application/pdf" required;
                        button.primary type="submit" { "Upload" }
                    }
                }
                section.card aria-labelledby="poa-h" {
                    h2 id="poa-h" { "2. Or declare a power of attorney" }
                    p { "If the company granted this service a power of attorney (apoderamiento) at the AEAT's electronic office, declare it here. It takes effect once the daily check confirms it with the AEAT." }
                    form method="post" action="/settings/verifactu/power-of-attorney" {
                        (ctx.csrf())
                        button type="submit" { "I granted the power of attorney" }
                    }
                }
            }
        },
    )
}

/// `POST /settings/verifactu/power-of-attorney`.
pub async fn power_of_attorney(State(state): State<WebState>, post: Post) -> Response {
    let path = "/v1/verifactu/authorization/power-of-attorney";
    after(
        &state,
        "/settings/verifactu",
        client::call(&state, &post.session, Method::POST, path, None).await,
        "Declared. It takes effect once the daily check with the AEAT confirms it.",
    )
}

/// `POST /settings/verifactu/document`: a multipart upload, CSRF-checked like every form.
pub async fn document(State(state): State<WebState>, req: Request) -> Response {
    if let Err(resp) = check_origin(&state, req.headers()) {
        return resp;
    }
    let (mut parts, body) = req.into_parts();
    let SignedIn(session) =
        match <SignedIn as axum::extract::FromRequestParts<WebState>>::from_request_parts(
            &mut parts, &state,
        )
        .await
        {
            Ok(s) => s,
            Err(resp) => return resp,
        };
    let mut multipart =
        match Multipart::from_request(Request::from_parts(parts, body), &state).await {
            Ok(m) => m,
            Err(e) => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "Upload not understood",
                    &e.to_string(),
                );
            }
        };
    let (mut csrf, mut pdf) = (None, None::<Bytes>);
    loop {
        match multipart.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or("").to_owned();
                match field.bytes().await {
                    Ok(bytes) if name == "csrf" => {
                        csrf = Some(String::from_utf8_lossy(&bytes).into_owned())
                    }
                    Ok(bytes) if name == "document" => pdf = Some(bytes),
                    Ok(_) => {}
                    Err(e) => {
                        return redirect_with(
                            &state,
                            "/settings/verifactu",
                            "error",
                            &format!("The upload failed: {e}"),
                        );
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                return redirect_with(
                    &state,
                    "/settings/verifactu",
                    "error",
                    &format!("The upload failed: {e}"),
                );
            }
        }
    }
    if !session.csrf_ok(csrf.as_deref()) {
        return forbidden_cross_site();
    }
    let Some(pdf) = pdf.filter(|b| !b.is_empty()) else {
        return redirect_with(
            &state,
            "/settings/verifactu",
            "error",
            "Choose the signed PDF to upload.",
        );
    };
    let path = "/v1/verifactu/authorization/document";
    after(
        &state,
        "/settings/verifactu",
        client::call_raw(&state, &session, Method::POST, path, "application/pdf", pdf).await,
        "The signed authorization is accepted: invoices can be issued.",
    )
}
