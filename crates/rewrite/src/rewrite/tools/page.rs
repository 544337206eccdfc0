//! The `tools/list` page rewrite done in the page's text: only the overlaid
//! tools are rewritten, every other byte stays as the upstream sent it.

mod members;
#[cfg(test)]
pub(crate) mod tests;

use serde_json::{Map, Value, json};

use super::{Bare, tool, tools_list, touches};
use crate::rewrite::render::add_render_tools;
use crate::rewrite::warning::Warning;
use mcp_ui_overlay::overlay::{MountOverlays, ToolOverlay, Widgets};
use members::{Members, Page, offset};

/// What [`tools_list_page`] made of a page.
#[derive(Debug, Default)]
pub(crate) struct RewrittenPage {
    /// The new page; `None` leaves the upstream's bytes as they were.
    pub text: Option<String>,
    pub warnings: Vec<Warning>,
    /// The upstream's tool names on the page, in order (render tools yield
    /// to them).
    pub names: Vec<String>,
    /// The overlaid tools on the page, each as the upstream sent it: what
    /// the overlays are compared with ([`crate::rewrite::listing`]).
    pub overlaid: Vec<String>,
    /// Whether it is the listing's last page (no `nextCursor`).
    pub last: bool,
}

/// A `tools/list` page, the one rewrite whose answers are large (every tool
/// of a server, with its schemas): one pass over the text finds each tool's
/// members, only the overlaid tools are rewritten (and of those, only the
/// members their rewrite touches are parsed), and the page is written once.
/// Every other byte, tool, member and separator stays as the upstream sent
/// it. `None` when the page is not the expected shape (the general path
/// then handles it).
pub(crate) fn tools_list_page(
    response: &[u8],
    overlaid: &MountOverlays,
    widgets: &Widgets,
    upstream_has: &dyn Fn(&str) -> bool,
) -> Option<RewrittenPage> {
    let text = std::str::from_utf8(response).ok()?;
    let page = Page::find(text)?;
    let mut warnings = Vec::new();
    let mut names = Vec::with_capacity(page.tools.len());
    let mut sent = Vec::new();
    // Replacements of ranges of `text`, in order.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for tool in &page.tools {
        let Some(name) = tool.name() else {
            continue;
        };
        if let Some(overlay) = overlaid.tool(&name) {
            let span = tool.span(text)?;
            sent.push(text[span.clone()].to_owned());
            let new = match splice_tool(text, span.clone(), tool, &name, overlay, widgets) {
                Some((new, w)) => {
                    warnings.extend(w);
                    new
                }
                None => {
                    let tool = serde_json::from_str::<Value>(&text[span.clone()]).ok()?;
                    let mut page = json!({ "tools": [tool] });
                    warnings.extend(tools_list(&mut page, overlaid, widgets));
                    serde_json::to_string(&page["tools"][0]).ok()?
                }
            };
            edits.push((span, new));
        }
        names.push(name.into_owned());
    }
    // Render tools join the last page (the general rewrite decides; it sees
    // this page's names through `upstream_has`).
    let mut extra = json!({ "tools": [] });
    let last = page.next_cursor.is_none();
    if let Some(cursor) = page.next_cursor {
        extra["nextCursor"] = serde_json::from_str(cursor.get()).ok()?;
    }
    let on_page = |n: &str| names.iter().any(|p| p == n) || upstream_has(n);
    warnings.extend(add_render_tools(&mut extra, overlaid, widgets, &on_page));
    let added = extra["tools"].as_array()?;
    if !added.is_empty() {
        // After the last tool; an empty list is left to the general path.
        let end = page.tools.last()?.span(text)?.end;
        let mut new = String::new();
        for tool in added {
            new.push(',');
            new.push_str(&tool.to_string());
        }
        edits.push((end..end, new));
    }
    if edits.is_empty() {
        // Nothing on this page is overlaid: the upstream's bytes stand.
        return Some(RewrittenPage {
            text: None,
            warnings,
            names,
            overlaid: sent,
            last,
        });
    }
    Some(RewrittenPage {
        text: Some(spliced(text, &edits)),
        warnings,
        names,
        overlaid: sent,
        last,
    })
}

/// `text` with each of `edits` (a range of it and its replacement, in
/// order) made.
fn spliced(text: &str, edits: &[(std::ops::Range<usize>, String)]) -> String {
    let grown: usize = edits.iter().map(|(_, new)| new.len()).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut at = 0;
    for (range, new) in edits {
        out.push_str(&text[at..range.start]);
        out.push_str(new);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// One overlaid tool (at `span` in `text`) rewritten in its text: the
/// members the rewrite touches are parsed, rewritten and their values
/// replaced where they stand; members it adds go last (where a full rewrite
/// adds them). Every other byte of the tool stays. `None` (a repeated or
/// removed member) leaves the tool to the full rewrite.
fn splice_tool(
    text: &str,
    span: std::ops::Range<usize>,
    members: &Members<'_>,
    name: &str,
    overlay: &ToolOverlay,
    widgets: &Widgets,
) -> Option<(String, Vec<Warning>)> {
    let is_touched = |key: &str| touches(overlay, key);
    if !members.0.iter().any(|(k, _)| is_touched(k)) {
        // The common case: the same members added to every listing.
        let bare = Bare::of(name, overlay, widgets);
        let mut out = String::with_capacity(span.len() + 512);
        out.push_str(&text[span.start..span.end - 1]);
        for (key, value) in &bare.members {
            out.push(',');
            out.push_str(key);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        return Some((out, bare.warnings.clone()));
    }
    let mut touched = Map::new();
    for (key, value) in &members.0 {
        if is_touched(key) {
            let value = serde_json::from_str(value.get()).ok()?;
            if touched.insert(key.to_string(), value).is_some() {
                return None;
            }
        }
    }
    let warnings = tool(&mut touched, name, overlay, widgets);
    let mut out = String::with_capacity(span.len() + 512);
    let mut at = span.start;
    for (key, value) in &members.0 {
        if !is_touched(key) {
            continue;
        }
        let new = touched.get(&**key)?;
        let start = offset(text, value.get())?;
        out.push_str(&text[at..start]);
        out.push_str(&serde_json::to_string(new).ok()?);
        at = start + value.get().len();
    }
    // Up to the closing brace, then the added members.
    out.push_str(&text[at..span.end - 1]);
    for (key, value) in &touched {
        if members.0.iter().any(|(m, _)| m == key) {
            continue;
        }
        // A member the rewrite was not given: the text may already have it.
        if !is_touched(key) {
            return None;
        }
        out.push(',');
        out.push_str(&serde_json::to_string(key).ok()?);
        out.push(':');
        out.push_str(&serde_json::to_string(value).ok()?);
    }
    out.push('}');
    Some((out, warnings))
}
