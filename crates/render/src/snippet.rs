//! Company snippets: size cap, `{{key}}` placeholders, and error positions in the snippet as written.
//!
//! A snippet is Typst code written by the company (semi-trusted). It is compiled in the same
//! sandboxed world as the templates (`world.rs`), as its own file
//! (`/company/footer.typ` or `/company/post.typ`) that the template `include`s.
//!
//! A `{{key}}` token (key `[a-z][a-z0-9_]{0,39}`, spaces inside the braces allowed) is
//! replaced by the markup expression
//! `#json("/data.json").placeholders.at("key", default: "");`, which reads the value from the
//! document data at compile time. The value is therefore inserted as text, never parsed as
//! Typst, whatever it contains. A key with no value renders as nothing: placeholder
//! definitions are not snapshotted onto invoices, so an old invoice must still render after
//! a definition is added. Tokens are for markup (text, content blocks `[...]`); a token
//! inside a string, code, math, raw text or a comment is rejected with its position,
//! because there the replacement would not be evaluated as intended. A `{{...}}` whose inside
//! looks like a key but breaks the key syntax (`{{PO}}`, `{{1x}}`) is rejected too, so a typo
//! is not silently printed. Other double braces (`#{{let a = 1; a}}`) are left to Typst.
//!
//! Placeholders are the supported way for a snippet to show invoice data. A snippet can
//! read nothing but the embedded files (templates, `/data.json`, the QR image); `read`,
//! `image`, `include`, `plugin` and package imports of anything else fail with an error
//! naming the snippet line. It gets [`MAX_SNIPPET_BYTES`] and shares the render deadline
//! ([`crate::Limits`]); `datetime.today()` is the issue date.

use typst::syntax::{LinkedNode, Side, SyntaxKind};

use crate::error::{RenderError, SnippetSlot};

/// Largest snippet accepted, in bytes.
pub const MAX_SNIPPET_BYTES: usize = 16 * 1024;

/// Longest placeholder key (as in the `domain` crate).
const MAX_KEY: usize = 40;

/// A snippet ready to compile, remembering how to map positions back to what the company wrote.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    slot: SnippetSlot,
    original: String,
    /// The Typst source actually compiled.
    pub(crate) text: String,
    /// Replaced tokens: (start in `text`, length in `text`, start in original, length in original).
    edits: Vec<(usize, usize, usize, usize)>,
}

impl Prepared {
    /// Checks the size and placeholder tokens of a snippet and substitutes the tokens.
    pub(crate) fn new(slot: SnippetSlot, original: &str) -> Result<Self, RenderError> {
        if original.len() > MAX_SNIPPET_BYTES {
            return Err(RenderError::SnippetTooLarge {
                slot,
                len: original.len(),
                max: MAX_SNIPPET_BYTES,
            });
        }
        let mut prepared = Self {
            slot,
            original: original.to_owned(),
            text: String::with_capacity(original.len()),
            edits: Vec::new(),
        };
        let mut rest = 0;
        while let Some(found) = original[rest..].find("{{") {
            let start = rest + found;
            let Some((inner, len)) = token_at(&original[start..]) else {
                prepared.text.push_str(&original[rest..start + 1]);
                rest = start + 1;
                continue;
            };
            prepared.text.push_str(&original[rest..start]);
            if !valid_key(inner) {
                return Err(prepared.error_at_original(
                    start,
                    format!(
                        "invalid placeholder `{{{{{inner}}}}}`: keys are 1-{MAX_KEY} characters \
                         a-z, 0-9 and _, starting with a letter"
                    ),
                ));
            }
            let replacement =
                format!("#json(\"/data.json\").placeholders.at(\"{inner}\", default: \"\");");
            let at = prepared.text.len();
            prepared.edits.push((at, replacement.len(), start, len));
            prepared.text.push_str(&replacement);
            rest = start + len;
        }
        prepared.text.push_str(&original[rest..]);
        prepared.check_token_contexts()?;
        Ok(prepared)
    }

    /// Rejects tokens written outside markup text, where their replacement would not run.
    ///
    /// Judged on the snippet as written: a token inside a string, say, must not be replaced
    /// by an expression whose quotes would end that string.
    fn check_token_contexts(&self) -> Result<(), RenderError> {
        if self.edits.is_empty() {
            return Ok(());
        }
        let root = typst::syntax::parse(&self.original);
        if root.diagnosis().errors {
            // The compiler reports the syntax error itself, with its position.
            return Ok(());
        }
        let linked = LinkedNode::new(&root);
        for &(_, _, original_at, original_len) in &self.edits {
            let in_text = linked
                .leaf_at(original_at, Side::After)
                .is_some_and(|leaf| {
                    leaf.kind() == SyntaxKind::Text
                        && leaf.parent_kind() == Some(SyntaxKind::Markup)
                });
            if !in_text {
                let token = &self.original[original_at..original_at + original_len];
                return Err(self.error_at_original(
                    original_at,
                    format!(
                        "placeholder `{token}` is inside code, a string, math, raw text or a \
                         comment; placeholders work only in text, e.g. `#text(size: 8pt)[PO {token}]`"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An error at a byte offset of the compiled text, positioned in the original snippet.
    pub(crate) fn error_at(&self, offset: usize, message: String) -> RenderError {
        self.error_at_original(self.to_original(offset), message)
    }

    fn error_at_original(&self, offset: usize, message: String) -> RenderError {
        let (line, column) = line_column(&self.original, offset);
        RenderError::Snippet {
            slot: self.slot,
            line,
            column,
            message,
        }
    }

    /// Maps a byte offset in the compiled text to one in the original snippet.
    fn to_original(&self, offset: usize) -> usize {
        let mut shift: isize = 0;
        for &(at, len, original_at, original_len) in &self.edits {
            if offset < at {
                break;
            }
            if offset < at + len {
                return original_at;
            }
            shift += original_len as isize - len as isize;
        }
        offset.saturating_add_signed(shift).min(self.original.len())
    }
}

/// Reads a `{{ key }}`-shaped token at the start of `s`: its trimmed inside and full length.
///
/// Only insides made of `[A-Za-z0-9_-]` count; anything else (`{{ {} }}`, nested code) is
/// left to Typst.
fn token_at(s: &str) -> Option<(&str, usize)> {
    let body = s.strip_prefix("{{")?;
    let end = body.find("}}")?;
    let inner = body[..end].trim_matches(' ');
    let looks_like_key = !inner.is_empty()
        && inner.len() <= 2 * MAX_KEY
        && inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    looks_like_key.then_some((inner, end + 4))
}

/// `[a-z][a-z0-9_]{0,39}`: a key can never break out of the string literal it is put in.
pub(crate) fn valid_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    key.len() <= MAX_KEY
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// 1-based line and character column of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(s: &str) -> Result<Prepared, RenderError> {
        Prepared::new(SnippetSlot::Footer, s)
    }

    #[test]
    fn tokens_become_data_lookups() {
        let p = prepare("PO {{po}} / {{ project_2 }}.").unwrap();
        assert_eq!(
            p.text,
            "PO #json(\"/data.json\").placeholders.at(\"po\", default: \"\"); / \
             #json(\"/data.json\").placeholders.at(\"project_2\", default: \"\");."
        );
        assert_eq!(
            p.to_original(p.text.len() - 1),
            "PO {{po}} / {{ project_2 }}".len()
        );
    }

    #[test]
    fn code_braces_are_left_alone() {
        let p = prepare("#{ {1} }").unwrap();
        assert_eq!(p.text, "#{ {1} }");
        let p = prepare("#{{let a = 1; a}}").unwrap();
        assert_eq!(p.text, "#{{let a = 1; a}}");
    }

    #[test]
    fn bad_keys_and_bad_places_are_rejected_with_their_line() {
        let err = prepare("ok\nPO {{PO}}").unwrap_err();
        assert!(
            matches!(
                err,
                RenderError::Snippet {
                    line: 2,
                    column: 4,
                    ..
                }
            ),
            "{err}"
        );
        let err = prepare("line\n#let x = \"{{po}}\"").unwrap_err();
        assert!(
            matches!(
                err,
                RenderError::Snippet {
                    line: 2,
                    column: 11,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("only in text"), "{err}");
        let too_big = "x".repeat(MAX_SNIPPET_BYTES + 1);
        assert!(matches!(
            prepare(&too_big),
            Err(RenderError::SnippetTooLarge { .. })
        ));
    }

    #[test]
    fn positions_are_one_based_characters() {
        assert_eq!(line_column("ab\ncé\nx", 7), (3, 1));
        assert_eq!(line_column("ab\ncéd", 6), (2, 3));
        assert_eq!(line_column("", 0), (1, 1));
    }
}
