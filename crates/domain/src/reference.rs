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
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Year,
    Number { pad: u32 },
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

    /// Renders the reference of document `number` in fiscal `year`.
    pub fn render(&self, year: i64, number: i64) -> String {
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Literal(l) => out.push_str(l),
                Segment::Year => out.push_str(&year.to_string()),
                Segment::Number { pad } => {
                    out.push_str(&format!("{number:0width$}", width = *pad as usize))
                }
            }
        }
        out
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
