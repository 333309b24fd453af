//! Renders in a child process: the child's half of the protocol.
//!
//! Typst cannot bound the memory of one thread, so Typst code a company wrote (its snippets)
//! could take every byte of the machine: `#range(1000000000)` asks for 16 GB. A server runs
//! such work in a child process under an address-space limit, killed at a deadline (the
//! `api` crate's `isolation` module). The child reads one [`Job`] as JSON on standard input
//! and answers through [`serve`]:
//!
//! | exit status | standard output |
//! |---|---|
//! | [`EXIT_OK`] | the PDF (nothing for a check) |
//! | [`EXIT_REFUSED`] | the [`RenderError`] as JSON (see [`decode_refusal`]) |
//! | [`EXIT_BAD_JOB`] | nothing; the job could not be read (a bug in the caller) |
//! | anything else, or a signal | the child ran out of memory or crashed |
//!
//! The child renders with the same code and limits as a render in process; it starts with
//! empty caches and exits after one job, so nothing of one company's render is left for the
//! next.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::{InvoiceDocument, RenderError, SnippetSlot};

/// The job was done: standard output holds its result.
pub const EXIT_OK: u8 = 0;
/// The job could not be read: a caller and child of different versions, or a bug.
pub const EXIT_BAD_JOB: u8 = 2;
/// The render failed with a [`RenderError`], written as JSON on standard output.
pub const EXIT_REFUSED: u8 = 3;

/// What a child is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// Check a company snippet before it is saved ([`crate::check_snippet_as`]).
    Check {
        /// The slot it will be used in.
        slot: SnippetSlot,
        /// The snippet as written.
        snippet: String,
    },
    /// Render a document ([`crate::render_invoice`]).
    Render(Box<InvoiceDocument>),
}

impl Job {
    /// Does the job here, in this process: the PDF, or nothing for a check.
    pub fn run(&self) -> Result<Vec<u8>, RenderError> {
        match self {
            Self::Check { slot, snippet } => {
                crate::check_snippet_as(*slot, snippet).map(|()| Vec::new())
            }
            Self::Render(doc) => crate::render_invoice(doc),
        }
    }
}

/// Gets a new child ready before its job arrives: loads the fonts, the standard library and
/// the templates, and renders the sample invoice once (its PDF is dropped), so the job pays
/// for a render in a warm process rather than a cold one. A server starts its next child
/// ahead of time, which runs this on a thread of its own while it waits for its job on
/// standard input.
pub fn prepare() {
    crate::warm_up();
    let _ = crate::render_invoice(&crate::sample_document());
}

/// The child's side: reads a [`Job`] from `input`, does it, writes the result to `output`,
/// and returns the exit status to end the process with (see the module's table).
pub fn serve(input: impl Read, mut output: impl Write) -> u8 {
    let job: Job = match serde_json::from_reader(input) {
        Ok(job) => job,
        Err(err) => {
            eprintln!("error: cannot read the render job from standard input: {err}");
            return EXIT_BAD_JOB;
        }
    };
    let (status, bytes) = match job.run() {
        Ok(pdf) => (EXIT_OK, pdf),
        Err(err) => match serde_json::to_vec(&err) {
            Ok(json) => (EXIT_REFUSED, json),
            Err(err) => {
                eprintln!("error: cannot write the render error: {err}");
                return EXIT_BAD_JOB;
            }
        },
    };
    match output.write_all(&bytes).and_then(|()| output.flush()) {
        Ok(()) => status,
        Err(err) => {
            eprintln!("error: cannot write the result to standard output: {err}");
            EXIT_BAD_JOB
        }
    }
}

/// The error a child wrote with [`EXIT_REFUSED`]; output that is not one is an internal error.
pub fn decode_refusal(stdout: &[u8]) -> RenderError {
    serde_json::from_slice(stdout).unwrap_or_else(|err| {
        RenderError::Internal(format!(
            "the render process answered something unreadable: {err}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(job: &Job) -> (u8, Vec<u8>) {
        let input = serde_json::to_vec(job).unwrap();
        let mut output = Vec::new();
        let status = serve(input.as_slice(), &mut output);
        (status, output)
    }

    #[test]
    fn a_document_comes_back_as_the_same_pdf_as_in_process() {
        let mut doc = crate::sample_document();
        doc.footer_typst = Some("Thank you, {{po}}.".into());
        let (status, pdf) = served(&Job::Render(Box::new(doc.clone())));
        assert_eq!(status, EXIT_OK);
        assert_eq!(pdf, crate::render_invoice(&doc).unwrap());
    }

    #[test]
    fn a_refused_snippet_comes_back_as_the_same_error() {
        let job = Job::Check {
            slot: SnippetSlot::Footer,
            snippet: "ok\n#let x = (\n".into(),
        };
        let (status, out) = served(&job);
        assert_eq!(status, EXIT_REFUSED);
        let err = decode_refusal(&out);
        assert_eq!(err, job.run().unwrap_err());
        assert!(matches!(
            err,
            RenderError::Snippet {
                slot: SnippetSlot::Footer,
                line: 2,
                ..
            }
        ));
        let good = Job::Check {
            slot: SnippetSlot::Post,
            snippet: "= Terms".into(),
        };
        assert_eq!(served(&good), (EXIT_OK, Vec::new()));
    }

    #[test]
    fn a_job_that_cannot_be_read_is_told_apart() {
        let mut output = Vec::new();
        assert_eq!(serve(&b"{\"render\": 1}"[..], &mut output), EXIT_BAD_JOB);
        assert!(output.is_empty());
        assert!(matches!(
            decode_refusal(b"garbage"),
            RenderError::Internal(_)
        ));
    }
}
