//! Pages: one module per area, a shared layout, flash messages and errors.

pub mod agreements;
pub mod assets;
pub mod bank_accounts;
pub mod dashboard;
pub mod document_form;
pub mod entities;
pub mod expense_files;
pub mod expenses;
pub mod invoice_actions;
pub mod invoice_form;
pub mod invoices;
pub mod login;
pub mod members;
pub mod password;
pub mod proformas;
pub mod recurring;
pub mod reports;
pub mod review;
pub mod review_sentence;
pub mod settings;
pub mod settings_company;
pub mod sso;
pub mod tokens;
pub mod webhooks;

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use maud::{DOCTYPE, Markup, html};

use crate::{
    WebState,
    session::{FLASH_COOKIE, Session, SignedIn, cookie, set_cookie},
};

/// A message shown once at the top of the next page.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Flash {
    /// `ok` or `error`.
    pub kind: String,
    pub text: String,
}

impl Flash {
    /// A message of `kind`, cut to 1,000 characters (an API answer can be long).
    pub fn new(kind: &str, text: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            text: text.chars().take(1000).collect(),
        }
    }

    /// An error message: what the page shows above a form handed back to be corrected.
    pub fn error(text: &str) -> Self {
        Self::new("error", text)
    }
}

/// Redirects to `to` with a message for the page there.
pub fn redirect_with(state: &WebState, to: &str, kind: &str, text: &str) -> Response {
    let flash = Flash::new(kind, text);
    let value = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&flash).unwrap_or_default());
    let mut resp = Redirect::to(to).into_response();
    if let Ok(v) = HeaderValue::from_str(&set_cookie(state, FLASH_COOKIE, &value, 60)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// The answer to a form whose work is one API call: back to `back` saying
/// `done`, or saying what the API answered when it refused.
pub fn after(
    state: &WebState,
    back: &str,
    answer: Result<crate::client::Answer, Response>,
    done: &str,
) -> Response {
    match answer {
        Ok(a) if a.ok() => redirect_with(state, back, "ok", done),
        Ok(a) => redirect_with(state, back, "error", &a.message()),
        Err(resp) => resp,
    }
}

/// The flash message of a request, if any.
pub fn take_flash(headers: &HeaderMap) -> Option<Flash> {
    let raw = cookie(headers, FLASH_COOKIE)?;
    let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Everything the layout shows around a page.
pub struct Ctx<'a> {
    pub state: &'a WebState,
    pub session: &'a Session,
    pub flash: Option<Flash>,
    /// The nav entry to mark current.
    pub current: &'static str,
    /// Pending AI requests (shown in the nav).
    pub pending: Option<usize>,
    /// The person has a current legal document to accept (a banner says so).
    pub agreements_pending: bool,
}

impl<'a> Ctx<'a> {
    /// The context of a signed-in page; counts the pending AI requests.
    pub async fn new(
        state: &'a WebState,
        SignedIn(session): &'a SignedIn,
        headers: &HeaderMap,
        current: &'static str,
    ) -> Ctx<'a> {
        let pending = match session.company.as_ref() {
            Some(c) => match state.api.db.pool().acquire().await {
                Ok(mut conn) => store::audit::count_pending(
                    &mut conn,
                    &c.id,
                    state.api.now().timestamp_micros(),
                )
                .await
                .ok()
                .and_then(|n| usize::try_from(n).ok()),
                Err(_) => None,
            },
            None => None,
        };
        let agreements_pending = !current.is_empty() && agreements::pending(state, session).await;
        Ctx {
            state,
            session,
            flash: take_flash(headers),
            current,
            pending,
            agreements_pending,
        }
    }

    /// The hidden CSRF field every form carries.
    pub fn csrf(&self) -> Markup {
        html! { input type="hidden" name="csrf" value=(self.session.row.csrf_token); }
    }
}

const NAV: &[(&str, &str, &str)] = &[
    ("review", "/review", "Review queue"),
    ("invoices", "/invoices", "Invoices"),
    ("proformas", "/proformas", "Proformas"),
    ("recurring", "/recurring", "Recurring"),
    ("entities", "/entities", "Customers"),
    ("expenses", "/expenses", "Expenses"),
    ("bank-accounts", "/bank-accounts", "Bank accounts"),
    ("reports", "/reports", "Reports"),
    ("dashboard", "/dashboard", "Dashboard"),
    ("tokens", "/tokens", "API tokens"),
    ("members", "/members", "Members"),
    ("settings", "/settings", "Settings"),
];

/// A whole HTML document around `body`.
fn document(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Invoicing" }
                link rel="icon" type="image/svg+xml" href="/assets/favicon.svg";
                link rel="stylesheet" href="/assets/app.css";
                script src="/assets/app.js" defer {}
            }
            body { (body) }
        }
    }
}

fn flash_box(flash: &Option<Flash>) -> Markup {
    html! {
        @if let Some(f) = flash {
            @if f.kind == "ok" {
                div.flash.ok role="status" { (f.text) }
            } @else {
                div.flash.error role="alert" { (f.text) }
            }
        }
    }
}

/// A signed-in page: navigation, company, sign-out, flash, then `body`.
pub fn layout(ctx: &Ctx<'_>, title: &str, body: Markup) -> Response {
    let company = ctx.session.company.as_ref().map_or("", |c| c.name.as_str());
    let markup = document(
        title,
        html! {
            a.skip href="#main" { "Skip to content" }
            header.top {
                a.product href="/review" { img src="/assets/favicon.svg" alt="" width="24" height="24"; " Invoicing" }
                div.brand { span.company { (company) } span.muted { " · " (ctx.session.row.email) } }
                nav aria-label="Main" {
                    ul {
                        @for (key, href, label) in NAV {
                            li {
                                @if *key == ctx.current {
                                    a href=(href) aria-current="page" { (label) (badge(key, ctx.pending)) }
                                } @else {
                                    a href=(href) { (label) (badge(key, ctx.pending)) }
                                }
                            }
                        }
                    }
                }
                form.signout method="post" action="/logout" {
                    (ctx.csrf())
                    button type="submit" { "Sign out" }
                }
            }
            main id="main" {
                @if ctx.agreements_pending {
                    p.notice role="status" {
                        "You have legal documents to accept before invoices can be issued. "
                        a href="/agreements" { "Read and accept them" }
                    }
                }
                h1 { (title) }
                (flash_box(&ctx.flash))
                (body)
            }
        },
    );
    with_flash_cleared(
        ctx.state,
        ctx.flash.is_some(),
        Html(markup.into_string()).into_response(),
    )
}

fn badge(key: &str, pending: Option<usize>) -> Markup {
    html! {
        @if key == "review" {
            @if let Some(n) = pending.filter(|n| *n > 0) {
                " " span.badge aria-label=(format!("{n} pending")) { (if n >= 100 { "99+".to_owned() } else { n.to_string() }) }
            }
        }
    }
}

/// A page without navigation (sign-in, password change, company choice).
pub fn bare_page(state: &WebState, title: &str, flash: Option<Flash>, body: Markup) -> Response {
    let shown = flash.is_some();
    let markup = document(
        title,
        html! {
            main id="main" .narrow {
                h1 { (title) }
                (flash_box(&flash))
                (body)
            }
        },
    );
    with_flash_cleared(state, shown, Html(markup.into_string()).into_response())
}

fn with_flash_cleared(state: &WebState, shown: bool, mut resp: Response) -> Response {
    if shown && let Ok(v) = HeaderValue::from_str(&set_cookie(state, FLASH_COOKIE, "", 0)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// A full error page with a status code.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    let markup = document(
        title,
        html! {
            main id="main" .narrow {
                h1 { (title) }
                p.flash.error role="alert" { (message) }
                p { a href="/" { "Back to the start page" } }
            }
        },
    );
    (status, Html(markup.into_string())).into_response()
}

/// Any path no page serves: the API's plain-text answer under the API's own
/// paths, an HTML page with a way back for everything else.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    let path = uri.path();
    let api_path = ["/v1", "/api", "/openapi.json"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")));
    if api_path {
        return api::no_such_route().await;
    }
    error_page(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no page at this address. Check the address, or start again from the review queue.",
    )
}

/// `/`: the review queue for people signed in, else the sign-in page.
pub async fn home(session: Option<crate::session::AnySession>) -> Redirect {
    match session {
        Some(_) => Redirect::to("/review"),
        None => Redirect::to("/login"),
    }
}

/// A date-time as `2026-11-22 14:05 UTC`.
pub fn when(value: &serde_json::Value) -> String {
    value
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map_or_else(
            || value.as_str().unwrap_or("—").to_owned(),
            |t| {
                t.with_timezone(&chrono::Utc)
                    .format("%Y-%m-%d %H:%M UTC")
                    .to_string()
            },
        )
}

/// A string field of a JSON object, empty when absent.
pub fn s<'v>(v: &'v serde_json::Value, key: &str) -> &'v str {
    v.get(key).and_then(serde_json::Value::as_str).unwrap_or("")
}
