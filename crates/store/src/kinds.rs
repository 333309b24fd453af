//! Closed sets of values stored as text (an invoice's status, series and origin), typed at the
//! store's boundary: a row with any other text fails to decode (an error naming the value),
//! never silently becomes a default, and code compares variants, not strings.

/// Defines a text-backed enum: `as_str`, `FromStr`, `Display`, serde as the text, and
/// sqlx's `Type`/`Encode`/`Decode` for the `Any` driver as the text.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and serialised text.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::kinds::UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(crate::kinds::UnknownValue {
                        what: stringify!($name),
                        value: other.chars().take(40).collect(),
                    }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
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
                <&str as sqlx::Encode<'q, sqlx::Any>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $name {
            fn decode(
                value: <sqlx::Any as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<'r, sqlx::Any>>::decode(value)?;
                Ok(text.parse()?)
            }
        }
    };
}

/// A stored or requested text that is none of a set's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a known {what}")]
pub struct UnknownValue {
    /// The set (the enum's name).
    pub what: &'static str,
    /// The text found (at most 40 characters of it).
    pub value: String,
}

text_enum! {
    /// Where an invoice is in its life: a draft can change, an issued invoice cannot.
    InvoiceStatus {
        /// Editable; not numbered yet.
        Draft = "draft",
        /// Numbered, frozen, reported.
        Issued = "issued",
    }
}

text_enum! {
    /// Which numbering an invoice takes: ordinary invoices and corrective ones count apart.
    Series {
        /// An ordinary invoice.
        Invoice = "invoice",
        /// A corrective invoice (R1-R5), which amends an issued one.
        Corrective = "corrective",
    }
}

text_enum! {
    /// How an invoice came to exist (the draft's maker; it stays once issued).
    Origin {
        /// A request with a standard token (a person, the web app, a script).
        Api = "api",
        /// A request from the MCP server (an AI caller's, approved).
        Mcp = "mcp",
        /// Made from a proforma (`POST /v1/proformas/{id}/invoice`).
        Proforma = "proforma",
        /// A corrective invoice made from the invoice it corrects.
        Correction = "correction",
        /// A period's draft made by a recurring invoice.
        Recurring = "recurring",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip_and_anything_else_is_refused_by_name() {
        for s in InvoiceStatus::ALL {
            assert_eq!(s.as_str().parse::<InvoiceStatus>(), Ok(*s));
        }
        for s in Series::ALL {
            assert_eq!(s.as_str().parse::<Series>(), Ok(*s));
        }
        for o in Origin::ALL {
            assert_eq!(o.as_str().parse::<Origin>(), Ok(*o));
        }
        assert!("web".parse::<Origin>().is_err());
        let e = "Issued".parse::<InvoiceStatus>().unwrap_err();
        assert_eq!(e.to_string(), "`Issued` is not a known InvoiceStatus");
        assert_eq!(
            serde_json::to_string(&Series::Corrective).unwrap(),
            "\"corrective\""
        );
        assert!(serde_json::from_str::<Series>("\"proforma\"").is_err());
    }
}
