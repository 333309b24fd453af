//! The fiscal identifiers a certificate names, and comparing them with a Spanish NIF.
//!
//! Spanish qualified certificates (ETSI EN 319 412-1) carry the holder's NIF in the
//! subject's `serialNumber` (2.5.4.5), e.g. `IDCES-12345678Z` or plain `12345678Z`, and a
//! legal entity's NIF in `organizationIdentifier` (2.5.4.97), e.g. `VATES-B12345678`; a
//! representative's certificate has both: the person's and the entity's.

use der::{Tag, Tagged};
use x509_cert::name::Name;

use crate::oid;

/// A directory string's text (UTF8String, PrintableString, IA5String), if it is one of those.
pub(crate) fn text(value: &der::Any) -> Option<String> {
    match value.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String => {
            std::str::from_utf8(value.value()).ok().map(str::to_owned)
        }
        _ => None,
    }
}

/// The identifiers in a subject: every `serialNumber` and `organizationIdentifier` value,
/// as written.
pub(crate) fn identifiers(subject: &Name) -> Vec<String> {
    subject
        .iter()
        .filter(|a| a.oid == oid::SERIAL_NUMBER || a.oid == oid::ORGANIZATION_IDENTIFIER)
        .filter_map(|a| text(&a.value))
        .collect()
}

/// An identifier reduced to the bare NIF: upper case, without the ETSI semantics prefix
/// (`IDCES-`, `VATES-`, `TINES-`, `PNOES-`, `NTRES-`, ...), a leading `ES` country code, or
/// separators.
pub fn normalize(id: &str) -> String {
    let upper: String = id.trim().chars().map(|c| c.to_ascii_uppercase()).collect();
    let b = upper.as_bytes();
    let bare = if b.len() > 6
        && b[..3].iter().all(u8::is_ascii_uppercase)
        && &b[3..5] == b"ES"
        && b[5] == b'-'
    {
        &upper[6..]
    } else {
        &upper[..]
    };
    let compact: String = bare
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '.'))
        .collect();
    match compact.strip_prefix("ES") {
        // `ESB12345674`: the NIF with the VAT country prefix.
        Some(rest) if rest.len() == 9 => rest.to_owned(),
        _ => compact,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_the_forms_spanish_certificates_use() {
        for (raw, nif) in [
            ("IDCES-12345678Z", "12345678Z"),
            ("12345678Z", "12345678Z"),
            ("12345678-z", "12345678Z"),
            ("PNOES-12345678Z", "12345678Z"),
            ("TINES-X1234567L", "X1234567L"),
            ("VATES-B12345674", "B12345674"),
            ("vates-b12345674", "B12345674"),
            ("NTRES-B12345674", "B12345674"),
            ("ESB12345674", "B12345674"),
            (" B-12.345.674 ", "B12345674"),
        ] {
            assert_eq!(normalize(raw), nif, "{raw}");
        }
        // Another country's identifier keeps its prefix: it is not a Spanish NIF.
        assert_eq!(normalize("VATFR-12345678901"), "VATFR12345678901");
        assert_ne!(normalize("IDCFR-12345678Z"), "12345678Z");
    }
}
