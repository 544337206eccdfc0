//! The options of a built-in widget as written in an overlay
//! (`[tools.<name>.view]`): plain data, read by the overlay format.

use serde::{Deserialize, Deserializer, Serialize};

use crate::overlay::domain::WidgetDomain;

/// `[tools.<name>.view]`: the options of a built-in widget. Which apply
/// depends on the kind ([`Kind::options`]); the rest are refused.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
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
    pub(crate) subtitle: Option<String>,
    /// Card: the key of an image URL (`https:` from `image_domains`, or a
    /// `data:image/…` URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Card: origins images may come from (the widget's
    /// `csp.resource_domains`); default none.
    #[serde(skip_serializing)]
    pub(crate) image_domains: Option<Vec<String>>,
    /// Card, kv: the fields shown, in order; default: every property.
    #[serde(
        default,
        deserialize_with = "fields",
        skip_serializing_if = "Option::is_none"
    )]
    pub fields: Option<Vec<Field>>,
    /// Table, card, list: buttons on each record that call a tool of the
    /// same server through the host's bridge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<Action>>,
    /// Table, card, list: what to call after an action to show fresh data;
    /// default: the widget's own tool with the arguments of the call shown
    /// (a render tool's widget refreshes only when this is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh: Option<Refresh>,
    /// Chart: `bar` (default) or `line`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub chart: Option<ChartType>,
    /// Chart: the key of each record's label (the x axis); default: the
    /// first text property.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    /// Chart: the numeric keys drawn, one series each; default: every
    /// number property.
    #[serde(
        default,
        deserialize_with = "fields",
        skip_serializing_if = "Option::is_none"
    )]
    pub y: Option<Vec<Field>>,
    /// Every kind: the widget's sandbox domain (`_meta.ui.domain` and
    /// `openai/widgetDomain`), as a widget manifest's `domain` gives it.
    #[serde(skip_serializing)]
    pub(crate) domain: Option<WidgetDomain>,
}

/// A button on each record: calls `tool` with `arguments`, in which a
/// string starting with `/` is a JSON pointer into the record (`"/id"`),
/// inside arrays and tables too (`["/id"]`), and anything else is sent as
/// written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// The button's text.
    pub label: String,
    /// The tool called (of the same server).
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
    /// Ask before calling: `true`, a question, or `false`. Default: ask,
    /// unless the overlay's annotations of `tool` say it is read-only or not
    /// destructive (MCP's default for a tool that writes is destructive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirm>,
}

/// An action's confirmation: on or off, or the question to ask.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Confirm {
    Ask(bool),
    Question(String),
}

/// The call that fetches fresh data: a tool's name (called without
/// arguments), or a tool with arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refresh {
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

impl<'de> Deserialize<'de> for Refresh {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            tool: String,
            #[serde(default)]
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        }
        #[derive(Deserialize)]
        #[serde(
            untagged,
            expecting = "a tool's name, or a table with `tool` and `arguments`"
        )]
        enum Written {
            Name(String),
            Table(Table),
        }
        Ok(match Written::deserialize(d)? {
            Written::Name(tool) => Refresh {
                tool,
                arguments: None,
            },
            Written::Table(t) => Refresh {
                tool: t.tool,
                arguments: t.arguments,
            },
        })
    }
}

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChartType {
    Bar,
    Line,
}

impl View {
    /// The widget's sandbox domain, as its `domain` option gives it.
    pub fn domain(&self) -> Option<&WidgetDomain> {
        self.domain.as_ref()
    }

    /// The tools the widget calls (its actions', then the refresh), each
    /// with the key that names it (`view.actions[0].tool`, `view.refresh`).
    pub fn calls(&self) -> impl Iterator<Item = (String, &str)> {
        let actions = self.actions.iter().flatten().enumerate();
        actions
            .map(|(i, a)| (format!("view.actions[{i}].tool"), a.tool.as_str()))
            .chain(
                self.refresh
                    .iter()
                    .map(|r| ("view.refresh".to_owned(), r.tool.as_str())),
            )
    }

    /// The options that are set, by name (for the per-kind rule).
    pub fn set(&self) -> Vec<&'static str> {
        let mut set = Vec::new();
        let options: [(&str, bool); 18] = [
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
            ("actions", self.actions.is_some()),
            ("refresh", self.refresh.is_some()),
            ("type", self.chart.is_some()),
            ("x", self.x.is_some()),
            ("y", self.y.is_some()),
            ("domain", self.domain.is_some()),
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
