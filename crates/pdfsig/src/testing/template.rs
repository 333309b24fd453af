//! A minimal one-page PDF with a signature field, to sign in tests.

/// Room for the CMS in `/Contents` (bytes; written as twice as many hex digits).
const CONTENTS_CAPACITY: usize = 16 * 1024;

/// A one-page PDF with an empty signature field: sign [`Template::signed_bytes`] and
/// [`Template::fill`] the signature in.
pub struct Template {
    bytes: Vec<u8>,
    /// Where the `<...>` of `/Contents` starts and ends (exclusive).
    gap: (usize, usize),
}

fn pdf_string(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii)
        .flat_map(|c| match c {
            '(' | ')' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

impl Template {
    pub fn new(text: &str) -> Self {
        let page = format!("BT /F1 12 Tf 72 770 Td ({}) Tj ET\n", pdf_string(text));
        let placeholder = format!("<{}>", "0".repeat(CONTENTS_CAPACITY * 2));
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [4 0 R] /SigFlags 3 >> >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 6 0 R /Resources << /Font << /F1 7 0 R >> >> /Annots [4 0 R] >>".to_owned(),
            "<< /Type /Annot /Subtype /Widget /FT /Sig /T (Signature1) /V 5 0 R /Rect [0 0 0 0] /F 132 /P 3 0 R >>".to_owned(),
            format!("<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /ETSI.CAdES.detached /ByteRange [0 ########## ########## ##########] /Contents {placeholder} /M (D:20250101000000Z) >>"),
            format!("<< /Length {} >>\nstream\n{page}endstream", page.len()),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
        ];
        let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
        }
        let xref = out.len();
        out.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
        );
        for o in offsets {
            out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
        }
        out.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        let find = |needle: &[u8]| out.windows(needle.len()).position(|w| w == needle).unwrap();
        let b = find(placeholder.as_bytes());
        let c = b + placeholder.len();
        let d = out.len() - c;
        let at = find(b"##########");
        let numbers = format!("{b:<10} {c:<10} {d:<10}");
        out[at..at + numbers.len()].copy_from_slice(numbers.as_bytes());
        Self {
            bytes: out,
            gap: (b, c),
        }
    }

    /// The bytes the signature covers: all but the `/Contents` hex string.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut v = self.bytes[..self.gap.0].to_vec();
        v.extend_from_slice(&self.bytes[self.gap.1..]);
        v
    }

    /// The PDF with `cms` in `/Contents` (zero-padded, as signers do).
    pub fn fill(&self, cms: &[u8]) -> Vec<u8> {
        assert!(
            cms.len() <= CONTENTS_CAPACITY,
            "CMS too large for the placeholder"
        );
        let hex: String = cms.iter().map(|b| format!("{b:02X}")).collect();
        let mut out = self.bytes.clone();
        out[self.gap.0 + 1..self.gap.0 + 1 + hex.len()].copy_from_slice(hex.as_bytes());
        out
    }
}
