//! User text is data: whatever it contains is printed literally and never runs.

mod support;

use render::*;
use support::*;

const HOSTILE: [&str; 8] = [
    r#"#read("/etc/passwd")"#,
    "] *bold* _under_ $x^2$ <lbl> @ref #",
    "{{po}} and {{ po }}",
    r#"#panic("boom") \u{41} `raw` // not a comment"#,
    r#"#import "@preview/cetz:0.3.0": *"#,
    "= Heading? - list? + enum? / term: x",
    "\")] #{ } [ #let x = 1",
    "http://example.com/a_b_c",
];

#[test]
fn hostile_text_renders_literally_everywhere() {
    let mut doc = invoice();
    doc.lines = HOSTILE
        .iter()
        .map(|concept| line(concept, "1", Some("*u*"), 100))
        .collect();
    doc.issuer.name = r#"#read("/etc/hostname") Evil ] Corp"#.into();
    doc.recipient.address_lines = vec!["$ math $ #exec".into()];
    doc.notes = Some("Note with #strong[markup] and {{po}}".into());
    doc.reference = Some("#F-1]".into());
    doc.bank_accounts[0].name = "*acct* #x".into();
    doc.tax_breakdown[0].legal_mention = Some("Art. 20 #sys.inputs".into());
    doc.placeholders
        .insert("po".into(), "SHOULD-NOT-APPEAR".into());

    let pdf = render_invoice(&doc).unwrap_or_else(|err| panic!("{err}"));
    dump("hostile", &pdf);
    let text = squash(&pdf_text(&pdf));
    for hostile in HOSTILE {
        assert!(
            text.contains(&squash(hostile)),
            "missing {hostile:?} in:\n{text}"
        );
    }
    for expected in [
        r#"#read("/etc/hostname") Evil ] Corp"#,
        "$ math $ #exec",
        "Note with #strong[markup] and {{po}}",
        "#F-1]",
        "*acct* #x",
        "Art. 20 #sys.inputs",
        "1 *u*",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("root:"), "/etc/passwd leaked:\n{text}");
    assert!(
        !text.contains("SHOULD-NOT-APPEAR"),
        "placeholders outside snippets:\n{text}"
    );
}

#[test]
fn very_long_words_are_broken_inside_the_page() {
    let word = "Supercalifragilistic".repeat(15);
    let mut doc = invoice();
    doc.lines[0].concept = format!("Start {word} end");
    doc.recipient.name = "W".repeat(120);
    // A unit this long would make its number column wider than the page.
    let unit = "Kilowatthoursperannum".repeat(4);
    doc.lines[1].unit = Some(unit.clone());
    let pdf = render_invoice(&doc).unwrap();
    dump("long-words", &pdf);
    let text = pdf_text(&pdf);
    // Broken over several lines, the word's pieces still all reach the text layer.
    let letters: String = text.chars().filter(|c| c.is_alphabetic()).collect();
    assert!(letters.contains(&word), "the long word is cut:\n{text}");
    assert!(
        letters.contains(&"W".repeat(120)),
        "the long name is cut:\n{text}"
    );
    assert!(letters.contains(&unit), "the long unit is cut:\n{text}");
    assert!(
        text.contains("1,000.00"),
        "the amount column is pushed out:\n{text}"
    );
}

#[test]
fn non_latin_scripts_render_with_embedded_fonts_only() {
    let mut doc = invoice();
    doc.lines[0].concept = "Ελληνικά Русский".into();
    doc.lines[1].concept = "עברית العربية 中文發票 日本語 한국어".into();
    let pdf = render_invoice(&doc).unwrap();
    dump("scripts", &pdf);
    let fonts = fonts(&pdf);
    assert!(fonts.iter().all(|(_, embedded)| *embedded), "{fonts:?}");
    // The embedded fonts (Libertinus Serif, New Computer Modern, DejaVu Sans Mono) cover
    // Latin, Greek, Cyrillic, Hebrew and Arabic. CJK and Hangul have no embedded glyphs:
    // they are drawn as empty boxes, never fetched from the system.
    let text = squash(&pdf_text(&pdf));
    for covered in ["Ελληνικά Русский", "עברית", "العربية"] {
        assert!(text.contains(covered), "missing {covered:?} in:\n{text}");
    }
}
