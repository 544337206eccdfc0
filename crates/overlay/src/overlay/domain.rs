//! A widget's sandbox domain (`domain` in a widget manifest or a built-in
//! widget's `view`), as written: one value, or one per host.

use serde::Deserialize;

/// A widget's `domain`: a string, for ChatGPT and other hosts (and for
/// Claude when it is a bare host name and no domain can be derived), or a
/// table with one value per host, `{ chatgpt = "https://…", claude =
/// "<hash>.claudemcpcontent.com", other = "…" }`, each key optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WidgetDomain {
    One(String),
    PerHost(HostDomains),
}

impl From<&str> for WidgetDomain {
    fn from(value: &str) -> Self {
        WidgetDomain::One(value.to_owned())
    }
}

/// The `domain` table: a value per host kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostDomains {
    /// An origin (`https://host[:port]`), unique to the app.
    pub chatgpt: Option<String>,
    /// A bare host name; absent, the gateway derives it from `public_url`.
    pub claude: Option<String>,
    /// Any other host: an origin or a bare host name.
    pub other: Option<String>,
}

impl<'de> Deserialize<'de> for WidgetDomain {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = WidgetDomain;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, or a table with keys chatgpt, claude, other")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<WidgetDomain, E> {
                Ok(WidgetDomain::One(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<WidgetDomain, A::Error> {
                let table =
                    HostDomains::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(WidgetDomain::PerHost(table))
            }
        }
        d.deserialize_any(Visitor)
    }
}
