//! A small XML writer: elements opened and closed in order, text and attribute values
//! escaped, characters XML 1.0 forbids dropped, and empty values never written (EN 16931's
//! syntaxes forbid empty elements).

/// Builds one XML document as a string.
pub struct Writer {
    out: String,
    open: Vec<&'static str>,
}

impl Writer {
    /// A document starting with the XML declaration.
    pub fn new() -> Self {
        let mut out = String::with_capacity(16 * 1024);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        Self {
            out,
            open: Vec::new(),
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.open.len() {
            self.out.push_str("  ");
        }
    }

    fn start(&mut self, tag: &str, attrs: &[(&str, &str)]) {
        self.indent();
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            escape_into(&mut self.out, value);
            self.out.push('"');
        }
        self.out.push('>');
    }

    /// Opens `tag` with attributes; [`Writer::close`] closes it.
    pub fn open_with(&mut self, tag: &'static str, attrs: &[(&str, &str)]) {
        self.start(tag, attrs);
        self.out.push('\n');
        self.open.push(tag);
    }

    /// Opens `tag`.
    pub fn open(&mut self, tag: &'static str) {
        self.open_with(tag, &[]);
    }

    /// Closes the innermost open element.
    pub fn close(&mut self) {
        if let Some(tag) = self.open.pop() {
            self.indent();
            self.out.push_str("</");
            self.out.push_str(tag);
            self.out.push_str(">\n");
        }
    }

    /// `<tag attrs>text</tag>`, unless `text` is blank (then nothing).
    pub fn leaf_with(&mut self, tag: &str, attrs: &[(&str, &str)], text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.start(tag, attrs);
        escape_into(&mut self.out, text);
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push_str(">\n");
    }

    /// `<tag>text</tag>`, unless `text` is blank.
    pub fn leaf(&mut self, tag: &str, text: &str) {
        self.leaf_with(tag, &[], text);
    }

    /// `<tag>text</tag>` when there is a text.
    pub fn opt(&mut self, tag: &str, text: Option<&str>) {
        if let Some(text) = text {
            self.leaf(tag, text);
        }
    }

    /// The document, every element closed.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

/// Appends `text` escaped for element content and attribute values; characters XML 1.0
/// does not allow are dropped.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            '\u{FFFE}' | '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
}

/// `s` cut to at most `max` characters (Facturae limits most texts).
pub fn cut(s: &str, max: usize) -> String {
    s.trim().chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_forbidden_characters() {
        let mut w = Writer::new();
        w.open_with("a", &[("x", "\"<&>'")]);
        w.leaf("b", "Fish & <Chips>\u{1}");
        w.leaf("c", "   ");
        let xml = w.finish();
        assert!(xml.contains("<a x=\"&quot;&lt;&amp;&gt;&apos;\">"), "{xml}");
        assert!(xml.contains("<b>Fish &amp; &lt;Chips&gt;</b>"), "{xml}");
        assert!(!xml.contains("<c>"), "{xml}");
        assert!(xml.trim_end().ends_with("</a>"), "{xml}");
    }
}
