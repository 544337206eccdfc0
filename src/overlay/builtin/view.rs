//! The options of a built-in widget as written in an overlay
//! (`[tools.<name>.view]`): plain data, read by the overlay format.

use serde::{Deserialize, Deserializer, Serialize};

/// `[tools.<name>.view]`: the options of a built-in widget. Which apply
/// depends on the kind ([`Kind::options`]); the rest are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct View {
    /// JSON pointer into `structuredContent` to the data shown; default: the
    /// root (card, kv), its only array property (table, list), its only
    /// string property or else the result's text (markdown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// A heading above the widget (the table's caption).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// Table: the columns, in order; default: the item properties of the
    /// output schema, else the keys of the rows.
    #[serde(
        default,
        deserialize_with = "fields",
        skip_serializing_if = "Option::is_none"
    )]
    pub columns: Option<Vec<Field>>,
    /// Table: the column sorted first; a leading `-` sorts descending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    /// Table, list, card: shown when there is nothing to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty: Option<String>,
    /// List: the key of each item's first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// List: the key of each item's second line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secondary: Option<String>,
    /// Card: the key of the title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Card: the key of the subtitle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<String>,
    /// Card: the key of an image URL (`https:` from `image_domains`, or a
    /// `data:image/…` URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Card: origins images may come from (the widget's
    /// `csp.resource_domains`); default none.
    #[serde(skip_serializing)]
    pub image_domains: Option<Vec<String>>,
    /// Card, kv: the fields shown, in order; default: every property.
    #[serde(
        default,
        deserialize_with = "fields",
        skip_serializing_if = "Option::is_none"
    )]
    pub fields: Option<Vec<Field>>,
}

impl View {
    /// The options that are set, by name (for the per-kind rule).
    pub fn set(&self) -> Vec<&'static str> {
        let mut set = Vec::new();
        let options: [(&str, bool); 12] = [
            ("data", self.data.is_some()),
            ("heading", self.heading.is_some()),
            ("columns", self.columns.is_some()),
            ("sort", self.sort.is_some()),
            ("empty", self.empty.is_some()),
            ("primary", self.primary.is_some()),
            ("secondary", self.secondary.is_some()),
            ("title", self.title.is_some()),
            ("subtitle", self.subtitle.is_some()),
            ("image", self.image.is_some()),
            ("image_domains", self.image_domains.is_some()),
            ("fields", self.fields.is_some()),
        ];
        for (name, on) in options {
            if on {
                set.push(name);
            }
        }
        set
    }
}

/// One column (table) or field (card, kv): a key of the record, or a JSON
/// pointer into it (`/owner/name`), written as a string or as a table with
/// a title and a format.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub key: String,
    /// Default: the key, humanised (`due_date` is "Due date").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Default: `text` (numbers and booleans still read well).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// ISO 4217 code, for `format = "currency"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

impl<'de> Deserialize<'de> for FieldOrKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = FieldOrKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a key, or a table with `key` and optionally `title`, `format`, `currency`",
                )
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<FieldOrKey, E> {
                Ok(FieldOrKey(Field {
                    key: key.to_owned(),
                    ..Field::default()
                }))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<FieldOrKey, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                Field::deserialize(de).map(FieldOrKey)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A [`Field`] as written: a bare key or a table.
struct FieldOrKey(Field);

/// How a value is shown, with the host's locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Text,
    Number,
    Percent,
    Currency,
    Date,
    Datetime,
    Boolean,
    /// An `http(s)` URL as a link; anything else as text.
    Link,
}

/// Reads a list of fields written as keys or tables (serde's `with`).
fn fields<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Field>>, D::Error> {
    let items: Option<Vec<FieldOrKey>> = Option::deserialize(d)?;
    Ok(items.map(|items| items.into_iter().map(|f| f.0).collect()))
}
