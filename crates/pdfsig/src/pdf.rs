//! Finding the signature in a PDF: the `/ByteRange` of a signature dictionary and the
//! `/Contents` hex string it leaves out.
//!
//! The rule is strict on purpose: the signed ranges must start at byte 0 and end at the end
//! of the file, and the only bytes left out must be the `/Contents` hex string itself. So
//! every byte of the file but the signature is signed: nothing can be appended after
//! signing (an incremental update that changes what is shown), and nothing can be hidden
//! in the gap.

use crate::Refusal;

/// At most this many `/ByteRange` entries are looked at, so a hostile file cannot make the
/// search quadratic.
const MAX_SIGNATURES: usize = 64;

/// Where the signature is, in a PDF whose whole content it covers.
#[derive(Debug)]
pub(crate) struct Located {
    /// The two signed ranges, `[start, end)`: `[0, gap start)` and `[gap end, file length)`.
    pub ranges: [(usize, usize); 2],
    /// The bytes of `/Contents` (the CMS structure, possibly followed by zero padding).
    pub contents: Vec<u8>,
}

impl Located {
    /// The signed bytes, in order.
    pub fn signed<'a>(&self, pdf: &'a [u8]) -> [&'a [u8]; 2] {
        let [(a, b), (c, d)] = self.ranges;
        [&pdf[a..b], &pdf[c..d]]
    }
}

fn find_all<'a>(haystack: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(i, _)| i)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

/// The four numbers of `/ByteRange [a b c d]` starting at `at` (just after the key).
fn parse_byte_range(pdf: &[u8], at: usize) -> Option<[usize; 4]> {
    let mut i = at;
    let skip = |i: &mut usize| {
        while pdf.get(*i).is_some_and(|b| is_space(*b)) {
            *i += 1;
        }
    };
    skip(&mut i);
    if pdf.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    let mut out = [0usize; 4];
    for slot in &mut out {
        skip(&mut i);
        let start = i;
        while pdf.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        // Ten digits cover any file this service accepts; more is not a real offset.
        if i == start || i - start > 10 {
            return None;
        }
        *slot = std::str::from_utf8(&pdf[start..i]).ok()?.parse().ok()?;
    }
    skip(&mut i);
    (pdf.get(i) == Some(&b']')).then_some(out)
}

/// Whether `[a b c d]` covers the whole file but one `/Contents <...>` gap (cheap checks:
/// the bounds and the delimiters); the gap.
fn covering(pdf: &[u8], [a, b, c, d]: [usize; 4]) -> Result<(usize, usize), String> {
    let len = pdf.len();
    if a != 0 {
        return Err(format!(
            "the signed bytes start at byte {a}, not at the beginning"
        ));
    }
    let end = c.checked_add(d).filter(|e| *e <= len && b < c);
    let Some(end) = end else {
        return Err("its byte ranges point outside the file".into());
    };
    if end < len {
        return Err(format!(
            "the last {} bytes were added after signing",
            len - end
        ));
    }
    let mut key_end = b;
    while key_end > 0 && is_space(pdf[key_end - 1]) {
        key_end -= 1;
    }
    if c - b < 2 || pdf[b] != b'<' || pdf[c - 1] != b'>' || !pdf[..key_end].ends_with(b"/Contents")
    {
        return Err(not_only_contents(b, c));
    }
    Ok((b, c))
}

fn not_only_contents(b: usize, c: usize) -> String {
    format!(
        "the {} unsigned bytes are not exactly the /Contents signature value",
        c - b
    )
}

fn unhex(hex: &[u8]) -> Result<Vec<u8>, Refusal> {
    let digits: Vec<u8> = hex
        .iter()
        .filter(|b| !is_space(**b))
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        })
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err(Refusal::Malformed(
            "its /Contents is not a whole number of bytes".into(),
        ));
    }
    Ok(digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

/// Finds the signature that covers the whole file.
pub(crate) fn locate(pdf: &[u8]) -> Result<Located, Refusal> {
    if !pdf.starts_with(b"%PDF-") || find_all(pdf, b"%%EOF").next().is_none() {
        return Err(Refusal::NotPdf);
    }
    let mut last_reason = None;
    // Gaps of the ranges that cover the file; scanning a gap is linear, so each one is
    // scanned once, and a file where several different ones claim the whole file is refused.
    let mut gaps: Vec<(usize, usize)> = Vec::new();
    for (n, at) in find_all(pdf, b"/ByteRange").enumerate() {
        if n == MAX_SIGNATURES {
            return Err(Refusal::Malformed(format!(
                "the file has more than {MAX_SIGNATURES} signature byte ranges"
            )));
        }
        let Some(range) = parse_byte_range(pdf, at + b"/ByteRange".len()) else {
            last_reason = Some("its /ByteRange is not four numbers".to_owned());
            continue;
        };
        match covering(pdf, range) {
            Ok(gap) if !gaps.contains(&gap) => gaps.push(gap),
            Ok(_) => {}
            Err(reason) => last_reason = Some(reason),
        }
    }
    let (b, c) = match gaps.as_slice() {
        [] => {
            return Err(match last_reason {
                None => Refusal::NoSignature,
                Some(reason) => Refusal::RangesDoNotCoverFile(reason),
            });
        }
        [gap] => *gap,
        _ => {
            return Err(Refusal::Malformed(
                "several signatures claim to cover the whole file".into(),
            ));
        }
    };
    // The gap must be one hex string: nothing unsigned may hide in it.
    let hex = &pdf[b + 1..c - 1];
    if !hex.iter().all(|x| x.is_ascii_hexdigit() || is_space(*x)) {
        return Err(Refusal::RangesDoNotCoverFile(not_only_contents(b, c)));
    }
    Ok(Located {
        ranges: [(0, b), (c, pdf.len())],
        contents: unhex(hex)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PDF with one signature dictionary whose ranges are computed for `contents`.
    fn pdf(contents: &str, tail: &str) -> Vec<u8> {
        let head = "%PDF-1.7\n1 0 obj << /Type /Sig /ByteRange [0 AAAAAAAAAA BBBBBBBBBB CCCCCCCCCC] /Contents ";
        let after = format!(" >> endobj\n%%EOF\n{tail}");
        let b = head.len();
        let c = b + contents.len();
        let d = after.len();
        let head = head
            .replacen("AAAAAAAAAA", &format!("{b:<10}"), 1)
            .replacen("BBBBBBBBBB", &format!("{c:<10}"), 1)
            .replacen("CCCCCCCCCC", &format!("{d:<10}"), 1);
        format!("{head}{contents}{after}").into_bytes()
    }

    #[test]
    fn finds_the_gap_and_decodes_the_hex() {
        let file = pdf("<30 0A\n00>", "");
        let found = locate(&file).unwrap();
        assert_eq!(found.contents, [0x30, 0x0a, 0x00]);
        let [first, second] = found.signed(&file);
        assert!(first.ends_with(b"/Contents ") && second.starts_with(b" >>"));
        assert_eq!(first.len() + second.len() + "<30 0A\n00>".len(), file.len());
    }

    #[test]
    fn refuses_what_is_not_covered() {
        assert_eq!(locate(b"hello %%EOF").unwrap_err(), Refusal::NotPdf);
        assert_eq!(
            locate(b"%PDF-1.7\n/Sig /Contents <00>\n%%EOF").unwrap_err(),
            Refusal::NoSignature
        );
        // Bytes appended after the signed part (an incremental update).
        let mut appended = pdf("<3000>", "");
        appended.extend_from_slice(b"2 0 obj << >> endobj\n%%EOF\n");
        let err = locate(&appended).unwrap_err();
        assert!(
            matches!(&err, Refusal::RangesDoNotCoverFile(r) if r.contains("27 bytes were added")),
            "{err:?}"
        );
        // The gap holds more than the hex string.
        let file = pdf("<3000> /Evil (x)", "");
        assert!(matches!(
            locate(&file).unwrap_err(),
            Refusal::RangesDoNotCoverFile(r) if r.contains("not exactly the /Contents")
        ));
        // Ranges that do not start at 0, or point outside.
        let text = String::from_utf8(pdf("<3000>", "")).unwrap();
        let shifted = text.replacen("[0 ", "[1 ", 1).into_bytes();
        assert!(
            matches!(locate(&shifted).unwrap_err(), Refusal::RangesDoNotCoverFile(r) if r.contains("start at byte 1"))
        );
        let broken = "%PDF-1.7 /ByteRange [0 5 3 999999] /Contents <00> %%EOF";
        assert!(
            matches!(locate(broken.as_bytes()).unwrap_err(), Refusal::RangesDoNotCoverFile(r) if r.contains("outside"))
        );
        let odd = pdf("<300>", "");
        assert!(matches!(locate(&odd).unwrap_err(), Refusal::Malformed(_)));
    }

    #[test]
    fn two_different_gaps_claiming_the_whole_file_are_refused() {
        let template = "%PDF-1.7 /ByteRange [0 B1________ C1________ D1________] /Contents <00> \
                        /ByteRange [0 B2________ C2________ D2________] /Contents <0000> %%EOF";
        let gaps: Vec<(usize, usize)> = ["<00>", "<0000>"]
            .iter()
            .map(|g| {
                let b = template.find(g).unwrap();
                (b, b + g.len())
            })
            .collect();
        let mut text = template.to_owned();
        for (i, (b, c)) in gaps.iter().enumerate() {
            for (key, value) in [("B", *b), ("C", *c), ("D", template.len() - c)] {
                let placeholder = format!("{key}{}________", i + 1);
                text = text.replacen(&placeholder, &format!("{value:<10}"), 1);
            }
        }
        assert_eq!(text.len(), template.len());
        assert!(matches!(
            locate(text.as_bytes()).unwrap_err(),
            Refusal::Malformed(m) if m.contains("several signatures")
        ));
    }
}
