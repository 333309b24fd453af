//! Why a render failed; every message names where, so a person can fix it.

use std::fmt;
use std::time::Duration;

/// Which company snippet an error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnippetSlot {
    /// `footerInvoiceTypst`: shown in the footer of every page.
    Footer,
    /// `postInvoiceTypst`: appended after the invoice body.
    Post,
}

impl fmt::Display for SnippetSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Footer => "footer snippet",
            Self::Post => "post-invoice snippet",
        })
    }
}

/// A render failure (serializable: a render in a child process sends it back as JSON).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderError {
    /// The document data is malformed (a quantity that is not a decimal, too many currency digits...).
    #[error("invalid invoice data: {0}")]
    InvalidInput(String),
    /// A company snippet exceeds the size limit.
    #[error("{slot} is {len} bytes long; at most {max} bytes are allowed")]
    SnippetTooLarge {
        /// Which snippet.
        slot: SnippetSlot,
        /// Its size in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A company snippet does not compile; `line` and `column` are 1-based, within the snippet as written.
    #[error("{slot}, line {line}, column {column}: {message}")]
    Snippet {
        /// Which snippet.
        slot: SnippetSlot,
        /// 1-based line within the snippet.
        line: usize,
        /// 1-based column (in characters) within the line.
        column: usize,
        /// What Typst said, with its hints.
        message: String,
    },
    /// The built-in template failed (a bug here, or an error without a position).
    #[error("template {file}{}: {message}", position(*line, *column))]
    Template {
        /// The template file, e.g. `/templates/common.typ`.
        file: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What Typst said, with its hints.
        message: String,
    },
    /// Compilation did not finish in time and was abandoned.
    #[error("rendering did not finish within {0:?}; simplify the company snippets")]
    Timeout(Duration),
    /// Too many abandoned renders are still running; try again later.
    #[error("the renderer is busy finishing {0} abandoned renders; try again later")]
    Busy(usize),
    /// A render in a child process used more memory than it may, or crashed the Typst
    /// compiler (see [`crate::isolated`]): what company snippets that explode get.
    #[error(
        "rendering used more than the {limit_mib} MiB of memory it may use, or crashed the \
         Typst compiler; simplify the company snippets"
    )]
    Exhausted {
        /// The memory limit of the child process, in MiB.
        limit_mib: u64,
    },
    /// Writing the PDF failed.
    #[error("PDF export failed: {0}")]
    Export(String),
    /// The Factur-X PDF (PDF/A-3b) cannot be written: something in the document is what
    /// PDF/A forbids, in a company snippet (`slot`, the message names its line) or in the
    /// invoice's data (a character no embedded font has).
    #[error(
        "the invoice cannot be written as PDF/A-3b (the Factur-X PDF): {message}; PDF/A needs \
         every character in an embedded font and forbids private-use characters, PDF images, \
         CMYK colours and conic gradients"
    )]
    PdfA {
        /// The snippet that is why, if one is.
        slot: Option<SnippetSlot>,
        /// What Typst said, with where.
        message: String,
    },
    /// The renderer crashed (a panic inside Typst).
    #[error("the renderer crashed: {0}")]
    Internal(String),
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(", line {line}, column {column}"),
        (Some(line), None) => format!(", line {line}"),
        _ => String::new(),
    }
}
