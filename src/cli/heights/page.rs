//! The measuring page: the widgets to measure and the host script
//! (`host.js`) in one self-contained HTML file, and the heights read back
//! from the browser's dump of its DOM.

use serde::Serialize;
use serde_json::{Value, json};

/// The script of the measuring host.
const HOST_JS: &str = include_str!("host.js");

/// The frames' width, in CSS pixels: a chat column's.
pub const WIDTH_PX: u32 = 720;
/// `containerDimensions.maxHeight`, as `/preview` tells it: room for the
/// content's own height (a widget told a small maximum could scroll inside,
/// which Claude's directory refuses as well).
const MAX_HEIGHT_PX: u32 = 2000;
/// A frame's height until its widget reports one: the browser's default.
const FRAME_PX: u32 = 150;
/// The frames grow with what their widgets report, up to this.
const FRAME_LIMIT_PX: u32 = 20_000;
/// A widget is measured once it has reported no new height for this long
/// after its result (the page's clock).
const QUIET_MS: u64 = 500;
/// The page writes what it has after this long on its own clock.
pub const LIMIT_MS: u64 = 10_000;

/// One widget to render, as the page takes it.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// The resource's HTML, as `resources/read` answers it.
    pub html: String,
    /// The widget's Content-Security-Policy, for a `<meta>` element.
    pub policy: String,
    /// `_meta.ui.csp` of the resource (the host's `sandbox.csp`).
    pub csp: Value,
    /// `ui/notifications/tool-input`'s arguments.
    pub arguments: Value,
    /// `ui/notifications/tool-result`'s `CallToolResult`.
    pub result: Value,
    /// `hostContext.toolInfo.tool`.
    pub tool: Value,
}

/// What the page says of one widget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The largest height it reported from its result on.
    Px(u32),
    /// It never sent `ui/initialize`.
    NoInitialize,
    /// It was answered `ui/initialize`, but never said it was initialized
    /// (`ui/notifications/initialized`), so it got no input nor result.
    NotInitialized,
    /// It initialized, but reported no height after its result.
    NoSize,
}

/// The page measuring `jobs`, in order.
pub fn html(jobs: &[Job]) -> String {
    let config = json!({
        "width": WIDTH_PX,
        "maxHeight": MAX_HEIGHT_PX,
        "frameHeight": FRAME_PX,
        "frameLimit": FRAME_LIMIT_PX,
        "quietMs": QUIET_MS,
        "limitMs": LIMIT_MS,
    });
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcp-ui-gateway check: widget heights</title>\
         <style>body{{margin:0}} iframe{{display:block;border:0}}</style></head><body>\
         <script type=\"application/json\" id=\"jobs\">{}</script>\
         <script type=\"application/json\" id=\"config\">{}</script>\
         <script>{HOST_JS}</script></body></html>\n",
        script_json(&serde_json::to_value(jobs).unwrap_or_default()),
        script_json(&config),
    )
}

/// JSON to put inside a `<script>` element: every `<` escaped (it is only
/// ever inside a string), so no `</script>` or `<!--` in a widget's HTML
/// ends or changes the element.
fn script_json(value: &Value) -> String {
    value.to_string().replace('<', "\\u003c")
}

/// A policy as a `<meta http-equiv>` element can carry it: without
/// `frame-ancestors` and `sandbox`, which only a header sets (the frame's
/// own `sandbox` attribute stands for the latter).
pub fn meta_policy(policy: &str) -> String {
    policy
        .split(';')
        .map(str::trim)
        .filter(|d| {
            let name = d.split_whitespace().next().unwrap_or_default();
            !d.is_empty() && name != "frame-ancestors" && name != "sandbox"
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The outcome of each of `count` widgets in the dumped DOM; `Err` when
/// the page wrote none (it did not finish), or not one per widget.
pub fn parse(dump: &str, count: usize) -> Result<Vec<Outcome>, String> {
    const OPEN: &str = "<pre id=\"heights\">";
    let unfinished = || "the measuring page did not finish within its time".to_owned();
    let start = dump.find(OPEN).ok_or_else(unfinished)? + OPEN.len();
    let end = dump[start..].find("</pre>").ok_or_else(unfinished)? + start;
    let mut outcomes = vec![None; count];
    for line in dump[start..end].lines().filter(|l| !l.trim().is_empty()) {
        let bad = || format!("the measuring page wrote an unreadable line: {line:?}");
        let mut words = line.split_whitespace();
        let index: usize = words.next().and_then(|i| i.parse().ok()).ok_or_else(bad)?;
        let outcome = match (words.next(), words.next()) {
            (Some("px"), Some(px)) => Outcome::Px(px.parse().map_err(|_| bad())?),
            (Some("no-initialize"), None) => Outcome::NoInitialize,
            (Some("no-initialized"), None) => Outcome::NotInitialized,
            (Some("no-size"), None) => Outcome::NoSize,
            _ => return Err(bad()),
        };
        *outcomes.get_mut(index).ok_or_else(bad)? = Some(outcome);
    }
    outcomes
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "the measuring page did not write every widget's height".to_owned())
}
