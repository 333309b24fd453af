//! Company snippets: placeholders as data, sandboxed files, bounded time, errors by line.

mod support;

use std::time::{Duration, Instant};

use render::*;
use support::*;

fn with_footer(snippet: &str) -> InvoiceDocument {
    let mut doc = invoice();
    doc.footer_typst = Some(snippet.into());
    doc
}

#[test]
fn snippets_render_in_the_footer_and_after_the_body() {
    let mut doc = with_footer("Registered in Madrid, tome 1, folio 2 · #emph[Thanks]");
    doc.post_typst = Some("= Terms\nPayment within *30 days*.".into());
    let pdf = render_invoice(&doc).unwrap_or_else(|err| panic!("{err}"));
    let text = squash(&pdf_text(&pdf));
    assert!(
        text.contains("Registered in Madrid, tome 1, folio 2 · Thanks"),
        "{text}"
    );
    assert!(text.contains("Terms Payment within 30 days."), "{text}");
}

#[test]
fn placeholder_values_are_inserted_as_text_never_as_code() {
    let mut doc =
        with_footer("PO: {{po}} | Project: #text(weight: \"bold\")[{{ project }}] | {{missing}}|");
    doc.placeholders.insert(
        "po".into(),
        r#"#read("/etc/passwd") *x* ] $y$ {{po}}"#.into(),
    );
    doc.placeholders
        .insert("project".into(), "\"); #panic(\"no\") //".into());
    doc.post_typst = Some("Ref {{po}}.".into());
    let pdf = render_invoice(&doc).unwrap_or_else(|err| panic!("{err}"));
    let text = squash(&pdf_text(&pdf));
    assert!(
        text.contains(
            r#"PO: #read("/etc/passwd") *x* ] $y$ {{po}} | Project: "); #panic("no") // | |"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"Ref #read("/etc/passwd") *x* ] $y$ {{po}}."#),
        "{text}"
    );
    assert!(!text.contains("root:"), "{text}");
}

#[test]
fn a_snippet_cannot_read_files() {
    for (snippet, what) in [
        (r#"#read("/etc/passwd")"#, "/etc/passwd"),
        (r#"#image("../../../etc/hostname")"#, "/etc/hostname"),
        (r#"#include "/proc/self/environ""#, "/proc/self/environ"),
        (r#"#import "@preview/cetz:0.3.0": canvas"#, "packages"),
        (r#"#plugin("/usr/lib/x.wasm")"#, "/usr/lib/x.wasm"),
    ] {
        let err = render_invoice(&with_footer(snippet)).unwrap_err();
        let RenderError::Snippet {
            slot: SnippetSlot::Footer,
            line: 1,
            ..
        } = &err
        else {
            panic!("{snippet}: unexpected {err:?}");
        };
        let message = err.to_string();
        assert!(message.contains(what), "{snippet}: {message}");
        assert!(!message.contains("root:"), "{message}");
        assert!(check_snippet(snippet).is_err(), "{snippet}");
    }
}

#[test]
fn a_syntax_error_names_its_line_in_the_snippet() {
    let snippet = "Line one is fine {{po}}\n#let = 5\nline three";
    let err = render_invoice(&with_footer(snippet)).unwrap_err();
    assert!(
        matches!(err, RenderError::Snippet { line: 2, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("footer snippet, line 2, column "),
        "{err}"
    );

    let err = check_snippet("ok\n#text(fill: nope)[x]").unwrap_err();
    assert!(
        matches!(&err, RenderError::Snippet { slot: SnippetSlot::Post, line: 2, column: 13, message } if message.contains("nope")),
        "{err:?}"
    );
}

#[test]
fn placeholder_mistakes_are_reported_where_they_are() {
    let err = check_snippet("a\nb {{PO}}").unwrap_err();
    assert!(
        matches!(
            err,
            RenderError::Snippet {
                line: 2,
                column: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let err = check_snippet("#let s = \"{{po}}\"").unwrap_err();
    assert!(err.to_string().contains("only in text"), "{err}");
}

#[test]
fn check_snippet_accepts_valid_snippets() {
    check_snippet("Terms: {{terms}} #pagebreak() More terms.").unwrap();
    check_snippet_as(
        SnippetSlot::Footer,
        "#set text(size: 6pt)\nIBAN {{iban}} · #link(\"https://example.com\")[web]",
    )
    .unwrap();
    check_snippet("").unwrap();
}

#[test]
fn big_snippets_are_refused() {
    let big = "x".repeat(MAX_SNIPPET_BYTES + 1);
    assert!(matches!(
        check_snippet(&big),
        Err(RenderError::SnippetTooLarge { .. })
    ));
}

#[test]
fn runaway_snippets_are_abandoned_at_the_deadline() {
    let doc = with_footer("#for i in range(1500) { for j in range(1500) { } }");
    let limits = Limits {
        timeout: Duration::from_millis(20),
    };
    let start = Instant::now();
    let err = render_invoice_with(&doc, &limits).unwrap_err();
    assert_eq!(err, RenderError::Timeout(limits.timeout));
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(err.to_string().contains("did not finish"), "{err}");

    let err = render_invoice(&with_footer("#let n = 1\n#while n > 0 { n += 1 }")).unwrap_err();
    assert!(err.to_string().contains("infinite"), "{err}");
    let err = render_invoice(&with_footer("#let f(x) = f(x)\n#f(1)")).unwrap_err();
    assert!(
        matches!(err, RenderError::Snippet { line: 1, .. }),
        "{err:?}"
    );
}
