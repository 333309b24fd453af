//! Integration tests over the real router; each runs on SQLite and PostgreSQL.

#[macro_use]
pub mod support;

mod agreements;
mod audit;
mod auth;
mod company;
mod docs;
mod entities;
mod fx;
mod invoices;
mod isolation;
mod money;
mod pdf;
mod session;
mod tokens;
mod verifactu;
