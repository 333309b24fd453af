//! What a password a person chooses must be: at least [`MIN_CHARS`] characters,
//! and not one an attacker tries first.
//!
//! Refused, with the reason: one character repeated or a short pattern repeated
//! (`abcabcabcabc`); a run along the alphabet, the digits or a keyboard row
//! (`123456789012`, `qwertyuiopas`); one of the most common passwords or words
//! (`common.txt`, a few hundred), checked case-insensitively once leading and
//! trailing digits and symbols are set aside and look-alike symbols are read as
//! letters (`P@ssw0rd2024!` is `password`); the person's e-mail address or its
//! name part, or the name of a company they work in, used the same way.

use std::{collections::HashSet, sync::LazyLock};

/// Shortest password a person may choose.
pub const MIN_CHARS: usize = 12;

/// Longest password accepted (argon2 hashes any length, but a form field need not be a book).
pub const MAX_CHARS: usize = 1024;

static COMMON: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("password_policy/common.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
});

/// Runs people walk along: the alphabet, the digits, keyboard rows and columns
/// (US, German and French layouts), each also read backwards and round the end.
const SEQUENCES: &[&str] = &[
    "abcdefghijklmnopqrstuvwxyz",
    "0123456789",
    "`1234567890-=",
    "~!@#$%^&*()_+",
    "qwertyuiop[]\\",
    "asdfghjkl;'",
    "zxcvbnm,./",
    "qwertyuiopasdfghjklzxcvbnm",
    "qwertzuiopasdfghjklyxcvbnm",
    "azertyuiopqsdfghjklmwxcvbn",
    "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p",
    "zaq1xsw2cde3vfr4bgt5nhy6mju7ki8lo9p0",
    "1q2w3e4r5t6y7u8i9o0p",
    "q1w2e3r4t5y6u7i8o9p0",
    "qazwsxedcrfvtgbyhnujmikolp",
];

/// Why a password is refused, as one sentence that says what to do.
pub fn check(password: &str, email: &str, company_names: &[&str]) -> Result<(), String> {
    let count = password.chars().count();
    if count < MIN_CHARS {
        return Err(format!(
            "The new password must have at least {MIN_CHARS} characters."
        ));
    }
    if count > MAX_CHARS {
        return Err(format!(
            "The new password must have at most {MAX_CHARS} characters."
        ));
    }
    let lower = password.to_lowercase();
    let letters_digits = alnum(&lower);
    let mut chars = lower.chars();
    let first = chars.next();
    if chars.all(|c| Some(c) == first) {
        return Err(
            "The new password is one character repeated; choose one that is hard to guess.".into(),
        );
    }
    if short_period(&lower)
        || (letters_digits.chars().count() >= 8 && short_period(&letters_digits))
    {
        return Err(
            "The new password repeats a short pattern; choose one that is hard to guess.".into(),
        );
    }
    if is_sequence(&lower) || (letters_digits.chars().count() >= 6 && is_sequence(&letters_digits))
    {
        return Err(
            "The new password is a simple sequence (along the alphabet, the digits or \
                    the keyboard); choose one that is hard to guess."
                .into(),
        );
    }
    let cores = cores(&lower);
    let based_on = |word: &str| {
        let word = alnum(&word.to_lowercase());
        !word.is_empty() && (letters_digits == word || cores.iter().any(|c| is_repeat_of(c, &word)))
    };
    if cores
        .iter()
        .any(|c| COMMON.contains(c.as_str()) || COMMON.iter().any(|w| is_repeat_of(c, w)))
        || COMMON.contains(letters_digits.as_str())
    {
        return Err(
            "The new password is one of the most common passwords (perhaps with digits \
                    or symbols added); choose one that is hard to guess."
                .into(),
        );
    }
    let local_part = email.split('@').next().unwrap_or_default();
    if based_on(email) || based_on(local_part) {
        return Err(
            "The new password is your e-mail address or its name; choose another one.".into(),
        );
    }
    if let Some(name) = company_names.iter().find(|n| based_on(n)) {
        return Err(format!(
            "The new password is the name of your company {name}; choose another one."
        ));
    }
    Ok(())
}

/// Only the letters and digits of `s`.
fn alnum(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

/// The heart of a lower-case password: leading and trailing digits and symbols
/// set aside, read as is and with look-alike symbols read as letters (`1` and
/// `!` both as `i` and as `l`), letters and digits only. Empty cores are left out.
fn cores(lower: &str) -> Vec<String> {
    let inner = lower.trim_matches(|c: char| !c.is_alphabetic());
    let leet = |one: char| -> String {
        inner
            .chars()
            .map(|c| match c {
                '@' | '4' => 'a',
                '3' => 'e',
                '1' | '!' | '|' => one,
                '0' => 'o',
                '$' | '5' => 's',
                '7' | '+' => 't',
                c => c,
            })
            .collect()
    };
    let mut out: Vec<String> = [alnum(inner), alnum(&leet('i')), alnum(&leet('l'))]
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect();
    out.dedup();
    out
}

/// Whether `s` is `unit` written once or more times over.
fn is_repeat_of(s: &str, unit: &str) -> bool {
    !unit.is_empty() && s.len().is_multiple_of(unit.len()) && s.len() >= unit.len() && {
        s.as_bytes()
            .chunks(unit.len())
            .all(|chunk| chunk == unit.as_bytes())
    }
}

/// Whether `s` is a unit of at most four characters repeated (at least twice).
fn short_period(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    (1..=4).any(|p| chars.len() >= 2 * p && (p..chars.len()).all(|i| chars[i] == chars[i - p]))
}

/// Whether `s` runs along one of [`SEQUENCES`], either way, possibly round the end.
fn is_sequence(s: &str) -> bool {
    SEQUENCES.iter().any(|seq| {
        let alnum_seq = alnum(seq);
        [seq.to_string(), alnum_seq].iter().any(|seq| {
            let round: String = seq.repeat(1 + s.chars().count() / seq.chars().count().max(1) + 1);
            let back: String = round.chars().rev().collect();
            round.contains(s) || back.contains(s)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(p: &str) -> String {
        check(p, "maria.lopez@example.com", &["Alpha Trading Ltd"])
            .err()
            .unwrap_or_default()
    }

    #[test]
    fn guessable_passwords_are_refused_with_the_reason() {
        assert!(why("short").contains("at least 12"));
        assert!(why("aaaaaaaaaaaaaa").contains("one character repeated"));
        assert!(why("abcabcabcabc").contains("short pattern"));
        assert!(why("12121212121212").contains("short pattern"));
        for seq in [
            "123456789012",
            "abcdefghijklm",
            "QWERTYUIOPASD",
            "987654321098",
            "1qaz2wsx3edc",
            "!@#$%^&*()_+",
        ] {
            assert!(why(seq).contains("simple sequence"), "{seq}: {}", why(seq));
        }
        for common in [
            "password1234",
            "P@ssw0rd2024!",
            "Welcome2024!!",
            "iloveyou1234",
            "Sunshine!!!!1",
            "footballfootball",
            "1Password!!!",
            "letmein12345",
        ] {
            assert!(
                why(common).contains("most common"),
                "{common}: {}",
                why(common)
            );
        }
        assert!(why("maria.lopez2024").contains("e-mail"));
        assert!(why("MariaLopez!!!!").contains("e-mail"));
        assert!(why("maria.lopez@example.com").contains("e-mail"));
        assert!(why("Alpha Trading Ltd 1").contains("Alpha Trading Ltd"));
        assert!(why("alphatradingltd").contains("company"));
    }

    #[test]
    fn ordinary_passphrases_pass() {
        for ok in [
            "a long and new passphrase",
            "my own long passphrase",
            "correct horse battery staple",
            "Tr0ub4dor&3-and-more",
            "839201746352",
            "blue whale under Lisbon",
        ] {
            assert_eq!(
                check(ok, "maria.lopez@example.com", &["Alpha Trading Ltd"]),
                Ok(()),
                "{ok}"
            );
        }
    }
}
