//! Generated passwords: drawn from the operating system's CSPRNG, stored only as argon2 hashes.
//!
//! One argon2 computation takes 19 MiB for its duration. Requests and jobs never
//! call [`hash`] or [`verify`] directly: they go through a [`HashGate`] (the
//! process-wide one is [`HashGate::shared`]), so however many sign-ins arrive at
//! once, only a few hashes run at the same time.

mod gate;

pub use gate::{GateError, HashGate, Turn};

use argon2::{
    Argon2,
    password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash},
};
use rand::{Rng, rngs::OsRng};

/// Length of a generated password (about 115 bits with [`ALPHABET`]).
pub const LENGTH: usize = 20;

/// Letters and digits without look-alikes (`0/O`, `1/l/I`), easy to retype.
const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A new random password.
pub fn generate() -> String {
    let mut rng = OsRng;
    (0..LENGTH)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}

/// The argon2id PHC string of `password` with a fresh random salt.
///
/// Blocking and memory-hungry: on request paths use [`HashGate::hash`].
pub fn hash(password: &str) -> anyhow::Result<String> {
    let hashed: Result<PasswordHash, _> = Argon2::default().hash_password(password.as_bytes());
    hashed
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing the password failed: {e}"))
}

/// Whether `password` matches the stored PHC string.
///
/// Blocking and memory-hungry: on request paths use [`HashGate::verify`].
pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), phc)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_are_long_random_and_hash_round_trips() {
        let a = generate();
        let b = generate();
        assert_eq!(a.chars().count(), LENGTH);
        assert!(a.len() >= 16);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| ALPHABET.contains(&c)));
        let h = hash(&a).unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(!h.contains(&a));
        assert!(verify(&a, &h));
        assert!(!verify(&b, &h));
    }
}
