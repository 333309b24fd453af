//! Writing an invoice: the draft form with its line editor and tax preview
//! (the form is [`super::document_form`]'s, shared with proformas and
//! recurring invoices). Saving is one `POST /v1/invoices` or
//! `PATCH /v1/invoices/{id}`.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::HeaderMap,
    response::{Html, IntoResponse, Response},
};

use super::{
    Ctx,
    document_form::{self, Detail, Draft, Kind},
    redirect_with, s,
};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

pub use super::document_form::{minor_units, plain_amount};

/// Optional text and date fields of a draft.
const DETAILS: &[Detail] = &[
    (
        "due_date",
        "Due date (empty: from the payment terms)",
        "date",
    ),
    ("buyer_reference", "Buyer reference (BT-10)", "text"),
    ("order_reference", "Purchase order reference", "text"),
    ("delivery_date", "Delivery date", "date"),
    ("period_start", "Period from", "date"),
    ("period_end", "Period until", "date"),
];

/// An invoice draft.
pub const INVOICE: Kind = Kind {
    nav: "invoices",
    web: "/invoices",
    api: "/v1/invoices",
    new_title: "New invoice",
    edit_title: "Edit draft invoice",
    details: DETAILS,
    notes: Some("Notes printed on the invoice"),
    save: "Save draft",
    created: "Draft created.",
    saved: "Draft saved.",
    own_fields: None,
    own_body: None,
};

/// `GET /invoices/new`, optionally `?recipient=` a customer.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, INVOICE.nav).await;
    let mut draft = Draft::default();
    if let Some(r) = q.get("recipient") {
        draft.values.insert("recipient_id".to_owned(), r.clone());
    }
    document_form::new_page(&ctx, &INVOICE, &draft).await
}

/// `GET /invoices/{id}/edit`: a draft in the form.
pub async fn edit_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, INVOICE.nav).await;
    let inv = match client::get_json(&state, &signed.0, &format!("/v1/invoices/{}", enc(&id))).await
    {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    if s(&inv, "status") != "draft" {
        return redirect_with(
            &state,
            &format!("/invoices/{}", enc(&id)),
            "error",
            "An issued invoice cannot be changed; correct it with a corrective invoice instead.",
        );
    }
    let draft = Draft::from_json(&inv, &INVOICE, s(&inv, "currency_code"));
    document_form::edit_page(&ctx, &INVOICE, &id, &draft).await
}

/// `POST /invoices/new`: add a line, preview, or create the draft.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    document_form::submit(&state, &headers, post, None, &INVOICE).await
}

/// `POST /invoices/{id}/edit`: add a line, preview, or save the draft.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    document_form::submit(&state, &headers, post, Some(id), &INVOICE).await
}

/// `POST /invoices/preview`: the tax preview of a line form as an HTML fragment
/// (the script's, for every kind of document).
pub async fn preview_fragment(State(state): State<WebState>, post: Post) -> Response {
    let draft = Draft::from_post(&post);
    Html(
        document_form::preview(&state, &post.session, &draft)
            .await
            .into_string(),
    )
    .into_response()
}
