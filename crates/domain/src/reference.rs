//! Document reference formats such as `INV-{year}-{number:5}`.
//!
//! A format is parsed once into segments so rendering can never fail and a
//! format without `{number}` (which would give every invoice the same
//! reference) is rejected at configuration time.

use std::fmt;

/// Why a reference format was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceFormatError {
    /// The format has no `{number}`, so every document would get the same reference.
    #[error("must contain the {{number}} placeholder")]
    MissingNumber,
    /// A `{...}` placeholder other than `year`, `number` or `number:N`.
    #[error("has an unknown placeholder `{{{0}}}`; use {{year}}, {{number}} or {{number:N}}")]
    UnknownPlaceholder(String),
    /// A `{` without its closing `}`.
    #[error("has an unclosed `{{`")]
    Unclosed,
    /// `{number:N}` with N above 12.
    #[error("pads {{number}} to {0} digits; at most 12 are allowed")]
    PaddingTooWide(u32),
    /// The format is blank.
    #[error("is empty")]
    Empty,
    /// The format has more than 64 characters.
    #[error("is longer than 64 characters")]
    TooLong,
    /// A control character (a line break, a tab...) or a double quote: references name
    /// files and travel in headers (`Content-Disposition`), mail and XML.
    #[error(
        "contains {0}, which a reference may not contain (no control characters or double quotes)"
    )]
    ForbiddenCharacter(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Year,
    Number { pad: u32 },
}

/// A piece of a year's reference ([`ReferenceFormat::parts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferencePart {
    /// Printed as it is.
    Text(String),
    /// The document's number.
    Number {
        /// The fewest digits it is printed with, zero-padded (0 or 1: as it is).
        pad: u32,
    },
}

impl ReferencePart {
    /// The reference these parts make for document `number`.
    pub fn render(parts: &[ReferencePart], number: i64) -> String {
        parts
            .iter()
            .map(|p| match p {
                ReferencePart::Text(t) => t.clone(),
                ReferencePart::Number { pad } => format!("{number:0width$}", width = *pad as usize),
            })
            .collect()
    }
}

/// A validated reference format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceFormat {
    source: String,
    segments: Vec<Segment>,
}

impl ReferenceFormat {
    /// Parses a format string; placeholders are `{year}`, `{number}` and `{number:N}`.
    pub fn parse(source: &str) -> Result<Self, ReferenceFormatError> {
        if source.trim().is_empty() {
            return Err(ReferenceFormatError::Empty);
        }
        if source.chars().count() > 64 {
            return Err(ReferenceFormatError::TooLong);
        }
        if let Some(c) = source.chars().find(|c| c.is_control() || *c == '"') {
            return Err(ReferenceFormatError::ForbiddenCharacter(format!("{c:?}")));
        }
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or(ReferenceFormatError::Unclosed)?;
            let name = &after[..close];
            let segment = match name {
                "year" => Segment::Year,
                "number" => Segment::Number { pad: 0 },
                _ => match name.strip_prefix("number:") {
                    Some(n) => {
                        let pad: u32 = n
                            .parse()
                            .map_err(|_| ReferenceFormatError::UnknownPlaceholder(name.into()))?;
                        if pad > 12 {
                            return Err(ReferenceFormatError::PaddingTooWide(pad));
                        }
                        Segment::Number { pad }
                    }
                    None => return Err(ReferenceFormatError::UnknownPlaceholder(name.into())),
                },
            };
            if !literal.is_empty() {
                segments.push(Segment::Literal(std::mem::take(&mut literal)));
            }
            segments.push(segment);
            rest = &after[close + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            segments.push(Segment::Literal(literal));
        }
        if !segments.iter().any(|s| matches!(s, Segment::Number { .. })) {
            return Err(ReferenceFormatError::MissingNumber);
        }
        Ok(Self {
            source: source.to_owned(),
            segments,
        })
    }

    /// The reference of fiscal `year` with the number left open: texts (literals and the
    /// year, run together) and where the number goes. For rendering the reference where the
    /// number is taken, in the database; [`ReferenceFormat::render`] renders them.
    pub fn parts(&self, year: i64) -> Vec<ReferencePart> {
        let mut parts: Vec<ReferencePart> = Vec::new();
        for s in &self.segments {
            let text = match s {
                Segment::Number { pad } => {
                    parts.push(ReferencePart::Number { pad: *pad });
                    continue;
                }
                Segment::Literal(l) => l.clone(),
                Segment::Year => year.to_string(),
            };
            match parts.last_mut() {
                Some(ReferencePart::Text(t)) => t.push_str(&text),
                _ => parts.push(ReferencePart::Text(text)),
            }
        }
        parts
    }

    /// Renders the reference of document `number` in fiscal `year`.
    pub fn render(&self, year: i64, number: i64) -> String {
        ReferencePart::render(&self.parts(year), number)
    }

    /// The format as the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl fmt::Display for ReferenceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_year_and_padded_number() {
        let f = ReferenceFormat::parse("INV-{year}-{number:5}").unwrap();
        assert_eq!(f.render(2026, 42), "INV-2026-00042");
        let f = ReferenceFormat::parse("{number}/{year}").unwrap();
        assert_eq!(f.render(2027, 1234567), "1234567/2027");
    }

    #[test]
    fn parts_keep_texts_together_and_pad_the_number_to_a_minimum() {
        let f = ReferenceFormat::parse("{year}-A{number:3}/{year}").unwrap();
        assert_eq!(
            f.parts(2026),
            vec![
                ReferencePart::Text("2026-A".into()),
                ReferencePart::Number { pad: 3 },
                ReferencePart::Text("/2026".into()),
            ]
        );
        let parts = f.parts(2026);
        for (n, expected) in [
            (1, "2026-A001/2026"),
            (999, "2026-A999/2026"),
            (1000, "2026-A1000/2026"),
            (123_456_789, "2026-A123456789/2026"),
        ] {
            assert_eq!(ReferencePart::render(&parts, n), expected);
        }
        let bare = ReferenceFormat::parse("{number}").unwrap();
        assert_eq!(bare.parts(2027), vec![ReferencePart::Number { pad: 0 }]);
    }

    #[test]
    fn rejects_formats_that_cannot_be_unique() {
        assert_eq!(
            ReferenceFormat::parse("INV-{year}"),
            Err(ReferenceFormatError::MissingNumber)
        );
        assert!(matches!(
            ReferenceFormat::parse("{nmber}"),
            Err(ReferenceFormatError::UnknownPlaceholder(_))
        ));
        assert_eq!(
            ReferenceFormat::parse("A{number"),
            Err(ReferenceFormatError::Unclosed)
        );
        assert_eq!(
            ReferenceFormat::parse("{number:40}"),
            Err(ReferenceFormatError::PaddingTooWide(40))
        );
        assert_eq!(
            ReferenceFormat::parse("  "),
            Err(ReferenceFormatError::Empty)
        );
    }
}
