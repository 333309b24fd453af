//! Exclusive XML Canonicalization 1.0, without comments
//! (<http://www.w3.org/2001/10/xml-exc-c14n#>): the bytes an XML signature digests.
//!
//! Applied to a parsed document (`roxmltree`, which already normalised line ends and
//! attribute values, expanded character references and merged CDATA into text, as the XPath
//! data model the standard is written against does), from an apex element, optionally
//! leaving one element out (the enveloped-signature transform). The rules:
//! - an element is written as `<qname`, the namespace declarations it needs, its attributes,
//!   `>`, its content and `</qname>` (never as an empty-element tag);
//! - a namespace declaration is written where its prefix is *visibly utilised* (by the
//!   element's name or one of its attributes) and the nearest output ancestor did not
//!   already declare it with the same value; `xmlns=""` only to undo a default namespace an
//!   output ancestor declared; the `xml` prefix is never declared;
//! - declarations are sorted by prefix (the default one first), attributes by namespace
//!   URI then local name (those without a namespace first);
//! - text escapes `&`, `<`, `>` and CR; attribute values `&`, `<`, `"`, TAB, LF and CR;
//! - comments are dropped; processing instructions are kept (outside the document element,
//!   each on its own line).
//!
//! Element and attribute prefixes are taken as written in the source text.

use roxmltree::{Node, NodeId, NodeType};

/// The algorithm URI of exclusive C14N 1.0 without comments.
pub const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";

const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// The canonical form of the subtree at `apex` (an element, or the document root for the
/// whole document), leaving out the element `exclude` and everything in it.
pub fn canonicalize(source: &str, apex: Node<'_, '_>, exclude: Option<NodeId>) -> String {
    let mut out = String::with_capacity(source.len());
    if apex.node_type() == NodeType::Root {
        let mut seen_element = false;
        for child in apex.children() {
            match child.node_type() {
                NodeType::Element => {
                    if Some(child.id()) != exclude {
                        element(source, child, exclude, &mut Vec::new(), &mut out);
                    }
                    seen_element = true;
                }
                NodeType::PI => {
                    if seen_element {
                        out.push('\n');
                    }
                    pi(child, &mut out);
                    if !seen_element {
                        out.push('\n');
                    }
                }
                _ => {}
            }
        }
    } else if Some(apex.id()) != exclude {
        element(source, apex, exclude, &mut Vec::new(), &mut out);
    }
    out
}

/// The prefix of a qualified name as written: `ds` of `ds:Signature`, `""` of `Invoice`.
fn prefix_of(qname: &str) -> &str {
    qname.split_once(':').map_or("", |(p, _)| p)
}

/// The element's qualified name as written in `source`.
fn qname<'s>(source: &'s str, node: Node<'_, '_>) -> &'s str {
    let start = node.range().start + 1;
    let rest = source.get(start..).unwrap_or_default();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The namespace URI `prefix` is bound to at `node` (`""` for an unbound default).
fn in_scope<'a>(node: Node<'a, '_>, prefix: &str) -> &'a str {
    node.namespaces()
        .find(|ns| ns.name().unwrap_or_default() == prefix)
        .map_or("", |ns| ns.uri())
}

/// `rendered`: the declarations written by output ancestors, innermost last.
fn element(
    source: &str,
    node: Node<'_, '_>,
    exclude: Option<NodeId>,
    rendered: &mut Vec<Vec<(String, String)>>,
    out: &mut String,
) {
    let name = qname(source, node);
    let mut attributes: Vec<(&str, &str, String, &str)> = node
        .attributes()
        .map(|a| {
            let uri = a.namespace().unwrap_or_default();
            let written = source.get(a.range_qname()).unwrap_or_default();
            let prefix = if uri.is_empty() {
                ""
            } else {
                prefix_of(written)
            };
            let qualified = if prefix.is_empty() {
                a.name().to_owned()
            } else {
                format!("{prefix}:{}", a.name())
            };
            (uri, a.name(), qualified, a.value())
        })
        .collect();
    attributes.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));

    let mut utilised: Vec<&str> = vec![prefix_of(name)];
    for (uri, _, qualified, _) in &attributes {
        if !uri.is_empty() {
            utilised.push(prefix_of(qualified));
        }
    }
    utilised.sort_unstable();
    utilised.dedup();
    let mut declared = Vec::new();
    for prefix in utilised {
        if prefix == "xml" {
            continue;
        }
        let uri = in_scope(node, prefix);
        let before = rendered
            .iter()
            .rev()
            .flat_map(|level| level.iter())
            .find(|(p, _)| p == prefix)
            .map_or("", |(_, u)| u.as_str());
        if uri != before && !(uri == XML_NS && prefix == "xml") {
            declared.push((prefix.to_owned(), uri.to_owned()));
        }
    }

    out.push('<');
    out.push_str(name);
    for (prefix, uri) in &declared {
        if prefix.is_empty() {
            out.push_str(" xmlns=\"");
        } else {
            out.push_str(" xmlns:");
            out.push_str(prefix);
            out.push_str("=\"");
        }
        escape_attribute(uri, out);
        out.push('"');
    }
    for (_, _, qualified, value) in &attributes {
        out.push(' ');
        out.push_str(qualified);
        out.push_str("=\"");
        escape_attribute(value, out);
        out.push('"');
    }
    out.push('>');
    rendered.push(declared);
    for child in node.children() {
        match child.node_type() {
            NodeType::Element if Some(child.id()) != exclude => {
                element(source, child, exclude, rendered, out);
            }
            NodeType::Text => escape_text(child.text().unwrap_or_default(), out),
            NodeType::PI => pi(child, out),
            _ => {}
        }
    }
    rendered.pop();
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

fn pi(node: Node<'_, '_>, out: &mut String) {
    if let Some(pi) = node.pi() {
        out.push_str("<?");
        out.push_str(pi.target);
        if let Some(value) = pi.value.filter(|v| !v.is_empty()) {
            out.push(' ');
            out.push_str(value);
        }
        out.push_str("?>");
    }
}

fn escape_text(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
}

fn escape_attribute(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c14n(xml: &str) -> String {
        let doc = roxmltree::Document::parse(xml).unwrap();
        canonicalize(xml, doc.root(), None)
    }

    fn c14n_of(xml: &str, id: &str) -> String {
        let doc = roxmltree::Document::parse(xml).unwrap();
        let apex = doc
            .descendants()
            .find(|n| n.attribute("Id") == Some(id))
            .unwrap();
        canonicalize(xml, apex, None)
    }

    #[test]
    fn the_document_loses_its_declaration_comments_and_empty_tags() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- c -->\n\
                   <doc><e1   /><e2 b=\"2\"  a='1' ><!-- x -->t</e2></doc>\n<!-- after -->";
        assert_eq!(c14n(xml), "<doc><e1></e1><e2 a=\"1\" b=\"2\">t</e2></doc>");
    }

    #[test]
    fn text_and_attributes_are_escaped_as_the_standard_says() {
        // From the C14N 1.0 recommendation's example 3.4 (character modifications).
        let xml = "<doc><text>First line&#x0d;&#10;Second line</text>\
                   <value>&#x32;</value><compute><![CDATA[value>\"0\" && value<\"10\" ?\"valid\":\"error\"]]></compute>\
                   <compute expr='value>\"0\" &amp;&amp; value&lt;\"10\" ?\"valid\":\"error\"'>valid</compute>\
                   <norm attr=' &apos;   &#x20;&#13;&#xa;&#9;   &apos; '/></doc>";
        assert_eq!(
            c14n(xml),
            "<doc><text>First line&#xD;\nSecond line</text><value>2</value>\
             <compute>value&gt;\"0\" &amp;&amp; value&lt;\"10\" ?\"valid\":\"error\"</compute>\
             <compute expr=\"value>&quot;0&quot; &amp;&amp; value&lt;&quot;10&quot; ?&quot;valid&quot;:&quot;error&quot;\">valid</compute>\
             <norm attr=\" '    &#xD;&#xA;&#x9;   ' \"></norm></doc>"
        );
    }

    #[test]
    fn only_visibly_utilised_namespaces_are_declared_once() {
        let xml = "<fe:Facturae xmlns:fe=\"urn:fe\" xmlns:ds=\"urn:ds\" xmlns:unused=\"urn:u\">\
                   <Header>h</Header>\
                   <ds:Signature Id=\"S\"><ds:SignedInfo Id=\"SI\"><ds:Ref URI=\"\"/></ds:SignedInfo>\
                   <ds:Object><xades:Props xmlns:xades=\"urn:x\" Id=\"P\" Target=\"#S\">\
                   <xades:Hash><ds:Digest>v</ds:Digest></xades:Hash></xades:Props></ds:Object>\
                   </ds:Signature></fe:Facturae>";
        assert_eq!(
            c14n_of(xml, "SI"),
            "<ds:SignedInfo xmlns:ds=\"urn:ds\" Id=\"SI\"><ds:Ref URI=\"\"></ds:Ref></ds:SignedInfo>"
        );
        // `ds` is used deeper: declared there, where it is first used.
        assert_eq!(
            c14n_of(xml, "P"),
            "<xades:Props xmlns:xades=\"urn:x\" Id=\"P\" Target=\"#S\"><xades:Hash>\
             <ds:Digest xmlns:ds=\"urn:ds\">v</ds:Digest></xades:Hash></xades:Props>"
        );
        let doc = roxmltree::Document::parse(xml).unwrap();
        let signature = doc
            .descendants()
            .find(|n| n.attribute("Id") == Some("S"))
            .unwrap();
        // The enveloped signature left out; `ds` and `unused` are not used by what is left.
        assert_eq!(
            canonicalize(xml, doc.root(), Some(signature.id())),
            "<fe:Facturae xmlns:fe=\"urn:fe\"><Header>h</Header></fe:Facturae>"
        );
    }

    #[test]
    fn default_namespaces_and_namespaced_attributes_sort_and_undo() {
        let xml = "<a xmlns=\"urn:a\" xmlns:z=\"urn:z\" xmlns:b=\"urn:b\" z:k=\"1\" b:k=\"2\" k=\"0\">\
                   <b:c><d xmlns=\"\" xml:lang=\"es\"/></b:c><e/></a>";
        assert_eq!(
            c14n(xml),
            "<a xmlns=\"urn:a\" xmlns:b=\"urn:b\" xmlns:z=\"urn:z\" k=\"0\" b:k=\"2\" z:k=\"1\">\
             <b:c><d xmlns=\"\" xml:lang=\"es\"></d></b:c><e></e></a>"
        );
    }
}
