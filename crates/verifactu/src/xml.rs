//! A small XML writer: escaped text, fixed prefixes, two-space indentation.

/// Namespace of `SuministroLR.xsd` (prefix `sum` in the AEAT examples).
pub const NS_SUMINISTRO_LR: &str = "https://www2.agenciatributaria.gob.es/static_files/common/internet/dep/aplicaciones/es/aeat/tike/cont/ws/SuministroLR.xsd";
/// Namespace of `SuministroInformacion.xsd` (prefix `sum1` in the AEAT examples).
pub const NS_SUMINISTRO_INFORMACION: &str = "https://www2.agenciatributaria.gob.es/static_files/common/internet/dep/aplicaciones/es/aeat/tike/cont/ws/SuministroInformacion.xsd";
/// Namespace of `RespuestaSuministro.xsd`.
pub const NS_RESPUESTA_SUMINISTRO: &str = "https://www2.agenciatributaria.gob.es/static_files/common/internet/dep/aplicaciones/es/aeat/tike/cont/ws/RespuestaSuministro.xsd";
/// SOAP 1.1 envelope namespace.
pub const NS_SOAP_ENVELOPE: &str = "http://schemas.xmlsoap.org/soap/envelope/";

/// Appends `text` with `&`, `<` and `>` escaped (section 6.9 of the AEAT web
/// service description), and carriage returns as `&#xD;` so that XML line-end
/// normalisation does not change them.
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            _ => out.push(c),
        }
    }
}

/// Writes elements in document order. Callers pass qualified names
/// (`sum1:NIF`); text is escaped here.
pub(crate) struct XmlWriter {
    out: String,
    depth: usize,
}

impl XmlWriter {
    /// Starts a document with the XML declaration.
    pub(crate) fn new() -> Self {
        let mut out = String::with_capacity(4096);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        Self { out, depth: 0 }
    }

    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
    }

    /// Opens an element with namespace declarations (`(prefix, uri)`).
    pub(crate) fn open_with_ns(&mut self, name: &str, namespaces: &[(&str, &str)]) {
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        for (prefix, uri) in namespaces {
            self.out.push_str(" xmlns:");
            self.out.push_str(prefix);
            self.out.push_str("=\"");
            escape_into(&mut self.out, uri);
            self.out.push('"');
        }
        self.out.push_str(">\n");
        self.depth += 1;
    }

    /// Opens an element.
    pub(crate) fn open(&mut self, name: &str) {
        self.open_with_ns(name, &[]);
    }

    /// Closes an element opened with [`XmlWriter::open`].
    pub(crate) fn close(&mut self, name: &str) {
        self.depth = self.depth.saturating_sub(1);
        self.indent();
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push_str(">\n");
    }

    /// Writes `<name>text</name>`.
    pub(crate) fn leaf(&mut self, name: &str, text: &str) {
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        self.out.push('>');
        escape_into(&mut self.out, text);
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push_str(">\n");
    }

    /// Writes the element only when there is a value.
    pub(crate) fn leaf_opt(&mut self, name: &str, text: Option<&str>) {
        if let Some(t) = text {
            self.leaf(name, t);
        }
    }

    /// Writes an empty element `<name/>`.
    pub(crate) fn empty(&mut self, name: &str) {
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        self.out.push_str("/>\n");
    }

    /// The document.
    pub(crate) fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        let mut s = String::new();
        escape_into(&mut s, "A&B <x> \"q\" 'a'\r\n");
        assert_eq!(s, "A&amp;B &lt;x&gt; \"q\" 'a'&#xD;\n");
    }

    #[test]
    fn writes_nested_elements() {
        let mut w = XmlWriter::new();
        w.open_with_ns("a:Root", &[("a", "urn:a")]);
        w.leaf("a:X", "1 < 2");
        w.leaf_opt("a:Y", None);
        w.empty("a:Z");
        w.close("a:Root");
        assert_eq!(
            w.finish(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a:Root xmlns:a=\"urn:a\">\n  <a:X>1 &lt; 2</a:X>\n  <a:Z/>\n</a:Root>\n"
        );
    }
}
