//! A widget folder's content turned into its MCP resource, without touching
//! the filesystem: local scripts and stylesheets inlined into one HTML
//! document (the host renders a single document in a sandbox with no server
//! behind it), the resource `_meta` in both vocabularies, and a URI versioned
//! by content hash (hosts cache templates by URI).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::WidgetManifest;

/// The MIME type of MCP Apps HTML resources, exactly as the spec writes it.
pub const MCP_APP_MIME: &str = "text/html;profile=mcp-app";

/// How many hex digits of the content hash go into the URI: 48 bits, plenty
/// to tell the versions of one widget apart.
const HASH_DIGITS: usize = 12;

/// One compiled widget version: what `resources/read` returns for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Widget {
    /// The folder name.
    pub name: String,
    /// `ui://<name>/<hash>.html`, where `<hash>` is the first 12 hex digits
    /// of the SHA-256 of the HTML and the `_meta` together.
    pub uri: String,
    /// The single HTML document, assets inlined.
    pub html: String,
    /// The resource `_meta` (possibly empty).
    pub meta: Map<String, Value>,
    /// `title` of the `resources/list` entry.
    pub title: Option<String>,
    /// `description` of the `resources/list` entry.
    pub description: Option<String>,
}

impl Widget {
    /// Builds a widget from its already validated manifest and its final
    /// HTML (see [`inline_assets`]).
    pub fn compile(name: &str, manifest: &WidgetManifest, html: String) -> Widget {
        let meta = resource_meta(manifest);
        let uri = versioned_uri(name, &html, &meta);
        Widget {
            name: name.to_owned(),
            uri,
            html,
            meta,
            title: manifest.title.clone(),
            description: manifest.description.clone(),
        }
    }
}

/// `ui://<name>/<hash>.html`. The hash covers the metadata too: a CSP change
/// alone must also reach hosts that cached the old version.
pub fn versioned_uri(name: &str, html: &str, meta: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(html.as_bytes());
    hasher.update([0u8]);
    // Serializing a Map of plain JSON cannot fail.
    hasher.update(serde_json::to_vec(meta).unwrap_or_default());
    let digest = hex::encode(hasher.finalize());
    format!("ui://{name}/{}.html", &digest[..HASH_DIGITS])
}

/// The resource `_meta`: MCP Apps `ui.*` first, then the ChatGPT mirrors.
/// Only what the manifest declares is emitted, so host defaults still apply
/// to the rest.
pub fn resource_meta(manifest: &WidgetManifest) -> Map<String, Value> {
    let mut ui = Map::new();
    if let Some(csp) = &manifest.csp {
        let mut standard = Map::new();
        let lists = [
            ("connectDomains", &csp.connect_domains),
            ("resourceDomains", &csp.resource_domains),
            ("frameDomains", &csp.frame_domains),
            ("baseUriDomains", &csp.base_uri_domains),
        ];
        for (key, list) in lists {
            if let Some(list) = list {
                standard.insert(key.into(), json!(list));
            }
        }
        if !standard.is_empty() {
            ui.insert("csp".into(), Value::Object(standard));
        }
    }
    if let Some(domain) = &manifest.domain {
        ui.insert("domain".into(), json!(domain));
    }
    if let Some(border) = manifest.prefers_border {
        ui.insert("prefersBorder".into(), json!(border));
    }
    if let Some(permissions) = permissions(manifest) {
        ui.insert("permissions".into(), permissions);
    }

    let mut meta = Map::new();
    if !ui.is_empty() {
        meta.insert("ui".into(), Value::Object(ui));
    }
    if let Some(csp) = &manifest.csp {
        // ChatGPT types connect_domains and resource_domains as required, so
        // they are always written once a [csp] table exists.
        let mut legacy = Map::new();
        let or_empty = |list: &Option<Vec<String>>| json!(list.as_deref().unwrap_or_default());
        legacy.insert("connect_domains".into(), or_empty(&csp.connect_domains));
        legacy.insert("resource_domains".into(), or_empty(&csp.resource_domains));
        if let Some(frames) = &csp.frame_domains {
            legacy.insert("frame_domains".into(), json!(frames));
        }
        if let Some(redirects) = &csp.redirect_domains {
            legacy.insert("redirect_domains".into(), json!(redirects));
        }
        meta.insert("openai/widgetCSP".into(), Value::Object(legacy));
    }
    if let Some(domain) = &manifest.domain {
        meta.insert("openai/widgetDomain".into(), json!(domain));
    }
    if let Some(border) = manifest.prefers_border {
        meta.insert("openai/widgetPrefersBorder".into(), json!(border));
    }
    if let Some(description) = &manifest.description {
        meta.insert("openai/widgetDescription".into(), json!(description));
    }
    if let Some(modes) = &manifest.display_modes {
        let modes: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
        meta.insert(
            "openai/ui".into(),
            json!({ "availableDisplayModes": modes }),
        );
    }
    meta
}

/// `{camera: {}, …}` for the permissions asked for, `None` if none is.
fn permissions(manifest: &WidgetManifest) -> Option<Value> {
    let p = manifest.permissions?;
    let asked = [
        ("camera", p.camera),
        ("microphone", p.microphone),
        ("geolocation", p.geolocation),
        ("clipboardWrite", p.clipboard_write),
    ];
    let map: Map<String, Value> = asked
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(key, _)| (key.to_owned(), json!({})))
        .collect();
    (!map.is_empty()).then_some(Value::Object(map))
}

// === asset inlining ===

/// A problem found while inlining, at a byte offset of the entry HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetError {
    pub offset: usize,
    pub reason: String,
}

/// What [`inline_assets`] produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The single HTML document.
    pub html: String,
    /// Script and stylesheet URLs left in place because they are remote
    /// (`http(s)://…` or `//…`), with their byte offsets in the entry: their
    /// origins must be in `csp.resource_domains` or the host blocks them.
    pub remote: Vec<(usize, String)>,
}

/// Replaces `<script src="local.js"></script>` by `<script>…</script>` and
/// `<link rel="stylesheet" href="local.css">` by `<style>…</style>`.
///
/// `read` receives the asset's path relative to the widget folder, already
/// normalized and known not to leave it lexically (`entry_dir` is the entry
/// document's folder, relative to the widget folder, `""` for the top);
/// symlinks are the reader's to check. Remote and `data:` URLs stay as they
/// are. Classic `defer` scripts move to the end of `<body>`, where an inline
/// script runs at about the moment a deferred one would.
pub fn inline_assets(
    html: &str,
    entry_dir: &str,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Inlined, Vec<AssetError>> {
    let mut out = String::with_capacity(html.len());
    let mut deferred = String::new();
    let mut remote = Vec::new();
    let mut errors = Vec::new();
    let mut copied = 0;
    for element in scan(html) {
        let element = match element {
            Ok(element) => element,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        let Some(reference) = element.reference() else {
            continue;
        };
        let resolved = match classify(reference, entry_dir) {
            Reference::Remote => {
                remote.push((element.start, reference.to_owned()));
                continue;
            }
            Reference::Opaque => continue,
            Reference::Invalid(reason) => {
                errors.push(error_at(element.start, &element, reference, reason));
                continue;
            }
            Reference::Local(path) => path,
        };
        let content = match read(&resolved) {
            Ok(content) => content,
            Err(reason) => {
                errors.push(error_at(element.start, &element, reference, reason));
                continue;
            }
        };
        out.push_str(&html[copied..element.start]);
        copied = element.end;
        let replacement = element.inline(&content);
        if element.is_deferred_script() {
            deferred.push_str(&replacement);
        } else {
            out.push_str(&replacement);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    out.push_str(&html[copied..]);
    if !deferred.is_empty() {
        match find_ci(&out, "</body", 0).map(|first| last_ci(&out, "</body", first)) {
            Some(at) => out.insert_str(at, &deferred),
            None => out.push_str(&deferred),
        }
    }
    Ok(Inlined { html: out, remote })
}

fn error_at(offset: usize, element: &Element<'_>, reference: &str, reason: String) -> AssetError {
    let what = match element.kind {
        Kind::Script => "script src",
        Kind::Stylesheet => "stylesheet href",
    };
    AssetError {
        offset,
        reason: format!("{what} \"{reference}\": {reason}"),
    }
}

/// Where a `src`/`href` points.
#[derive(Debug, PartialEq, Eq)]
enum Reference {
    /// A file of the widget folder, normalized relative path.
    Local(String),
    /// `http(s)://…` or protocol-relative `//…`.
    Remote,
    /// `data:`, `blob:` and other schemes: nothing to fetch or inline.
    Opaque,
    Invalid(String),
}

fn classify(reference: &str, entry_dir: &str) -> Reference {
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Reference::Remote;
    }
    if has_scheme(reference) {
        return Reference::Opaque;
    }
    if reference.starts_with('/') {
        return Reference::Invalid(
            "absolute paths are not allowed; write a path relative to the widget folder".into(),
        );
    }
    if reference.contains('\\') {
        return Reference::Invalid("use `/` as the path separator".into());
    }
    // `app.js?v=2` and `app.css#x` name the file before the `?`/`#`.
    let path = reference.split(['?', '#']).next().unwrap_or_default();
    match normalize(entry_dir, path) {
        Ok(path) => Reference::Local(path),
        Err(reason) => Reference::Invalid(reason),
    }
}

fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
}

/// Joins `path` to `base` and folds `.` and `..`, refusing to climb above the
/// widget folder.
pub fn normalize(base: &str, path: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("leaves the widget folder".into());
                }
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("names no file".into());
    }
    Ok(parts.join("/"))
}

// === the scanner ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Script,
    Stylesheet,
}

/// A `<script>` with a `src` or a stylesheet `<link>`, found in the entry.
#[derive(Debug)]
struct Element<'a> {
    kind: Kind,
    /// Byte range of the whole element (`<script …></script>` or `<link …>`).
    start: usize,
    end: usize,
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
    fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.value)
    }

    fn reference(&self) -> Option<&'a str> {
        let value = match self.kind {
            Kind::Script => self.attr("src"),
            Kind::Stylesheet => self.attr("href"),
        }?;
        let value = value.trim();
        (!value.is_empty()).then_some(value)
    }

    fn is_deferred_script(&self) -> bool {
        let module = self
            .attr("type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("module"));
        self.kind == Kind::Script && !module && self.attrs.iter().any(|a| a.name == "defer")
    }

    /// The inline element, keeping the attributes that still mean something.
    fn inline(&self, content: &str) -> String {
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
fn scan(html: &str) -> Vec<Result<Element<'_>, AssetError>> {
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
fn find_ci(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    (from..=h.len().checked_sub(n.len())?).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The last case-insensitive match at or after `first`.
fn last_ci(haystack: &str, needle: &str, first: usize) -> usize {
    let mut last = first;
    while let Some(next) = find_ci(haystack, needle, last + 1) {
        last = next;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(path: &str) -> Result<String, String> {
        match path {
            "app.js" => Ok("console.log('</script>')".into()),
            "lib/util.js" => Ok("var u = 1;".into()),
            "style.css" => Ok("body { color: red }".into()),
            other => Err(format!("no file {other}")),
        }
    }

    fn inline(html: &str) -> Result<Inlined, Vec<AssetError>> {
        inline_assets(html, "", &mut files)
    }

    #[test]
    fn inlines_local_scripts_and_stylesheets() {
        let html = r#"<html><head><link rel="stylesheet" href="style.css" media="screen"><script type="module" src="app.js"></script></head><body></body></html>"#;
        let out = inline(html).unwrap();
        assert_eq!(
            out.html,
            r#"<html><head><style media="screen">body { color: red }</style><script type="module">console.log('<\/script>')</script></head><body></body></html>"#
        );
        assert!(out.remote.is_empty());
    }

    #[test]
    fn deferred_classic_scripts_move_to_the_end_of_body() {
        let html = "<head><script defer src=\"app.js\"></script><script src=\"./lib/util.js\"></script></head><BODY><p>x</p></BODY>";
        let out = inline(html).unwrap().html;
        assert_eq!(
            out,
            "<head><script>var u = 1;</script></head><BODY><p>x</p><script>console.log('<\\/script>')</script></BODY>"
        );
    }

    #[test]
    fn leaves_remote_data_comments_and_inline_code_alone() {
        let html = concat!(
            "<!-- <script src=\"gone.js\"></script> -->",
            "<script>var s = '<script src=\"gone.js\"></script>';</script>",
            "<style>/* <link rel=stylesheet href=gone.css> */</style>",
            "<script src=\"https://cdn.example.com/x.js\"></script>",
            "<script src=\"data:text/javascript,1\"></script>",
            "<link rel=icon href=icon.png>",
        );
        let out = inline(html).unwrap();
        // As in a browser, the first `</script` ends an inline script, so
        // the string above holds no element of its own.
        assert!(
            out.html
                .starts_with("<!-- <script src=\"gone.js\"></script> -->")
        );
        assert_eq!(out.remote.len(), 1);
        assert_eq!(out.remote[0].1, "https://cdn.example.com/x.js");
    }

    #[test]
    fn rejects_paths_outside_the_folder_and_missing_files() {
        let cases = [
            ("<script src=\"/abs.js\"></script>", "absolute paths"),
            (
                "<script src=\"../up.js\"></script>",
                "leaves the widget folder",
            ),
            ("<script src=\"a\\b.js\"></script>", "separator"),
            ("<script src=\"missing.js\"></script>", "no file missing.js"),
            (
                "<link rel=\"stylesheet\" href=\"x/../../y.css\">",
                "leaves the widget folder",
            ),
            ("<script src=\"app.js\">", "never closed"),
        ];
        for (html, expected) in cases {
            let errors = inline(html).unwrap_err();
            assert_eq!(errors.len(), 1, "{html}");
            assert!(
                errors[0].reason.contains(expected),
                "{html}: {:?}",
                errors[0]
            );
            assert_eq!(errors[0].offset, 0);
        }
    }

    #[test]
    fn resolves_relative_to_the_entry_folder() {
        let mut seen = Vec::new();
        let mut read = |path: &str| {
            seen.push(path.to_owned());
            Ok(String::new())
        };
        let html = "<script src=\"../app.js?v=3\"></script><script src=\"util.js\"></script>";
        inline_assets(html, "lib", &mut read).unwrap();
        assert_eq!(seen, ["app.js", "lib/util.js"]);
    }

    #[test]
    fn uri_changes_with_html_and_meta() {
        let manifest = WidgetManifest::default();
        let a = Widget::compile("clock", &manifest, "<p>a</p>".into());
        let b = Widget::compile("clock", &manifest, "<p>b</p>".into());
        let bordered = WidgetManifest {
            prefers_border: Some(true),
            ..WidgetManifest::default()
        };
        let c = Widget::compile("clock", &bordered, "<p>a</p>".into());
        assert!(a.uri.starts_with("ui://clock/") && a.uri.ends_with(".html"));
        assert_eq!(
            a.uri.len(),
            "ui://clock/".len() + HASH_DIGITS + ".html".len()
        );
        assert_ne!(a.uri, b.uri);
        assert_ne!(a.uri, c.uri);
        assert_eq!(
            a.uri,
            Widget::compile("clock", &manifest, "<p>a</p>".into()).uri
        );
    }
}
