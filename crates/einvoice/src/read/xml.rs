//! The XML tree and the small lookups both syntaxes use.

use std::str::FromStr;

use chrono::NaiveDate;
use roxmltree::{Document, Node, ParsingOptions};
use rust_decimal::Decimal;

use super::ReadError;

/// Most nodes a document may have (a 500-line invoice has some 20,000).
const MAX_NODES: u32 = 400_000;

/// Parses a document. A DTD is refused outright (so no entity, internal or external,
/// is ever expanded or fetched), and so is a tree past [`MAX_NODES`].
pub fn parse(text: &str) -> Result<Document<'_>, ReadError> {
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_NODES,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, options).map_err(|e| match e {
        roxmltree::Error::DtdDetected => ReadError::new(
            "XML",
            "the document declares a DTD; e-invoices have none, and entities are never expanded",
        ),
        other => ReadError::new(
            "XML",
            format!("the document is not well-formed XML: {other}"),
        ),
    })
}

/// The first child element `ns:name`.
pub fn child<'a, 'i>(node: Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

/// Every child element `ns:name`.
pub fn children<'a, 'i>(
    node: Node<'a, 'i>,
    ns: &'a str,
    name: &'a str,
) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children().filter(move |c| {
        c.is_element() && c.tag_name().name() == name && c.tag_name().namespace() == Some(ns)
    })
}

/// The element at a path of `(namespace, name)` steps, each the first match.
pub fn at<'a, 'i>(node: Node<'a, 'i>, path: &[(&str, &str)]) -> Option<Node<'a, 'i>> {
    path.iter()
        .try_fold(node, |n, (ns, name)| child(n, ns, name))
}

/// An element's text, trimmed; `None` when absent or blank.
pub fn text(node: Option<Node<'_, '_>>) -> Option<String> {
    let t: String = node?
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// A required text: its absence is the business rule `rule`.
pub fn required(node: Option<Node<'_, '_>>, rule: &str, what: &str) -> Result<String, ReadError> {
    text(node).ok_or_else(|| ReadError::new(rule, format!("{what} is missing")))
}

/// An amount or quantity: `None` when absent, an error when present and not a number.
pub fn decimal(node: Option<Node<'_, '_>>, what: &str) -> Result<Option<Decimal>, ReadError> {
    match text(node) {
        None => Ok(None),
        Some(t) => Decimal::from_str(&t)
            .map(Some)
            .map_err(|_| ReadError::new("XSD", format!("{what} `{t}` is not a number"))),
    }
}

/// A required amount: its absence is the business rule `rule`.
pub fn required_decimal(
    node: Option<Node<'_, '_>>,
    rule: &str,
    what: &str,
) -> Result<Decimal, ReadError> {
    decimal(node, what)?.ok_or_else(|| ReadError::new(rule, format!("{what} is missing")))
}

/// A date written `YYYY-MM-DD` (UBL) or `YYYYMMDD` (CII format 102).
pub fn date(value: &str, what: &str) -> Result<NaiveDate, ReadError> {
    NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(value, "%Y%m%d"))
        .map_err(|_| ReadError::new("XSD", format!("{what} `{value}` is not a date")))
}

/// An optional date.
pub fn optional_date(
    node: Option<Node<'_, '_>>,
    what: &str,
) -> Result<Option<NaiveDate>, ReadError> {
    text(node).map(|t| date(&t, what)).transpose()
}

/// A currency code (BT-5): three capital letters, as ISO 4217 writes them (BR-CL-04).
pub fn currency(code: String) -> Result<String, ReadError> {
    if code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(code)
    } else {
        Err(ReadError::new(
            "BR-CL-04",
            format!("the currency (BT-5) `{code}` is not an ISO 4217 code such as EUR"),
        ))
    }
}
