//! A minimal namespace-aware element tree over `quick-xml`, enough to read
//! the AEAT's (small) responses.

use quick_xml::events::{BytesRef, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use crate::respuesta::ResponseError;

/// Deepest nesting accepted; AEAT responses are about eight levels deep.
const MAX_DEPTH: usize = 64;

/// An element: namespace URI, local name, concatenated text and children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    pub ns: Option<String>,
    pub name: String,
    text: String,
    pub children: Vec<Element>,
}

impl Element {
    /// `true` when the element has this namespace URI and local name.
    pub(crate) fn is(&self, ns: &str, name: &str) -> bool {
        self.ns.as_deref() == Some(ns) && self.name == name
    }

    /// First child with this local name (any namespace).
    pub(crate) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Children with this local name (any namespace).
    pub(crate) fn children_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The element's own text, trimmed.
    pub(crate) fn text(&self) -> &str {
        self.text.trim()
    }

    /// Trimmed text of the first child with this local name.
    pub(crate) fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(Element::text)
    }
}

fn xml_err(e: impl core::fmt::Display) -> ResponseError {
    ResponseError::Xml(e.to_string())
}

fn resolve_reference(r: &BytesRef<'_>) -> Result<char, ResponseError> {
    if let Some(c) = r.resolve_char_ref().map_err(xml_err)? {
        return Ok(c);
    }
    match &**r {
        "amp" => Ok('&'),
        "lt" => Ok('<'),
        "gt" => Ok('>'),
        "quot" => Ok('"'),
        "apos" => Ok('\''),
        other => Err(ResponseError::Xml(format!("unknown entity &{other};"))),
    }
}

/// Parses a whole document and returns its root element.
pub(crate) fn parse(xml: &str) -> Result<Element, ResponseError> {
    let mut reader = NsReader::from_str(xml);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let (resolved, event) = reader.read_resolved_event().map_err(xml_err)?;
        let ns = match resolved {
            ResolveResult::Bound(ns) => Some(ns.0.to_owned()),
            ResolveResult::Unbound => None,
            ResolveResult::Unknown(prefix) => {
                return Err(ResponseError::Xml(format!(
                    "undeclared namespace prefix `{prefix}`"
                )));
            }
        };
        match event {
            Event::Start(_) | Event::Empty(_) if root.is_some() => {
                return Err(ResponseError::Xml("content after the root element".into()));
            }
            Event::Start(start) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(ResponseError::Xml(format!(
                        "elements nested deeper than {MAX_DEPTH} levels"
                    )));
                }
                stack.push(Element {
                    ns,
                    name: start.local_name().as_ref().to_owned(),
                    text: String::new(),
                    children: Vec::new(),
                });
            }
            Event::Empty(start) => {
                let element = Element {
                    ns,
                    name: start.local_name().as_ref().to_owned(),
                    text: String::new(),
                    children: Vec::new(),
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => root = Some(element),
                }
            }
            Event::End(_) => {
                let mut element = stack.pop().ok_or_else(|| xml_err("unexpected end tag"))?;
                if !element.children.is_empty() && element.text.trim().is_empty() {
                    element.text.clear(); // indentation between child elements
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => root = Some(element),
                }
            }
            Event::Text(t) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let c = resolve_reference(&r)?;
                if let Some(current) = stack.last_mut() {
                    current.text.push(c);
                }
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if !stack.is_empty() {
        return Err(xml_err("the document ends before its elements are closed"));
    }
    root.ok_or_else(|| xml_err("the document has no root element"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_namespaced_tree() {
        let doc = r#"<?xml version="1.0"?>
            <a:R xmlns:a="urn:a" xmlns:b="urn:b"><b:X>1 &amp; 2 &#x41;</b:X><b:Y/><!-- c --><Z><![CDATA[<ok>]]></Z></a:R>"#;
        let root = parse(doc).unwrap();
        assert!(root.is("urn:a", "R"));
        assert_eq!(root.child_text("X"), Some("1 & 2 A"));
        assert_eq!(root.child("X").unwrap().ns.as_deref(), Some("urn:b"));
        assert_eq!(root.child_text("Y"), Some(""));
        assert_eq!(root.child_text("Z"), Some("<ok>"));
        assert_eq!(root.child("Z").unwrap().ns, None);
    }

    #[test]
    fn rejects_broken_documents() {
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("<a>").is_err());
        assert!(parse("").is_err());
        assert!(parse("<p:a/>").is_err());
        assert!(parse("<a/><b/>").is_err());
        assert!(parse("<a>&bogus;</a>").is_err());
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).is_err());
    }
}
