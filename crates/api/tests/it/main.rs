//! Integration tests over the real router; each runs on SQLite and PostgreSQL.

#[macro_use]
pub mod support;

pub mod background;
pub mod paid_support;

mod agreements;
mod audit;
mod auth;
mod bad_input;
mod company;
mod docs;
mod documents;
mod einvoice;
mod entities;
mod expense_import;
mod facturae_signature;
mod facturx;
mod fairness;
mod files;
mod fx;
mod gate_queue;
mod gate_replay;
mod hardening;
mod idempotency;
mod isolation;
mod legal;
mod member_names;
mod members;
mod members_mail;
mod members_status;
mod paid_recurring;
mod paid_reminders;
mod paid_send;
mod paid_status;
mod pdf;
mod queue;
mod ratelimit;
mod reports;
mod routes;
mod session;
mod token_cache;
mod tokens;
mod verifactu;
mod verifactu_annul;
mod verifactu_document;
mod verifactu_submit;
mod webhooks;
mod webhooks_worker;
