//! What turns a PDF/A-3 with `factur-x.xml` attached into a Factur-X invoice: the Factur-X
//! XMP properties and their PDF/A extension-schema declaration.
//!
//! Typst 0.15 writes PDF/A-3b, attaches the XML (`pdf.attach` with `relationship: "data"`,
//! `mime-type: "text/xml"`: catalog `/AF`, `/AFRelationship`, `/F`, `/UF`, `/Params
//! /ModDate`) and embeds every font, but writes its XMP itself, without a way to add
//! properties. [`add_xmp`] appends an incremental update (allowed by PDF/A) that replaces
//! the document's XMP stream with the same XMP plus the `fx:` properties, so the first
//! revision stays byte for byte what Typst wrote and the result is as deterministic as it.
//! Pure bytes in, bytes out: no I/O.

/// The Factur-X XMP namespace.
pub const FX_NS: &str = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#";

/// Why the Factur-X XMP could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the PDF cannot be made a Factur-X invoice: {0}")]
pub struct XmpError(String);

fn err(what: &str) -> XmpError {
    XmpError(what.to_owned())
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn number_after(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut i = at;
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    let start = i;
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let text = std::str::from_utf8(bytes.get(start..i)?).ok()?;
    Some((text.parse().ok()?, i))
}

/// The value of `/Key N 0 R` (or `/Key N`) in a dictionary's text.
fn key_number(dict: &[u8], key: &[u8]) -> Option<u64> {
    let mut from = 0;
    while let Some(at) = find(dict, key, from) {
        let end = at + key.len();
        // `/Root` must not match `/RootX`.
        if dict
            .get(end)
            .is_some_and(|b| b.is_ascii_whitespace() || b.is_ascii_digit())
        {
            return number_after(dict, end).map(|(n, _)| n);
        }
        from = end;
    }
    None
}

/// The last cross-reference section: its offset and its trailer dictionary's text.
fn last_section(pdf: &[u8]) -> Result<(usize, &[u8]), XmpError> {
    let at = rfind(pdf, b"startxref").ok_or_else(|| err("no startxref"))?;
    let (offset, _) =
        number_after(pdf, at + b"startxref".len()).ok_or_else(|| err("startxref has no offset"))?;
    let offset = usize::try_from(offset).map_err(|_| err("startxref out of range"))?;
    if pdf.get(offset..offset.saturating_add(4)) != Some(b"xref") {
        return Err(err(
            "the cross-reference is a stream (only xref tables are supported)",
        ));
    }
    let trailer = find(pdf, b"trailer", offset).ok_or_else(|| err("no trailer"))?;
    let open = find(pdf, b"<<", trailer).ok_or_else(|| err("no trailer dictionary"))?;
    let close = rfind(&pdf[..at], b">>").ok_or_else(|| err("no trailer dictionary end"))?;
    if close < open + 2 {
        return Err(err("a malformed trailer"));
    }
    Ok((offset, &pdf[open + 2..close]))
}

/// The byte offset of object `num`, from the newest cross-reference section that has it.
fn object_offset(pdf: &[u8], num: u64) -> Result<usize, XmpError> {
    let (mut section, mut trailer) = last_section(pdf)?;
    for _ in 0..64 {
        let mut i = section + 4;
        while let Some((start, next)) = number_after(pdf, i) {
            let (count, next) =
                number_after(pdf, next).ok_or_else(|| err("a malformed xref subsection"))?;
            let mut entry = next;
            while pdf.get(entry).is_some_and(|b| b.is_ascii_whitespace()) {
                entry += 1;
            }
            if num >= start && num - start < count {
                let at = (num - start)
                    .checked_mul(20)
                    .and_then(|d| usize::try_from(d).ok())
                    .and_then(|d| d.checked_add(entry))
                    .ok_or_else(|| err("an xref entry out of range"))?;
                let line = pdf
                    .get(at..at + 18)
                    .ok_or_else(|| err("a short xref entry"))?;
                if line.get(17) != Some(&b'n') {
                    return Err(err("the metadata object is not in use"));
                }
                let (offset, _) = number_after(line, 0).ok_or_else(|| err("an xref entry"))?;
                return usize::try_from(offset).map_err(|_| err("an xref offset"));
            }
            i = count
                .checked_mul(20)
                .and_then(|d| usize::try_from(d).ok())
                .and_then(|d| d.checked_add(entry))
                .ok_or_else(|| err("an xref subsection out of range"))?;
        }
        let prev = key_number(trailer, b"/Prev").ok_or_else(|| err("object not found"))?;
        section = usize::try_from(prev).map_err(|_| err("a /Prev offset"))?;
        if pdf.get(section..section.saturating_add(4)) != Some(b"xref") {
            return Err(err("a /Prev that is not an xref table"));
        }
        let t = find(pdf, b"trailer", section).ok_or_else(|| err("no trailer"))?;
        let open = find(pdf, b"<<", t).ok_or_else(|| err("no trailer dictionary"))?;
        let close = find(pdf, b"startxref", open)
            .and_then(|s| rfind(&pdf[..s], b">>"))
            .ok_or_else(|| err("no trailer end"))?;
        trailer = pdf
            .get(open + 2..close)
            .ok_or_else(|| err("a malformed trailer"))?;
    }
    Err(err("too many revisions"))
}

/// The text of the dictionary of the object at `offset` (up to `stream` or `endobj`).
fn object_dict(pdf: &[u8], offset: usize) -> Result<&[u8], XmpError> {
    let end = find(pdf, b"endobj", offset).ok_or_else(|| err("an object without endobj"))?;
    let body = &pdf[offset..end];
    let stop = find(body, b"stream", 0).unwrap_or(body.len());
    Ok(&body[..stop])
}

fn property_list() -> String {
    [
        ("DocumentFileName", "The name of the embedded XML document"),
        ("DocumentType", "The type of the hybrid document: INVOICE"),
        ("Version", "The version of the Factur-X XML schema"),
        (
            "ConformanceLevel",
            "The conformance level of the embedded XML",
        ),
    ]
    .iter()
    .map(|(name, description)| {
        format!(
            "<rdf:li rdf:parseType=\"Resource\"><pdfaProperty:name>{name}</pdfaProperty:name>\
             <pdfaProperty:valueType>Text</pdfaProperty:valueType>\
             <pdfaProperty:category>external</pdfaProperty:category>\
             <pdfaProperty:description>{description}</pdfaProperty:description></rdf:li>"
        )
    })
    .collect()
}

/// The XMP `xmp` with the Factur-X properties (`factur-x.xml`, INVOICE, 1.0, EN 16931) and
/// their extension schema.
fn with_fx(xmp: &str) -> Result<String, XmpError> {
    let schema = format!(
        "<rdf:li rdf:parseType=\"Resource\"><pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>\
         <pdfaSchema:namespaceURI>{FX_NS}</pdfaSchema:namespaceURI><pdfaSchema:prefix>fx</pdfaSchema:prefix>\
         <pdfaSchema:property><rdf:Seq>{}</rdf:Seq></pdfaSchema:property></rdf:li>",
        property_list()
    );
    let fx = format!(
        "<rdf:Description xmlns:fx=\"{FX_NS}\" rdf:about=\"\">\
         <fx:DocumentType>INVOICE</fx:DocumentType>\
         <fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>\
         <fx:Version>1.0</fx:Version>\
         <fx:ConformanceLevel>EN 16931</fx:ConformanceLevel></rdf:Description>"
    );
    let rdf_end = xmp
        .rfind("</rdf:RDF>")
        .ok_or_else(|| err("the XMP has no rdf:RDF"))?;
    let mut out = String::with_capacity(xmp.len() + schema.len() + fx.len() + 512);
    match xmp.find("<pdfaExtension:schemas>") {
        Some(at) => {
            let bag = xmp[at..]
                .find("<rdf:Bag>")
                .map(|b| at + b + "<rdf:Bag>".len())
                .filter(|&b| b < rdf_end)
                .ok_or_else(|| err("the XMP's extension schemas have no rdf:Bag"))?;
            out.push_str(&xmp[..bag]);
            out.push_str(&schema);
            out.push_str(&xmp[bag..rdf_end]);
        }
        None => {
            out.push_str(&xmp[..rdf_end]);
            out.push_str(
                "<rdf:Description rdf:about=\"\" \
                 xmlns:pdfaExtension=\"http://www.aiim.org/pdfa/ns/extension/\" \
                 xmlns:pdfaSchema=\"http://www.aiim.org/pdfa/ns/schema#\" \
                 xmlns:pdfaProperty=\"http://www.aiim.org/pdfa/ns/property#\">\
                 <pdfaExtension:schemas><rdf:Bag>",
            );
            out.push_str(&schema);
            out.push_str("</rdf:Bag></pdfaExtension:schemas></rdf:Description>");
        }
    }
    out.push_str(&fx);
    out.push_str(&xmp[rdf_end..]);
    Ok(out)
}

/// `pdf` (a PDF/A-3 with `factur-x.xml` attached, classic cross-reference table, its XMP
/// stream uncompressed) with the Factur-X XMP, as an incremental update.
pub fn add_xmp(pdf: &[u8]) -> Result<Vec<u8>, XmpError> {
    let (section, trailer) = last_section(pdf)?;
    let root = key_number(trailer, b"/Root").ok_or_else(|| err("the trailer has no /Root"))?;
    let catalog = object_dict(pdf, object_offset(pdf, root)?)?;
    let metadata =
        key_number(catalog, b"/Metadata").ok_or_else(|| err("the catalog has no /Metadata"))?;
    let offset = object_offset(pdf, metadata)?;
    let dict = object_dict(pdf, offset)?;
    if find(dict, b"/Filter", 0).is_some() {
        return Err(err("the XMP stream is compressed"));
    }
    let end = find(pdf, b"endobj", offset).ok_or_else(|| err("no endobj"))?;
    let object = &pdf[offset..end];
    let begin = find(object, b"<?xpacket begin", 0).ok_or_else(|| err("no XMP packet"))?;
    let close = b"<?xpacket end=";
    let finish = find(object, close, begin)
        .and_then(|e| find(object, b"?>", e).map(|q| q + 2))
        .ok_or_else(|| err("an unterminated XMP packet"))?;
    let xmp = std::str::from_utf8(&object[begin..finish]).map_err(|_| err("XMP not UTF-8"))?;
    let xmp = with_fx(xmp)?;

    let generation = {
        let (_, after_num) = number_after(object, 0).ok_or_else(|| err("an object header"))?;
        number_after(object, after_num)
            .map(|(g, _)| g)
            .ok_or_else(|| err("an object header"))?
    };
    let mut out = Vec::with_capacity(pdf.len() + xmp.len() + 512);
    out.extend_from_slice(pdf);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let object_at = out.len();
    out.extend_from_slice(
        format!(
            "{metadata} {generation} obj\n<</Type/Metadata/Subtype/XML/Length {}>>\nstream\n",
            xmp.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(xmp.as_bytes());
    out.extend_from_slice(b"\nendstream\nendobj\n");
    let xref_at = out.len();
    out.extend_from_slice(
        format!("xref\n{metadata} 1\n{object_at:010} {generation:05} n\r\n").as_bytes(),
    );
    // The same trailer, pointing back at the section it updates.
    let mut kept = Vec::new();
    let mut i = 0;
    while i < trailer.len() {
        if trailer[i..].starts_with(b"/Prev")
            && trailer
                .get(i + 5)
                .is_some_and(|b| b.is_ascii_whitespace() || b.is_ascii_digit())
        {
            let (_, after) = number_after(trailer, i + 5).ok_or_else(|| err("a /Prev"))?;
            i = after;
            continue;
        }
        kept.push(trailer[i]);
        i += 1;
    }
    out.extend_from_slice(b"trailer\n<<");
    out.extend_from_slice(&kept);
    out.extend_from_slice(format!("/Prev {section}>>\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_schema_to_existing_extension_schemas_and_the_properties() {
        let xmp = "<?xpacket begin=\"\"?><x:xmpmeta><rdf:RDF><rdf:Description>\
                   <pdfaExtension:schemas><rdf:Bag><rdf:li>old</rdf:li></rdf:Bag>\
                   </pdfaExtension:schemas></rdf:Description></rdf:RDF></x:xmpmeta>\
                   <?xpacket end=\"r\"?>";
        let out = with_fx(xmp).unwrap();
        assert!(
            out.contains("<rdf:Bag><rdf:li rdf:parseType=\"Resource\"><pdfaSchema:schema>Factur-X")
        );
        assert!(out.contains("<rdf:li>old</rdf:li>"));
        assert!(out.contains(
            "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel></rdf:Description></rdf:RDF>"
        ));
        let bare = "<x:xmpmeta><rdf:RDF></rdf:RDF></x:xmpmeta>";
        assert!(
            with_fx(bare)
                .unwrap()
                .contains("<pdfaExtension:schemas><rdf:Bag>")
        );
        assert!(with_fx("<x:xmpmeta/>").is_err());
    }

    #[test]
    fn refuses_what_it_cannot_update() {
        assert!(add_xmp(b"not a pdf").is_err());
        assert!(add_xmp(b"%PDF-1.7\nstartxref\n5\n%%EOF").is_err());
    }
}
