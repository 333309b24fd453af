//! The web app driven in process, on SQLite and PostgreSQL: requests go through
//! the same router `invoicing serve` runs (API and web app merged), with the
//! client address a real connection would carry.

mod sign_in_form;
mod sign_in_next;
mod sign_in_throttle;
mod support;
