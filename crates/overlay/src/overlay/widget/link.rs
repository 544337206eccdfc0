//! Stable references between widgets: `{{widget:NAME}}` in a widget's
//! document becomes the current URI of its sibling `NAME` (for
//! `requestModal({template})`, links between views), so a widget can name
//! another across edits although URIs carry a content hash.
//!
//! A widget's final URI covers its own content and that of every widget it
//! reaches through such references, so a change to a sibling it names gives
//! it a new URI too (hosts cache by URI). Widgets naming each other, in a
//! cycle, are fine: each one's URI covers the whole cycle, and all of them
//! change together.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::{HASH_DIGITS, Widget};

const OPEN: &str = "{{widget:";
const CLOSE: &str = "}}";

/// The widget names `html` refers to, in order of first appearance.
pub fn references(html: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let mut from = 0;
    while let Some(at) = html[from..].find(OPEN) {
        let start = from + at + OPEN.len();
        let Some(len) = html[start..].find(CLOSE) else {
            break;
        };
        let name = &html[start..start + len];
        if !names.contains(&name) {
            names.push(name);
        }
        from = start + len + CLOSE.len();
    }
    names
}

/// Resolves the references of every widget in `widgets`: each URI then
/// covers the widgets it reaches, and each `{{widget:NAME}}` is replaced by
/// that URI. Returns, per widget, the names it refers to that are not
/// widgets (those widgets are left unchanged).
pub fn link(widgets: &mut [Widget]) -> Vec<(String, String)> {
    let index: BTreeMap<String, usize> = widgets
        .iter()
        .enumerate()
        .map(|(i, w)| (w.name.clone(), i))
        .collect();
    let mut missing = Vec::new();
    let mut edges: Vec<Vec<usize>> = Vec::with_capacity(widgets.len());
    for widget in widgets.iter() {
        let mut to = Vec::new();
        for name in references(&widget.html) {
            match index.get(name) {
                Some(&i) => to.push(i),
                None => missing.push((widget.name.clone(), name.to_owned())),
            }
        }
        edges.push(to);
    }
    let broken: BTreeSet<&str> = missing.iter().map(|(w, _)| w.as_str()).collect();
    let uris: Vec<String> = (0..widgets.len())
        .map(|i| {
            if edges[i].is_empty() || broken.contains(widgets[i].name.as_str()) {
                return widgets[i].uri.clone();
            }
            // Everything reachable from i, in a stable order.
            let mut seen = BTreeSet::from([i]);
            let mut todo = edges[i].clone();
            while let Some(j) = todo.pop() {
                if seen.insert(j) {
                    todo.extend(&edges[j]);
                }
            }
            let mut hasher = Sha256::new();
            for j in seen {
                hasher.update(widgets[j].uri.as_bytes());
                hasher.update([0u8]);
            }
            let digest = hex::encode(hasher.finalize());
            format!("ui://{}/{}.html", widgets[i].name, &digest[..HASH_DIGITS])
        })
        .collect();
    for (i, widget) in widgets.iter_mut().enumerate() {
        if edges[i].is_empty() || broken.contains(widget.name.as_str()) {
            continue;
        }
        let mut html = widget.html.clone();
        for name in references(&widget.html) {
            html = html.replace(&format!("{OPEN}{name}{CLOSE}"), &uris[index[name]]);
        }
        widget.html = html;
        widget.uri = uris[i].clone();
    }
    missing
}
