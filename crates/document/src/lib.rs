//! The issued invoice as one typed document, in the terms of EN 16931's semantic model.
//!
//! An invoice's content is decided once, when it is issued: [`build::build`] turns the
//! draft, the company and the recipient into an [`Invoice`] (refusing what the law would
//! not accept), [`stored::encode`] writes it as versioned JSON into the invoice's row, and
//! every reader (the API's view, the PDF, the e-invoices, VERI*FACTU, corrections) decodes
//! it with [`stored::decode`], where a value that does not decode is an error. Nothing here
//! does I/O.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod build;
pub mod model;
#[cfg(feature = "samples")]
pub mod samples;
pub mod stored;
pub mod vat;

pub use model::*;

#[cfg(test)]
mod tests;
