//! Structured e-invoices in the terms of EN 16931.
//!
//! [`read`] turns a supplier's file (UBL 2.1 Invoice or CreditNote, UN/CEFACT CII D16B,
//! XRechnung in either syntax, or a Factur-X / ZUGFeRD 2.x PDF with its embedded XML) into
//! one [`read::Incoming`] value, refusing, with the rule's identifier, a file that is not
//! well-formed, not of a known syntax, missing what an expense needs, or whose sums do not
//! add up (BR-CO-10 to BR-CO-16). Nothing here does I/O; no DTD, entity or external
//! reference in a file is ever resolved.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod read;
