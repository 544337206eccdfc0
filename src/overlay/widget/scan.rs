//! A small HTML scanner: the `<script src>` and stylesheet `<link>`
//! elements of a widget's entry document, with their byte offsets.

/// A problem found while inlining, at a byte offset of the entry HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetError {
    pub offset: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Script,
    Stylesheet,
}

/// A `<script>` with a `src` or a stylesheet `<link>`, found in the entry.
#[derive(Debug)]
pub(super) struct Element<'a> {
    pub(super) kind: Kind,
    /// Byte range of the whole element (`<script …></script>` or `<link …>`).
    pub(super) start: usize,
    pub(super) end: usize,
    attrs: Vec<Attr<'a>>,
}

#[derive(Debug)]
struct Attr<'a> {
    /// Lowercased name.
    name: String,
    value: Option<&'a str>,
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
            Kind::Stylesheet => self.attr("href"),
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

    /// The inline element, keeping the attributes that still mean something.
    pub(super) fn inline(&self, content: &str) -> String {
        let (tag, dropped, closing): (&str, &[&str], &str) = match self.kind {
            Kind::Script => (
                "script",
                &["src", "defer", "async", "integrity", "crossorigin"],
                "</script",
            ),
            Kind::Stylesheet => (
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
        // The content must not end the element early: `</script` inside a
        // script string becomes `<\/script`, which JavaScript reads the same.
        out.push_str(&escape_closing(content, closing));
        out.push_str(&format!("</{tag}>"));
        out
    }
}

fn escape_closing(content: &str, closing: &str) -> String {
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
                attrs,
            };
            if element.reference().is_some() {
                found.push(Ok(element));
            }
            at = end;
        } else if let Some(name_len) = tag_name(rest, "style") {
            let (_, open_end) = parse_attrs(html, start + name_len);
            at = find_ci(html, "</style", open_end).unwrap_or(html.len());
            at = html[at..].find('>').map_or(html.len(), |gt| at + gt + 1);
        } else if let Some(name_len) = tag_name(rest, "link") {
            let (attrs, end) = parse_attrs(html, start + name_len);
            let element = Element {
                kind: Kind::Stylesheet,
                start,
                end,
                attrs,
            };
            let stylesheet = element.attr("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|token| token.eq_ignore_ascii_case("stylesheet"))
            });
            if stylesheet && element.reference().is_some() {
                found.push(Ok(element));
            }
            at = end;
        } else {
            at = start + 1;
        }
    }
    found
}

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
        if bytes.get(after_name) == Some(&b'=') {
            let (v, end) = attr_value(html, skip(after_name + 1, |b| b.is_ascii_whitespace()));
            value = Some(v);
            i = end;
        }
        attrs.push(Attr {
            name,
            value,
            raw: &html[name_start..i],
        });
    }
}

/// The attribute value starting at `at`, quoted or not; returns it and the
/// offset just past it.
fn attr_value(html: &str, at: usize) -> (&str, usize) {
    match html.as_bytes().get(at) {
        Some(&quote @ (b'"' | b'\'')) => {
            let start = at + 1;
            let end = html[start..]
                .find(quote as char)
                .map_or(html.len(), |q| start + q);
            (&html[start..end], (end + 1).min(html.len()))
        }
        _ => {
            let end = html[at..]
                .find(|c: char| c.is_ascii_whitespace() || c == '>')
                .map_or(html.len(), |e| at + e);
            (&html[at..end], end)
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
