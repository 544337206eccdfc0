//! The elements of a widget's entry document: a script or stylesheet file
//! inlined, served or left remote; a `<style>`'s references rewritten; a
//! link's or a media element's files made a `data:` URI or a served URL.

use super::super::paths::parent;
use super::super::refs::{RefKind, css_refs, js_refs};
use super::super::scan::{Element, Kind, MEDIA_ATTRS};
use super::super::urls::Reference;
use super::{Builder, BundleError, Piece, wrap};

impl Builder<'_, '_> {
    /// One element of the entry document.
    pub(crate) fn element(
        &mut self,
        html: &str,
        element: &Element<'_>,
        edits: &mut Vec<(usize, usize, Vec<Piece>)>,
        deferred: &mut Vec<Piece>,
        remote: &mut Vec<(usize, String)>,
    ) {
        let entry_dir = self.options.entry_dir;
        match element.kind {
            Kind::Script | Kind::Stylesheet => self.linked(element, edits, deferred, remote),
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

    /// A `<script src>` or `<link rel=stylesheet>` of the entry document:
    /// its file inlined, served (a module script whose imports load), or
    /// left to the network (a remote one).
    fn linked(
        &mut self,
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
        if element.kind == Kind::Script {
            self.script(element, path, &text, edits, deferred);
        } else {
            let refs = css_refs(&text);
            let content = self.inlined_content(&path, &text, &refs, &[]);
            edits.push((element.start, element.end, wrap(element, content)));
        }
    }

    /// A script file `path` holding `text`: served when it is a module
    /// whose imports load (so that modules importing it share its
    /// instance), else inlined where it stands (or, deferred, at the end).
    fn script(
        &mut self,
        element: &Element<'_>,
        path: String,
        text: &str,
        edits: &mut Vec<(usize, usize, Vec<Piece>)>,
        deferred: &mut Vec<Piece>,
    ) {
        let dir = parent(&path);
        let (refs, problems) = js_refs(text, self.options.placeholder);
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
        let content = self.inlined_content(&path, text, &refs, &problems);
        let pieces = wrap(element, content);
        edits.push((element.start, element.end, Vec::new()));
        if element.is_deferred_script() {
            deferred.extend(pieces);
        } else {
            edits.last_mut().expect("just pushed").2 = pieces;
        }
    }
}
