//! The stored form of a document: JSON tagged with its version, decoded once, and a value
//! that does not decode is an error (never a default).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::Invoice;

/// What an invoice's row keeps of it outside the document: its id, number and moment of
/// issue (see [`Invoice`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The invoice's id.
    pub id: String,
    /// BT-1.
    pub number: String,
    /// The yearly number.
    pub yearly_number: i64,
    /// The fiscal year.
    pub year: i64,
    /// When it was issued.
    pub issued_at: DateTime<Utc>,
}

/// The version [`encode`] writes.
pub const CURRENT_VERSION: u32 = 1;

/// Every version the service has written; decoding upgrades older ones to the current type.
#[derive(Serialize, Deserialize)]
#[serde(tag = "version")]
enum Versioned {
    /// The first version (2026-11).
    #[serde(rename = "1")]
    V1(Box<Invoice>),
}

/// A current document whose first key is its version tag, as [`encode`] writes it.
struct TagFirst(Box<Invoice>);

impl<'de> Deserialize<'de> for TagFirst {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TagFirstVisitor)
    }
}

struct TagFirstVisitor;

impl<'de> serde::de::Visitor<'de> for TagFirstVisitor {
    type Value = TagFirst;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an invoice document whose first key is `version`")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<TagFirst, A::Error> {
        use serde::de::Error as _;
        let key: Option<std::borrow::Cow<'de, str>> = map.next_key()?;
        if key.as_deref() != Some("version") {
            return Err(A::Error::custom("the first key is not `version`"));
        }
        let version: std::borrow::Cow<'de, str> = map.next_value()?;
        if version != "1" {
            return Err(A::Error::custom(format!("unknown version `{version}`")));
        }
        // The rest of the map is the document's own fields.
        let doc = Invoice::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(TagFirst(Box::new(doc)))
    }
}

/// Why a stored document could not be read: the row is corrupt or of a future version.
#[derive(Debug, thiserror::Error)]
#[error("the stored invoice document does not decode: {0}")]
pub struct DecodeError(#[from] serde_json::Error);

/// Why a document could not be written (an amount or text serde cannot represent).
#[derive(Debug, thiserror::Error)]
#[error("the invoice document cannot be encoded: {0}")]
pub struct EncodeError(#[from] serde_json::Error);

/// The JSON text stored for `doc`.
pub fn encode(doc: &Invoice) -> Result<String, EncodeError> {
    #[derive(Serialize)]
    #[serde(tag = "version")]
    enum Borrowed<'a> {
        #[serde(rename = "1")]
        V1(&'a Invoice),
    }
    Ok(serde_json::to_string(&Borrowed::V1(doc))?)
}

/// The document stored as `text`, in the row that `frame` describes.
pub fn decode(text: &str, frame: Frame) -> Result<Invoice, DecodeError> {
    // The encoder writes the tag first, so the document is read straight into its type
    // (`TagFirst`). serde's general reading of a tagged enum buffers the whole document
    // into an untyped tree first, which was half of decoding's time, and decoding is
    // most of a list page's. Anything else, a wrong version or a bad document included,
    // is read the general way, which is also what says what is wrong with it.
    let mut doc = match serde_json::from_str::<TagFirst>(text) {
        Ok(TagFirst(doc)) => *doc,
        Err(_) => match serde_json::from_str::<Versioned>(text)? {
            Versioned::V1(doc) => *doc,
        },
    };
    doc.set_frame(frame);
    Ok(doc)
}

impl Invoice {
    /// Fills in the part of the document its row keeps outside the stored JSON, as
    /// [`decode`] does: a document just encoded for a row and then framed by it equals the
    /// one decoded from that row.
    pub fn set_frame(&mut self, frame: Frame) {
        self.payment.remittance.clone_from(&frame.number);
        self.id = frame.id;
        self.number = frame.number;
        self.yearly_number = frame.yearly_number;
        self.year = frame.year;
        self.issued_at = frame.issued_at;
    }

    /// The part of the document its row keeps outside the stored JSON.
    pub fn frame(&self) -> Frame {
        Frame {
            id: self.id.clone(),
            number: self.number.clone(),
            yearly_number: self.yearly_number,
            year: self.year,
            issued_at: self.issued_at,
        }
    }
}
