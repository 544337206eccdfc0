//! A small HTML scanner: the elements of a widget's entry document that
//! reference other files (`<script src>`, `<link>`, `<img>`, media, inline
//! `<style>`), with their byte offsets.

use std::ops::Range;

/// A problem found while inlining, at a byte offset of the entry HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AssetError {
    pub offset: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Script,
    Stylesheet,
    /// Another `<link>` that loads a file: icon, manifest, (module)preload.
    Link,
    /// `<img>`, `<source>`, `<video>`, `<audio>`, `<track>`.
    Media,
    /// An inline `<style>`: its content is CSS.
    Style,
}

/// An element that references a file, found in the entry.
#[derive(Debug)]
pub(super) struct Element<'a> {
    pub(super) kind: Kind,
    /// Byte range of the whole element (`<script …></script>` or `<link …>`).
    pub(super) start: usize,
    pub(super) end: usize,
    /// For [`Kind::Style`], the byte range of the CSS.
    pub(super) content: Range<usize>,
    pub(super) attrs: Vec<Attr<'a>>,
}

#[derive(Debug)]
pub(super) struct Attr<'a> {
    /// Lowercased name.
    pub(super) name: String,
    pub(super) value: Option<&'a str>,
    /// The byte offset of the value in the document.
    pub(super) value_at: usize,
    /// The attribute exactly as written, copied into the inline element.
    raw: &'a str,
}

impl<'a> Element<'a> {
    pub(super) fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.value)
    }

    pub(super) fn reference(&self) -> Option<&'a str> {
        let value = match self.kind {
            Kind::Script => self.attr("src"),
            Kind::Stylesheet | Kind::Link => self.attr("href"),
            Kind::Media | Kind::Style => None,
        }?;
        let value = value.trim();
        (!value.is_empty()).then_some(value)
    }

    pub(super) fn is_deferred_script(&self) -> bool {
        let module = self
            .attr("type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("module"));
        self.kind == Kind::Script && !module && self.attrs.iter().any(|a| a.name == "defer")
    }

    pub(super) fn is_module_script(&self) -> bool {
        self.kind == Kind::Script
            && self
                .attr("type")
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("module"))
    }

    /// Whether a `<link>`'s `rel` has `token`.
    pub(super) fn has_rel(&self, token: &str) -> bool {
        self.attr("rel").is_some_and(|rel| {
            rel.split_ascii_whitespace()
                .any(|t| t.eq_ignore_ascii_case(token))
        })
    }

    /// The opening tag of the inline element, keeping the attributes that
    /// still mean something, and the text that must not appear in its
    /// content.
    pub(super) fn inline_open(&self) -> (String, &'static str, &'static str) {
        let (tag, dropped, closing): (&str, &[&str], &str) = match self.kind {
            Kind::Script => (
                "script",
                &["src", "defer", "async", "integrity", "crossorigin"],
                "</script",
            ),
            _ => (
                "style",
                &["rel", "href", "integrity", "crossorigin", "type"],
                "</style",
            ),
        };
        let mut out = format!("<{tag}");
        for attr in self
            .attrs
            .iter()
            .filter(|a| !dropped.contains(&a.name.as_str()))
        {
            out.push(' ');
            out.push_str(attr.raw);
        }
        out.push('>');
        let close = if tag == "script" {
            "</script>"
        } else {
            "</style>"
        };
        (out, closing, close)
    }
}

/// The content must not end the element early: `</script` inside a script
/// string becomes `<\/script`, which JavaScript reads the same.
pub(super) fn escape_closing(content: &str, closing: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut from = 0;
    while let Some(at) = find_ci(content, closing, from) {
        out.push_str(&content[from..at]);
        out.push_str("<\\/");
        from = at + 2;
    }
    out.push_str(&content[from..]);
    out
}

/// Finds the elements to consider, skipping comments and the raw text of
/// inline scripts and styles (where `<script src=` may appear as data).
pub(super) fn scan(html: &str) -> Vec<Result<Element<'_>, AssetError>> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(rel) = html[at..].find('<') {
        let start = at + rel;
        let rest = &html[start..];
        if rest.starts_with("<!--") {
            at = rest.find("-->").map_or(html.len(), |end| start + end + 3);
        } else if let Some(name_len) = tag_name(rest, "script") {
            let (attrs, open_end) = parse_attrs(html, start + name_len);
            let Some(close) = find_ci(html, "</script", open_end) else {
                found.push(Err(AssetError {
                    offset: start,
                    reason: "<script> is never closed".into(),
                }));
                return found;
            };
            let end = html[close..]
                .find('>')
                .map_or(html.len(), |gt| close + gt + 1);
            let element = Element {
                kind: Kind::Script,
                start,
                end,
                content: open_end..close,
                attrs,
            };
            if element.reference().is_some() {
                found.push(Ok(element));
            }
            at = end;
        } else if let Some(name_len) = tag_name(rest, "style") {
            let (attrs, open_end) = parse_attrs(html, start + name_len);
            let close = find_ci(html, "</style", open_end).unwrap_or(html.len());
            at = html[close..]
                .find('>')
                .map_or(html.len(), |gt| close + gt + 1);
            found.push(Ok(Element {
                kind: Kind::Style,
                start,
                end: at,
                content: open_end..close,
                attrs,
            }));
        } else if let Some(name_len) = tag_name(rest, "link") {
            let (attrs, end) = parse_attrs(html, start + name_len);
            let mut element = Element {
                kind: Kind::Stylesheet,
                start,
                end,
                content: end..end,
                attrs,
            };
            if !element.has_rel("stylesheet") {
                element.kind = Kind::Link;
            }
            let loads = element.kind == Kind::Stylesheet
                || LINK_RELS.iter().any(|rel| element.has_rel(rel));
            if loads && element.reference().is_some() {
                found.push(Ok(element));
            }
            at = end;
        } else if let Some(name_len) = MEDIA.iter().find_map(|tag| tag_name(rest, tag)) {
            let (attrs, end) = parse_attrs(html, start + name_len);
            if attrs.iter().any(|a| MEDIA_ATTRS.contains(&a.name.as_str())) {
                found.push(Ok(Element {
                    kind: Kind::Media,
                    start,
                    end,
                    content: end..end,
                    attrs,
                }));
            }
            at = end;
        } else {
            at = start + 1;
        }
    }
    found
}

/// The `<link rel>` tokens (besides `stylesheet`) that load a file.
pub(super) const LINK_RELS: [&str; 7] = [
    "icon",
    "apple-touch-icon",
    "manifest",
    "modulepreload",
    "preload",
    "prefetch",
    "mask-icon",
];
/// Elements whose attributes name media files.
const MEDIA: [&str; 5] = ["img", "source", "video", "audio", "track"];
/// The attributes of those that name files.
pub(super) const MEDIA_ATTRS: [&str; 3] = ["src", "srcset", "poster"];

/// The length of `<name` if `rest` opens that tag (case-insensitively).
fn tag_name(rest: &str, name: &str) -> Option<usize> {
    let len = name.len() + 1;
    let opens = rest.len() > len
        && rest.as_bytes()[1..len].eq_ignore_ascii_case(name.as_bytes())
        && matches!(
            rest.as_bytes()[len],
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/' | b'>'
        );
    opens.then_some(len)
}

/// Parses attributes from `from` up to the tag's `>`; returns them and the
/// offset just past the `>`.
fn parse_attrs(html: &str, from: usize) -> (Vec<Attr<'_>>, usize) {
    let bytes = html.as_bytes();
    let skip = |mut i: usize, while_: fn(u8) -> bool| {
        while i < bytes.len() && while_(bytes[i]) {
            i += 1;
        }
        i
    };
    let mut attrs = Vec::new();
    let mut i = from;
    loop {
        i = skip(i, |b| b.is_ascii_whitespace() || b == b'/');
        match bytes.get(i) {
            None => return (attrs, bytes.len()),
            Some(b'>') => return (attrs, i + 1),
            Some(_) => {}
        }
        let name_start = i;
        i = skip(i, |b| !b.is_ascii_whitespace() && !b"=>/".contains(&b));
        let name = html[name_start..i].to_ascii_lowercase();
        let after_name = skip(i, |b| b.is_ascii_whitespace());
        let mut value = None;
        let mut value_at = i;
        if bytes.get(after_name) == Some(&b'=') {
            let at = skip(after_name + 1, |b| b.is_ascii_whitespace());
            let (v, start, end) = attr_value(html, at);
            value = Some(v);
            value_at = start;
            i = end;
        }
        attrs.push(Attr {
            name,
            value,
            value_at,
            raw: &html[name_start..i],
        });
    }
}

/// The attribute value starting at `at`, quoted or not; returns it, its
/// offset and the offset just past it.
fn attr_value(html: &str, at: usize) -> (&str, usize, usize) {
    match html.as_bytes().get(at) {
        Some(&quote @ (b'"' | b'\'')) => {
            let start = at + 1;
            let end = html[start..]
                .find(quote as char)
                .map_or(html.len(), |q| start + q);
            (&html[start..end], start, (end + 1).min(html.len()))
        }
        _ => {
            let end = html[at..]
                .find(|c: char| c.is_ascii_whitespace() || c == '>')
                .map_or(html.len(), |e| at + e);
            (&html[at..end], at, end)
        }
    }
}

/// Case-insensitive (ASCII) search for `needle` in `haystack` from `from`.
pub(super) fn find_ci(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    (from..=h.len().checked_sub(n.len())?).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The last case-insensitive match at or after `first`.
pub(super) fn last_ci(haystack: &str, needle: &str, first: usize) -> usize {
    let mut last = first;
    while let Some(next) = find_ci(haystack, needle, last + 1) {
        last = next;
    }
    last
}
