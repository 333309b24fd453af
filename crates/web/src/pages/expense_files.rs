//! Files of expenses: uploading and downloading a receipt, and importing a
//! supplier's e-invoice (UBL, CII or Factur-X) as a new expense. The uploads are
//! multipart forms, origin- and CSRF-checked like every form, sent on to the API
//! as raw bytes.

use axum::{
    body::Bytes,
    extract::{FromRequest, Multipart, Path, Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde_json::Value;

use super::{Ctx, after, error_page, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    session::{Session, SignedIn, check_origin, forbidden_cross_site},
};

/// The form on the list that imports an e-invoice file.
pub fn import_form(ctx: &Ctx<'_>) -> Markup {
    html! {
        form.card.upload method="post" action="/expenses/import" enctype="multipart/form-data" {
            (ctx.csrf())
            label for="einvoice" { "Import a supplier's e-invoice (UBL or CII XML, or Factur-X PDF)" }
            input id="einvoice" name="file" type="file" accept=".xml,.pdf,application/xml,text/xml,application/pdf" required;
            button type="submit" { "Import e-invoice" }
        }
    }
}

/// The receipt of an expense: a download link and the upload form.
pub fn receipt_section(ctx: &Ctx<'_>, e: &Value) -> Markup {
    let id = enc(s(e, "id"));
    let receipt = &e["receipt"];
    html! {
        section.card {
            h2 { "Receipt" }
            @if receipt.is_object() {
                p { a href=(format!("/expenses/{id}/receipt")) { "Download the receipt" }
                    " (" (s(receipt, "content_type")) ", " (receipt["size"].as_i64().unwrap_or(0)) " bytes)" }
            } @else {
                p { "No receipt yet." }
            }
            form.upload method="post" action=(format!("/expenses/{id}/receipt")) enctype="multipart/form-data" {
                (ctx.csrf())
                label for="receipt" { "Receipt file (PDF, PNG, JPEG or WebP, at most 10 MiB)" }
                input id="receipt" name="file" type="file" accept=".pdf,.png,.jpg,.jpeg,.webp" required;
                button type="submit" { @if receipt.is_object() { "Replace the receipt" } @else { "Upload the receipt" } }
            }
        }
    }
}

/// Reads a multipart form with a `csrf` field and a `file` field, after the
/// origin, session and CSRF checks; `back` is where a failure is told.
async fn upload(state: &WebState, req: Request, back: &str) -> Result<(Session, Bytes), Response> {
    check_origin(state, req.headers())?;
    let (mut parts, body) = req.into_parts();
    let SignedIn(session) =
        <SignedIn as axum::extract::FromRequestParts<WebState>>::from_request_parts(
            &mut parts, state,
        )
        .await?;
    let mut multipart = Multipart::from_request(Request::from_parts(parts, body), state)
        .await
        .map_err(|e| {
            error_page(
                StatusCode::BAD_REQUEST,
                "Upload not understood",
                &e.to_string(),
            )
        })?;
    let failed = |e: &dyn std::fmt::Display| {
        redirect_with(state, back, "error", &format!("The upload failed: {e}"))
    };
    let (mut csrf, mut file) = (None, None::<Bytes>);
    while let Some(field) = multipart.next_field().await.map_err(|e| failed(&e))? {
        let name = field.name().unwrap_or("").to_owned();
        let bytes = field.bytes().await.map_err(|e| failed(&e))?;
        match name.as_str() {
            "csrf" => csrf = Some(String::from_utf8_lossy(&bytes).into_owned()),
            "file" => file = Some(bytes),
            _ => {}
        }
    }
    if !session.csrf_ok(csrf.as_deref()) {
        return Err(forbidden_cross_site());
    }
    match file.filter(|b| !b.is_empty()) {
        Some(bytes) => Ok((session, bytes)),
        None => Err(redirect_with(
            state,
            back,
            "error",
            "Choose a file to upload.",
        )),
    }
}

/// `POST /expenses/{id}/receipt`.
pub async fn put_receipt(
    State(state): State<WebState>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    let back = format!("/expenses/{}", enc(&id));
    let (session, bytes) = match upload(&state, req, &back).await {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    let path = format!("/v1/expenses/{}/receipt", enc(&id));
    let answer = client::call_raw(
        &state,
        &session,
        Method::PUT,
        &path,
        "application/octet-stream",
        bytes,
    )
    .await;
    after(&state, &back, answer, "The receipt is saved.")
}

/// `GET /expenses/{id}/receipt`: the stored file with the API's type, as an attachment.
pub async fn get_receipt(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let path = format!("/v1/expenses/{}/receipt", enc(&id));
    let answer = match client::call(&state, &signed.0, Method::GET, &path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return error_page(answer.status, "No receipt", &answer.message());
    }
    let kind = answer
        .headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    // Always a download: an imported XML file is never rendered on the app's origin.
    let disposition = answer
        .headers
        .get(header::CONTENT_DISPOSITION)
        .and_then(|d| d.to_str().ok())
        .map(|d| d.replacen("inline", "attachment", 1))
        .and_then(|d| HeaderValue::from_str(&d).ok());
    let mut resp = answer.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, kind);
    if let Some(d) = disposition {
        h.insert(header::CONTENT_DISPOSITION, d);
    }
    resp
}

/// `POST /expenses/import`: a new expense from the supplier's e-invoice file.
pub async fn import(State(state): State<WebState>, req: Request) -> Response {
    let (session, bytes) = match upload(&state, req, "/expenses").await {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    let kind = if bytes.starts_with(b"%PDF") {
        "application/pdf"
    } else {
        "application/xml"
    };
    let answer = match client::call_raw(
        &state,
        &session,
        Method::POST,
        "/v1/expenses/import",
        kind,
        bytes,
    )
    .await
    {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if answer.status == StatusCode::ACCEPTED {
        return redirect_with(
            &state,
            "/expenses",
            "ok",
            "The request waits in the review queue.",
        );
    }
    if answer.ok() {
        let e = answer.json();
        return redirect_with(
            &state,
            &format!("/expenses/{}", enc(s(&e, "id"))),
            "ok",
            "The e-invoice is imported as an expense.",
        );
    }
    let message = answer.message();
    if answer.status == StatusCode::CONFLICT
        && let Some(existing) = existing_expense(&message)
    {
        return redirect_with(
            &state,
            &format!("/expenses/{}", enc(existing)),
            "error",
            &message,
        );
    }
    redirect_with(&state, "/expenses", "error", &message)
}

/// The expense a 409 of the import names ("… recorded as expense ID …").
fn existing_expense(message: &str) -> Option<&str> {
    let rest = message.split_once("as expense ")?.1;
    let id = rest.split_whitespace().next()?;
    (!id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then_some(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_existing_expense_is_read_from_the_conflict() {
        let m = "ACME's invoice F-1 is already recorded as expense 01ABC (GET /v1/expenses/01ABC); each supplier invoice is recorded once.";
        assert_eq!(super::existing_expense(m), Some("01ABC"));
        assert_eq!(super::existing_expense("something else"), None);
    }
}
