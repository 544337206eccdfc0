//! A `tools/list` response read as slices of its text, in one pass: each
//! tool's members, keys unescaped, values as the text they were sent as.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// The tools of a `tools/list` response, as slices of its text, found in one
/// pass over it.
pub(super) struct Page<'a> {
    pub(super) tools: Vec<Members<'a>>,
    pub(super) next_cursor: Option<&'a RawValue>,
}

/// The members of a JSON object, in order: keys (unescaped; borrowed from
/// the text when written without escapes) and values as their text.
pub(super) struct Members<'a>(pub(super) Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    /// The `name` member, when it is a string.
    pub(super) fn name(&self) -> Option<Cow<'a, str>> {
        let mut names = self.0.iter().filter(|(k, _)| k == "name");
        let (_, value) = names.next()?;
        // Twice: no name, as a full parse of the tool would refuse it.
        if names.next().is_some() {
            return None;
        }
        serde_json::from_str::<Cow<'a, str>>(value.get()).ok()
    }

    /// Where the object is in `text`, braces included: from the brace before
    /// its first key to the one after its last value. `None` for an empty
    /// object, or one whose first key is written with escapes.
    pub(super) fn span(&self, text: &str) -> Option<std::ops::Range<usize>> {
        let Cow::Borrowed(first) = self.0.first()?.0 else {
            return None;
        };
        let (_, last) = self.0.last()?;
        // The key's opening quote, then the brace before it.
        let quote = offset(text, first)?.checked_sub(1)?;
        let start = text[..quote].trim_end().len().checked_sub(1)?;
        let after = offset(text, last.get())? + last.get().len();
        let end = text.len() - text[after..].trim_start().len() + 1;
        let braced = text.as_bytes().get(start) == Some(&b'{')
            && text.as_bytes().get(end - 1) == Some(&b'}');
        braced.then_some(start..end)
    }
}

/// Where `part`, a slice of `text`, starts in it.
pub(super) fn offset(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (at + part.len() <= text.len()).then_some(at)
}

struct MembersVisitor;

impl<'de> serde::de::Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
            out.push((key, value));
        }
        Ok(Members(out))
    }
}

/// An object key, borrowed from the text when it has no escapes (serde's
/// own `Cow<str>` always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

impl<'a> Page<'a> {
    /// `None` unless the text is an object whose `result` is an object with
    /// a `tools` array of objects (each member once).
    pub(super) fn find(text: &'a str) -> Option<Self> {
        use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
        use std::fmt;

        struct Envelope;
        impl<'de> Visitor<'de> for Envelope {
            type Value = Option<Page<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC response")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut page = None;
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    if key == "result" {
                        if page.is_some() {
                            return Ok(None);
                        }
                        page = Some(map.next_value_seed(ToolsResult)?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(page.flatten())
            }
        }
        struct ToolsResult;
        impl<'de> DeserializeSeed<'de> for ToolsResult {
            type Value = Option<Page<'de>>;
            fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }
        }
        impl<'de> Visitor<'de> for ToolsResult {
            type Value = Option<Page<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tools/list result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut tools, mut next_cursor) = (None, None);
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    match &*key {
                        "tools" if tools.is_none() => tools = Some(map.next_value()?),
                        "nextCursor" if next_cursor.is_none() => {
                            next_cursor = Some(map.next_value::<&'de RawValue>()?);
                        }
                        "tools" | "nextCursor" => return Ok(None),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(tools.map(|tools| Page { tools, next_cursor }))
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let page = serde::Deserializer::deserialize_map(&mut de, Envelope).ok()??;
        de.end().ok()?;
        Some(page)
    }
}
