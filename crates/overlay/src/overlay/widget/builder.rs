//! The document builder: each element of a widget's entry document, and
//! each reference in the scripts and stylesheets it loads, resolved to what
//! the host can load (inlined text, a `data:` URI or a served URL), the files
//! to serve gathered, and every reference to nothing reported.
//!
//! - `elements`: the elements of the entry document: scripts, stylesheets,
//!   styles, links and media.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;

use super::media::media_type;
use super::options::{BundleOptions, Read};
use super::paths::parent;
use super::refs::{Ref, RefKind, css_refs, is_rooted, js_refs};
use super::scan::{Element, escape_closing};
use super::urls::{Reference, classify, fragment, is_bare, srcset, suffix};

mod elements;

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
pub(super) type Rooted = (std::ops::Range<usize>, String, String);

/// One piece of output: text, or the served URL of a file.
pub(super) enum Piece {
    Text(String),
    Url(String),
}

/// The document being built.
pub(super) struct Builder<'o, 'r> {
    options: &'o BundleOptions<'o>,
    read: &'r mut Read<'r>,
    cache: BTreeMap<String, Result<Vec<u8>, String>>,
    /// Files to serve, found so far.
    served: BTreeSet<String>,
    pub(super) errors: Vec<BundleError>,
}

impl<'o, 'r> Builder<'o, 'r> {
    /// A builder with nothing read yet.
    pub(super) fn new(options: &'o BundleOptions<'o>, read: &'r mut Read<'r>) -> Self {
        Builder {
            options,
            read,
            cache: BTreeMap::new(),
            served: BTreeSet::new(),
            errors: Vec::new(),
        }
    }

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
    pub(super) fn serve_closure(&mut self) -> Vec<(String, Vec<u8>, Vec<Rooted>)> {
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
