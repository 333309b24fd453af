//! Ids of companies and invoices, typed at the store's boundary: a [`CompanyId`] or an
//! [`InvoiceId`] is parsed once (from a stored row, from the token's company, from a path)
//! and then passed as itself, so an invoice id cannot be handed where a company id is due.
//!
//! Both are text (UUIDv7 when made by the service, [`crate::new_id`]); a text is an id when
//! it is non-empty, at most [`MAX_ID_CHARS`] characters and without control characters.
//! A text that is not is no id of anything: callers answer it as "not found".

/// Longest text taken as an id.
pub const MAX_ID_CHARS: usize = 100;

/// A text that cannot be an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a valid {what}")]
pub struct InvalidId {
    /// The kind of id (the type's name).
    pub what: &'static str,
    /// The text found (at most 40 characters of it).
    pub value: String,
}

macro_rules! text_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// A new id (UUIDv7).
            pub fn generate() -> Self {
                Self(crate::new_id())
            }

            /// The id written as `text`, if it can be one.
            pub fn parse(text: &str) -> Result<Self, InvalidId> {
                Self::try_from(text.to_owned())
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;

            fn try_from(text: String) -> Result<Self, InvalidId> {
                let n = text.chars().count();
                if n == 0 || n > MAX_ID_CHARS || text.chars().any(char::is_control) {
                    return Err(InvalidId {
                        what: stringify!($name),
                        value: text.chars().take(40).collect(),
                    });
                }
                Ok(Self(text))
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl sqlx::Type<sqlx::Any> for $name {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <str as sqlx::Type<sqlx::Any>>::type_info()
            }

            fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
                <str as sqlx::Type<sqlx::Any>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Any> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<'q, sqlx::Any>>::encode_by_ref(&self.0, buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $name {
            fn decode(
                value: <sqlx::Any as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <String as sqlx::Decode<'r, sqlx::Any>>::decode(value)?;
                Ok(Self::try_from(text)?)
            }
        }
    };
}

text_id! {
    /// The id of a company: the tenant every query of tenant data is bound to.
    CompanyId
}

text_id! {
    /// The id of an invoice (draft, issued or corrective).
    InvoiceId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_parsed_once_and_bad_text_is_refused_by_name() {
        let id = InvoiceId::generate();
        assert_eq!(InvoiceId::parse(id.as_str()), Ok(id.clone()));
        assert_eq!(id, id.as_str());
        for bad in ["", "a\u{0}b", "line\nbreak", &"x".repeat(MAX_ID_CHARS + 1)] {
            assert!(InvoiceId::parse(bad).is_err(), "{bad:?}");
        }
        let e = CompanyId::parse("").unwrap_err();
        assert_eq!(e.to_string(), "`` is not a valid CompanyId");
        assert_eq!(
            serde_json::to_string(&CompanyId::parse("c-1").unwrap()).unwrap(),
            "\"c-1\""
        );
        assert!(serde_json::from_str::<CompanyId>("\"\"").is_err());
    }
}
