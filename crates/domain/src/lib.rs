//! Pure business rules of the invoicing service: no I/O, no HTTP, no database.
//!
//! Everything here parses untrusted input into types that are valid by
//! construction (`CurrencyCode`, `CountryCode`, `ReferenceFormat`, ...), so the
//! layers above never re-check a rule by hand.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod bank;
pub mod country;
mod country_names;
pub mod currency;
pub mod entity_type;
pub mod fiscal;
pub mod invoice;
pub mod money;
pub mod placeholder;
pub mod reference;
pub mod tax;
