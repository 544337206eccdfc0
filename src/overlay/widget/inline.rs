//! A widget's entry document and everything it references, turned into the
//! one HTML document a host renders plus the files the gateway serves.
//!
//! Every reference must resolve: scripts and stylesheets of the entry are
//! inlined (unless a module script loads other modules: it is served, so
//! the modules that import it back share one instance), small images and
//! media become `data:` URIs (hosts allow `data:` for those, not for fonts),
//! and everything else is served by the gateway at a
//! content-addressed URL. A reference to nothing, or out of the widget
//! folder, is an error naming the file and the reference.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use sha2::{Digest, Sha256};

use super::refs::{Ref, RefKind, css_refs, is_rooted, js_refs};
use super::scan::{AssetError, Element, Kind, MEDIA_ATTRS, escape_closing, find_ci, last_ci, scan};

/// How many hex digits of the hash of the served files name their folder.
const PREFIX_DIGITS: usize = 16;

/// How a widget's files are bundled.
#[derive(Debug, Clone, Copy)]
pub struct BundleOptions<'a> {
    /// The entry document's folder, relative to the widget folder (`""` for
    /// the top).
    pub entry_dir: &'a str,
    /// The folder a leading `/` resolves in (the manifest's `base`, `""` for
    /// the widget folder).
    pub base: &'a str,
    /// Media files up to this many bytes become `data:` URIs.
    pub inline_max: usize,
    /// Where served files are: `<public_url>/assets`; `None` when the
    /// gateway has no public URL (a widget that needs served files is then
    /// an error).
    pub asset_base: Option<&'a str>,
    /// What a build writes where its server would put the asset base URL
    /// at run time (`__ASSET_BASE_URL__/x.js`): read as a leading `/`.
    /// `""` for none.
    pub placeholder: &'a str,
}

/// A file the gateway serves for a widget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// Its path in the widget folder.
    pub path: String,
    pub media_type: &'static str,
    pub body: bytes::Bytes,
}

/// What [`bundle`] produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The single HTML document.
    pub html: String,
    /// Script and stylesheet URLs left in place because they are remote
    /// (`http(s)://…` or `//…`), with their byte offsets in the entry: their
    /// origins must be in `csp.resource_domains` or the host blocks them.
    pub remote: Vec<(usize, String)>,
    /// The folder name of the served files (a hash of them all), empty when
    /// there are none.
    pub prefix: String,
    /// The files served under `<asset_base>/<prefix>/<path>`.
    pub assets: Vec<Asset>,
}

/// A problem in a file of the widget: `file` is its path in the widget
/// folder, `None` for the entry document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleError {
    pub file: Option<String>,
    pub offset: usize,
    pub reason: String,
}

/// A root-relative reference of a served file: its range, the file it
/// names and its `?query#fragment`.
type Rooted = (std::ops::Range<usize>, String, String);

/// Reads a file of the widget folder (a normalized relative path that does
/// not leave it lexically; symlinks are the reader's to check).
pub type Read<'r> = dyn FnMut(&str) -> Result<Vec<u8>, String> + 'r;

/// [`bundle`] with every file inlined or turned into a `data:` URI where it
/// can be, and no served files: the entry's folder is `entry_dir`.
pub fn inline_assets(
    html: &str,
    entry_dir: &str,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Inlined, Vec<AssetError>> {
    let options = BundleOptions {
        entry_dir,
        base: "",
        inline_max: usize::MAX,
        asset_base: None,
        placeholder: "",
    };
    let mut read_bytes = |path: &str| read(path).map(String::into_bytes);
    bundle(html, &options, &mut read_bytes).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| AssetError {
                offset: e.offset,
                reason: match e.file {
                    Some(file) => format!("{file}: {}", e.reason),
                    None => e.reason,
                },
            })
            .collect()
    })
}

/// One piece of output: text, or the served URL of a file.
enum Piece {
    Text(String),
    Url(String),
}

/// The document being built.
struct Builder<'o, 'r> {
    options: &'o BundleOptions<'o>,
    read: &'r mut Read<'r>,
    cache: BTreeMap<String, Result<Vec<u8>, String>>,
    /// Files to serve, found so far.
    served: BTreeSet<String>,
    errors: Vec<BundleError>,
}

/// Bundles the entry document `html` (see the module documentation).
pub fn bundle<'r>(
    html: &str,
    options: &BundleOptions<'_>,
    read: &'r mut Read<'r>,
) -> Result<Inlined, Vec<BundleError>> {
    let mut b = Builder {
        options,
        read,
        cache: BTreeMap::new(),
        served: BTreeSet::new(),
        errors: Vec::new(),
    };
    let mut edits: Vec<(usize, usize, Vec<Piece>)> = Vec::new();
    let mut deferred: Vec<Piece> = Vec::new();
    let mut remote = Vec::new();
    for element in scan(html) {
        match element {
            Ok(element) => b.element(html, &element, &mut edits, &mut deferred, &mut remote),
            Err(e) => b.errors.push(BundleError {
                file: None,
                offset: e.offset,
                reason: e.reason,
            }),
        }
    }
    let assets = b.serve_closure();
    if !assets.is_empty() && options.asset_base.is_none() {
        let first = &assets[0].0;
        b.errors.push(BundleError {
            file: None,
            offset: 0,
            reason: format!(
                "{} file(s) of this widget must be served by the gateway (such as {first}), and public_url is not set: set public_url to the gateway's URL as the user's browser reaches it",
                assets.len()
            ),
        });
    }
    if !b.errors.is_empty() {
        return Err(b.errors);
    }
    let prefix = prefix_of(&assets);
    let base = options.asset_base.unwrap_or_default().trim_end_matches('/');
    let url = |path: &str| format!("{base}/{prefix}/{}", encode_path(path));

    // The document: the entry's text with the edits applied, deferred
    // scripts before the last `</body`.
    if !deferred.is_empty() {
        let at = find_ci(html, "</body", 0).map(|first| last_ci(html, "</body", first));
        match at.filter(|at| edits.iter().all(|(s, e, _)| at < s || at >= e)) {
            Some(at) => edits.push((at, at, deferred)),
            None => edits.push((html.len(), html.len(), deferred)),
        }
    }
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(html.len());
    let mut copied = 0;
    for (start, end, pieces) in &edits {
        out.push_str(&html[copied..*start]);
        for piece in pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Url(path) => out.push_str(&url(path)),
            }
        }
        copied = *end;
    }
    out.push_str(&html[copied..]);

    let assets = assets
        .into_iter()
        .map(|(path, body, rooted)| {
            let body = rewrite_root_refs(body, &rooted, &url);
            Asset {
                media_type: media_type(&path),
                path,
                body: body.into(),
            }
        })
        .collect();
    Ok(Inlined {
        html: out,
        remote,
        prefix,
        assets,
    })
}

/// The folder name of a set of served files: a hash of their paths and
/// original contents.
fn prefix_of(assets: &[(String, Vec<u8>, Vec<Rooted>)]) -> String {
    if assets.is_empty() {
        return String::new();
    }
    let mut hasher = Sha256::new();
    for (path, body, _) in assets {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((body.len() as u64).to_le_bytes());
        hasher.update(body);
    }
    hex::encode(hasher.finalize())[..PREFIX_DIGITS].to_owned()
}

/// A served file's root-relative references (`/assets/x.js`) made absolute
/// URLs of the served copy; relative ones resolve by themselves.
fn rewrite_root_refs(body: Vec<u8>, rooted: &[Rooted], url: &dyn Fn(&str) -> String) -> Vec<u8> {
    if rooted.is_empty() {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut copied = 0;
    for (range, target, suffix) in rooted {
        out.extend_from_slice(&body[copied..range.start]);
        out.extend_from_slice(url(target).as_bytes());
        out.extend_from_slice(suffix.as_bytes());
        copied = range.end;
    }
    out.extend_from_slice(&body[copied..]);
    out
}

/// The `?query#fragment` of a reference.
fn suffix(reference: &str) -> &str {
    reference.find(['?', '#']).map_or("", |at| &reference[at..])
}

impl Builder<'_, '_> {
    fn read(&mut self, path: &str) -> Result<Vec<u8>, String> {
        if let Some(cached) = self.cache.get(path) {
            return cached.clone();
        }
        let read = (self.read)(path);
        self.cache.insert(path.to_owned(), read.clone());
        read
    }

    /// A script or stylesheet to inline, read again each time (each copy
    /// counts against the widget's size limit).
    fn text(&mut self, path: &str) -> Result<String, String> {
        let bytes = (self.read)(path);
        self.cache.insert(path.to_owned(), bytes.clone());
        let bytes = bytes?;
        String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
    }

    /// The path a reference of a file in `dir` names.
    fn resolve(&self, reference: &str, dir: &str) -> Reference {
        let placeholder = self.options.placeholder;
        match reference
            .strip_prefix(placeholder)
            .filter(|_| !placeholder.is_empty())
        {
            Some(rest) => classify(
                &format!("/{}", rest.trim_start_matches('/')),
                dir,
                self.options.base,
            ),
            None => classify(reference, dir, self.options.base),
        }
    }

    /// One element of the entry document.
    fn element(
        &mut self,
        html: &str,
        element: &Element<'_>,
        edits: &mut Vec<(usize, usize, Vec<Piece>)>,
        deferred: &mut Vec<Piece>,
        remote: &mut Vec<(usize, String)>,
    ) {
        let entry_dir = self.options.entry_dir;
        let fail = |what: &str, reference: &str, reason: String| BundleError {
            file: None,
            offset: element.start,
            reason: format!("{what} \"{reference}\": {reason}"),
        };
        match element.kind {
            Kind::Script | Kind::Stylesheet => {
                let Some(reference) = element.reference() else {
                    return;
                };
                let what = if element.kind == Kind::Script {
                    "script src"
                } else {
                    "stylesheet href"
                };
                let path = match self.resolve(reference, entry_dir) {
                    Reference::Remote => {
                        remote.push((element.start, reference.to_owned()));
                        return;
                    }
                    Reference::Opaque => return,
                    Reference::Invalid(reason) => {
                        self.errors.push(fail(what, reference, reason));
                        return;
                    }
                    Reference::Local(path) => path,
                };
                let text = match self.text(&path) {
                    Ok(text) => text,
                    Err(reason) => {
                        self.errors.push(fail(what, reference, reason));
                        return;
                    }
                };
                let dir = parent(&path);
                if element.kind == Kind::Script {
                    let (refs, problems) = js_refs(&text, self.options.placeholder);
                    let loads_modules = element.is_module_script()
                        && (!problems.is_empty()
                            || refs.iter().any(|r| {
                                matches!(
                                    r.kind,
                                    RefKind::Import | RefKind::DynamicImport | RefKind::ModuleUrl
                                ) && matches!(self.resolve(&r.value, &dir), Reference::Local(_))
                            }));
                    if loads_modules {
                        // Served, so modules that import it share its instance.
                        self.served.insert(path.clone());
                        if let Some(src) = element.attrs.iter().find(|a| a.name == "src") {
                            let start = src.value_at;
                            let end = start + src.value.unwrap_or_default().len();
                            edits.push((start, end, vec![Piece::Url(path)]));
                        }
                        return;
                    }
                    let content = self.inlined_content(&path, &text, &refs, &problems);
                    let pieces = wrap(element, content);
                    edits.push((element.start, element.end, Vec::new()));
                    if element.is_deferred_script() {
                        deferred.extend(pieces);
                    } else {
                        edits.last_mut().expect("just pushed").2 = pieces;
                    }
                } else {
                    let refs = css_refs(&text);
                    let content = self.inlined_content(&path, &text, &refs, &[]);
                    edits.push((element.start, element.end, wrap(element, content)));
                }
            }
            Kind::Style => {
                let css = &html[element.content.clone()];
                let refs = css_refs(css);
                let start = element.content.start;
                let pieces = self.rewritten(None, css, entry_dir, &refs);
                edits.push((start, element.content.end, pieces));
            }
            Kind::Link => {
                let Some(href) = element.attrs.iter().find(|a| a.name == "href") else {
                    return;
                };
                let served = ["manifest", "modulepreload", "preload", "prefetch"]
                    .iter()
                    .any(|rel| element.has_rel(rel));
                self.attribute(html, element, href, served, edits);
            }
            Kind::Media => {
                for attr in element
                    .attrs
                    .iter()
                    .filter(|a| MEDIA_ATTRS.contains(&a.name.as_str()))
                {
                    self.attribute(html, element, attr, false, edits);
                }
            }
        }
    }

    /// An attribute naming one file (or, `srcset`, several): each becomes
    /// a `data:` URI or a served URL.
    fn attribute(
        &mut self,
        html: &str,
        element: &Element<'_>,
        attr: &super::scan::Attr<'_>,
        served: bool,
        edits: &mut Vec<(usize, usize, Vec<Piece>)>,
    ) {
        let Some(value) = attr.value else {
            return;
        };
        let start = attr.value_at;
        let end = start + value.len();
        let what = format!("{} {}", element_name(html, element), attr.name);
        if attr.name == "srcset" {
            let mut pieces = Vec::new();
            for (i, (url, descriptor)) in srcset(value).into_iter().enumerate() {
                if i > 0 {
                    pieces.push(Piece::Text(", ".into()));
                }
                match self.file_piece(url, self.options.entry_dir, served) {
                    Ok(Some(piece)) => pieces.push(piece),
                    Ok(None) => pieces.push(Piece::Text(url.to_owned())),
                    Err(reason) => self.errors.push(BundleError {
                        file: None,
                        offset: element.start,
                        reason: format!("{what} \"{url}\": {reason}"),
                    }),
                }
                if !descriptor.trim().is_empty() {
                    pieces.push(Piece::Text(format!(" {}", descriptor.trim())));
                }
            }
            edits.push((start, end, pieces));
            return;
        }
        let reference = value.trim();
        if reference.is_empty() {
            return;
        }
        match self.file_piece(reference, self.options.entry_dir, served) {
            Ok(Some(piece)) => edits.push((start, end, vec![piece])),
            Ok(None) => {}
            Err(reason) => self.errors.push(BundleError {
                file: None,
                offset: element.start,
                reason: format!("{what} \"{reference}\": {reason}"),
            }),
        }
    }

    /// What replaces a reference to a file in the document: a `data:` URI
    /// (a small media file, unless `served`), or its served URL; `None` for
    /// a remote or opaque reference, left as it is.
    fn file_piece(
        &mut self,
        reference: &str,
        dir: &str,
        served: bool,
    ) -> Result<Option<Piece>, String> {
        let path = match self.resolve(reference, dir) {
            Reference::Remote | Reference::Opaque => return Ok(None),
            Reference::Invalid(reason) => return Err(reason),
            Reference::Local(path) => path,
        };
        let bytes = self
            .read(&path)
            .map_err(|reason| format!("{path}: {reason}"))?;
        let media = media_type(&path);
        // Hosts' CSP allows `data:` for images and media, not for fonts or
        // scripts.
        let leaf = ["image/", "audio/", "video/"]
            .iter()
            .any(|kind| media.starts_with(kind));
        if !served && leaf && bytes.len() <= self.options.inline_max {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            return Ok(Some(Piece::Text(format!(
                "data:{media};base64,{data}{}",
                fragment(reference)
            ))));
        }
        self.served.insert(path.clone());
        Ok(Some(Piece::Url(path)))
    }

    /// The content of an inlined script or stylesheet, each reference it
    /// makes resolved (see [`Builder::rewritten`]).
    fn inlined_content(
        &mut self,
        path: &str,
        text: &str,
        refs: &[Ref],
        problems: &[super::refs::ScanProblem],
    ) -> Vec<Piece> {
        for problem in problems {
            self.errors.push(BundleError {
                file: Some(path.to_owned()),
                offset: problem.offset,
                reason: problem.reason.clone(),
            });
        }
        let dir = parent(path);
        self.rewritten(Some(path), text, &dir, refs)
    }

    /// `text` (from file `path`, or the entry) with its references replaced
    /// by what the document can load: a `data:` URI or a served URL; a
    /// source map comment is dropped (its file must exist all the same),
    /// and a root-relative string literal is rewritten only when it names a
    /// file.
    fn rewritten(&mut self, path: Option<&str>, text: &str, dir: &str, refs: &[Ref]) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut copied = 0;
        for r in refs {
            let piece = match r.kind {
                RefKind::RootString => match self.resolve(&r.value, dir) {
                    Reference::Local(target) if self.read(&target).is_ok() => {
                        self.served.insert(target.clone());
                        Some(Piece::Url(target))
                    }
                    _ => None,
                },
                RefKind::SourceMap => self
                    .must_resolve(path, r, dir)
                    .map(|_| Piece::Text(String::new())),
                RefKind::CssImport => self.must_resolve(path, r, dir).map(|target| {
                    self.served.insert(target.clone());
                    Piece::Url(target)
                }),
                _ => match self.file_piece(&r.value, dir, false) {
                    Ok(piece) => piece,
                    Err(reason) => {
                        self.errors.push(ref_error(path, r, reason));
                        None
                    }
                },
            };
            if let Some(piece) = piece {
                let before = &text[copied..r.range.start];
                pieces.push(Piece::Text(before.to_owned()));
                let is_url = matches!(piece, Piece::Url(_));
                pieces.push(piece);
                if is_url && !suffix(&r.value).is_empty() {
                    pieces.push(Piece::Text(suffix(&r.value).to_owned()));
                }
                copied = r.range.end;
            }
        }
        pieces.push(Piece::Text(text[copied..].to_owned()));
        pieces
    }

    /// The path a reference that must name a file names, or an error.
    fn must_resolve(&mut self, path: Option<&str>, r: &Ref, dir: &str) -> Option<String> {
        match self.resolve(&r.value, dir) {
            Reference::Remote | Reference::Opaque => None,
            Reference::Invalid(reason) => {
                self.errors.push(ref_error(path, r, reason));
                None
            }
            Reference::Local(target) => match self.read(&target) {
                Ok(_) => Some(target),
                Err(reason) => {
                    self.errors
                        .push(ref_error(path, r, format!("{target}: {reason}")));
                    None
                }
            },
        }
    }

    /// Every file the served ones reference, served too; each with its
    /// root-relative references, which the served copy makes absolute.
    fn serve_closure(&mut self) -> Vec<(String, Vec<u8>, Vec<Rooted>)> {
        let mut done: BTreeMap<String, (Vec<u8>, Vec<Rooted>)> = BTreeMap::new();
        let mut todo: Vec<String> = self.served.iter().cloned().collect();
        while let Some(path) = todo.pop() {
            if done.contains_key(&path) {
                continue;
            }
            let Ok(bytes) = self.read(&path) else {
                continue; // reported where it was referenced
            };
            let dir = parent(&path);
            let media = media_type(&path);
            let mut refs = match (media, std::str::from_utf8(&bytes)) {
                ("text/javascript", Ok(text)) => {
                    let (refs, problems) = js_refs(text, self.options.placeholder);
                    for p in problems {
                        self.errors.push(BundleError {
                            file: Some(path.clone()),
                            offset: p.offset,
                            reason: p.reason,
                        });
                    }
                    refs
                }
                ("text/css", Ok(text)) => css_refs(text),
                _ => Vec::new(),
            };
            let mut kept = Vec::new();
            for r in refs.drain(..) {
                let target = if r.kind == RefKind::RootString {
                    match self.resolve(&r.value, &dir) {
                        Reference::Local(t) if self.read(&t).is_ok() => Some(t),
                        _ => None,
                    }
                } else if matches!(r.kind, RefKind::Import | RefKind::DynamicImport)
                    && is_bare(&r.value)
                {
                    self.errors.push(ref_error(
                        Some(&path),
                        &r,
                        "a bare module specifier, which a browser cannot resolve: bundle it".into(),
                    ));
                    None
                } else {
                    self.must_resolve(Some(&path), &r, &dir)
                };
                if let Some(target) = target {
                    if !done.contains_key(&target) {
                        todo.push(target.clone());
                    }
                    if is_rooted(&r.value, self.options.placeholder) {
                        kept.push((r.range.clone(), target, suffix(&r.value).to_owned()));
                    }
                }
            }
            done.insert(path, (bytes, kept));
        }
        done.into_iter()
            .map(|(path, (bytes, refs))| (path, bytes, refs))
            .collect()
    }
}

fn ref_error(path: Option<&str>, r: &Ref, reason: String) -> BundleError {
    let what = match r.kind {
        RefKind::Import => "import",
        RefKind::DynamicImport => "import()",
        RefKind::ModuleUrl => "new URL()",
        RefKind::RootString => "string",
        RefKind::CssUrl => "url()",
        RefKind::CssImport => "@import",
        RefKind::SourceMap => "sourceMappingURL",
    };
    BundleError {
        file: path.map(str::to_owned),
        offset: r.range.start,
        reason: format!("{what} \"{}\": {reason}", r.value),
    }
}

/// An inlined element: its opening tag, content and closing tag.
fn wrap(element: &Element<'_>, content: Vec<Piece>) -> Vec<Piece> {
    let (open, closing, close) = element.inline_open();
    let mut pieces = vec![Piece::Text(open)];
    for piece in content {
        pieces.push(match piece {
            Piece::Text(text) => Piece::Text(escape_closing(&text, closing)),
            url => url,
        });
    }
    pieces.push(Piece::Text(close.to_owned()));
    pieces
}

/// The tag name of `element`, lowercased.
fn element_name(html: &str, element: &Element<'_>) -> String {
    html[element.start + 1..]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The candidates of a `srcset`: a URL (up to whitespace, so a `data:` URL
/// keeps its commas; a trailing comma ends it) and its descriptor.
fn srcset(value: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            return out;
        }
        let url_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let url = &rest[..url_end];
        if let Some(url) = url.strip_suffix(',') {
            out.push((url.trim_end_matches(','), ""));
            rest = &rest[url_end..];
            continue;
        }
        let after = &rest[url_end..];
        let descriptor_end = after.find(',').unwrap_or(after.len());
        out.push((url, after[..descriptor_end].trim()));
        rest = &after[descriptor_end..];
    }
}

/// The folder of a relative path (`""` for the top).
fn parent(path: &str) -> String {
    path.rsplit_once('/')
        .map_or(String::new(), |(dir, _)| dir.to_owned())
}

/// A `#fragment` kept on a `data:` URI (an SVG sprite's `#id`).
fn fragment(reference: &str) -> &str {
    reference.find('#').map_or("", |at| &reference[at..])
}

/// A module specifier that is neither relative, root-relative nor a URL.
fn is_bare(specifier: &str) -> bool {
    !(specifier.starts_with("./")
        || specifier.starts_with("../")
        || specifier.starts_with('/')
        || has_scheme(specifier))
}

/// Where a reference points.
#[derive(Debug, PartialEq, Eq)]
enum Reference {
    /// A file of the widget folder, normalized relative path.
    Local(String),
    /// `http(s)://…` or protocol-relative `//…`.
    Remote,
    /// `data:`, `blob:` and other schemes, or a bare `#fragment`: nothing to
    /// fetch or inline.
    Opaque,
    Invalid(String),
}

fn classify(reference: &str, dir: &str, base: &str) -> Reference {
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Reference::Remote;
    }
    if has_scheme(reference) || reference.starts_with('#') {
        return Reference::Opaque;
    }
    if reference.contains('\\') {
        return Reference::Invalid("use `/` as the path separator".into());
    }
    // `app.js?v=2` and `app.css#x` name the file before the `?`/`#`; a
    // `%20` in it is a space of the file's name.
    let path = reference.split(['?', '#']).next().unwrap_or_default();
    let Ok(decoded) = percent_decode_str(path).decode_utf8() else {
        return Reference::Invalid("is not UTF-8 once its %-escapes are decoded".into());
    };
    let (dir, path) = match decoded.strip_prefix('/') {
        Some(rooted) => (base, rooted),
        None => (dir, &*decoded),
    };
    match normalize(dir, path) {
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

/// What a served file's path keeps of itself in a URL: letters, digits,
/// `/` and `-_.~`; the rest is escaped, so the URL reads the same in an HTML
/// attribute, a CSS `url()` and a JavaScript string.
const PATH_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A served file's path as it goes in its URL: a space is `%20`, a `%` is
/// `%25`, so the path the browser asks for decodes to the file's name.
pub fn encode_path(path: &str) -> String {
    utf8_percent_encode(path, PATH_KEEPS).to_string()
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

/// The media type a file is served with, by its extension.
pub fn media_type(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "js" | "mjs" | "cjs" => "text/javascript",
        "css" => "text/css",
        "html" | "htm" => "text/html",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "wav" => "audio/wav",
        "vtt" => "text/vtt",
        "txt" => "text/plain",
        _ => "application/octet-stream",
    }
}
