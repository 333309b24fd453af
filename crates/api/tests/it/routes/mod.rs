//! One module per resource and one file per action, named after the route
//! (`routes/invoices/issue.rs` tests `POST /v1/invoices/{id}/issue`).

mod bank_accounts;
mod dashboard;
mod expenses;
mod invoices;
mod payments;
mod proformas;
mod taxes;
