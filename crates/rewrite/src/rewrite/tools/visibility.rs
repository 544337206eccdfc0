//! Who sees an overlaid tool, in the words hosts read: MCP Apps'
//! `_meta.ui.visibility`, and ChatGPT's `openai/widgetAccessible` and (only
//! where it hides a tool from the model) its deprecated `openai/visibility`.

use serde_json::{Map, Value, json};

use super::super::object::object_at;
use mcp_ui_overlay::overlay::Audience;

/// Writes `ui.visibility` and `openai/widgetAccessible`, always explicitly:
/// MCP's default visibility includes "app" while ChatGPT's `widgetAccessible`
/// defaults to false, so leaving either out means two hosts disagree.
///
/// `ui.visibility` is the one written form of who sees the tool. ChatGPT
/// deprecated `openai/visibility` for it (developers.openai.com/plugins/changelog,
/// July 2026) and is the only host that reads the old key (it still announces
/// `experimental["openai/visibility"]` at `initialize`); MCP Apps hosts read
/// `ui.visibility` alone. So the old key stays only as `"private"` on a tool
/// hidden from the model, the one value whose absence would change what a
/// host still honouring it does; on a tool the model sees it is removed, an
/// upstream's `"private"` included, which would hide the tool from
/// ChatGPT's model against `ui.visibility`.
///
/// Without an overlay value, a visibility the upstream already declared is
/// kept (and mirrored), with `"app"` added when a built-in widget calls the
/// tool (`app_callable`); otherwise MCP's default `["model", "app"]` applies.
pub(super) fn set(meta: &mut Map<String, Value>, overlay: Option<&[Audience]>, app_callable: bool) {
    let audiences: Vec<Audience> = match overlay {
        Some(list) => list.to_vec(),
        None => {
            let mut upstream = meta
                .get("ui")
                .and_then(|ui| ui.get("visibility"))
                .and_then(upstream_visibility)
                .unwrap_or_else(|| vec![Audience::Model, Audience::App]);
            if app_callable {
                upstream.push(Audience::App);
            }
            upstream
        }
    };
    let model = audiences.contains(&Audience::Model);
    let app = audiences.contains(&Audience::App);
    // Canonical order, whatever the overlay's.
    let visibility: Vec<&str> = [(model, "model"), (app, "app")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    object_at(meta, "ui").insert("visibility".into(), json!(visibility));
    if model {
        meta.shift_remove("openai/visibility");
    } else {
        meta.insert("openai/visibility".into(), json!("private"));
    }
    meta.insert("openai/widgetAccessible".into(), json!(app));
}

fn upstream_visibility(value: &Value) -> Option<Vec<Audience>> {
    value
        .as_array()?
        .iter()
        .map(|v| match v.as_str()? {
            "model" => Some(Audience::Model),
            "app" => Some(Audience::App),
            _ => None,
        })
        .collect()
}
