//! Built-in widgets wired into their mount once all its tool overlays are
//! known: the tools their actions call become callable from a widget, and
//! each widget is compiled with what it needs from the other overlays (which
//! action asks first).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::loader::Loader;
use super::mounts::{Origins, PendingRender};
use crate::overlay::builtin::{self, Context, View};
use crate::overlay::format::{Audience, RenderTool, ToolOverlay};
use crate::overlay::set::MountOverlays;
use crate::overlay::validate;

impl Loader {
    /// Marks the tools that the built-in widgets of `mount` (its tools' and
    /// its render tools') call as callable from a widget, refusing a call to
    /// a tool whose overlay keeps widgets out; then compiles each tool's
    /// built-in widget and points the tool at it.
    pub(super) fn wire_builtins(
        &mut self,
        mount: &str,
        tools: &mut BTreeMap<String, ToolOverlay>,
        renders: &[PendingRender],
        origins: &Origins,
    ) {
        // Who calls: the key of the widget's tool or render tool, its
        // options, and where it is written.
        let mut callers: Vec<(String, &View, PathBuf, Option<usize>)> = Vec::new();
        for (name, tool) in tools.iter() {
            if validate::builtin::kind_of(tool.widget.as_deref()).is_none() {
                continue;
            }
            if let Some(view) = &tool.view {
                let (path, line) = origins
                    .get(&(mount.to_owned(), name.clone()))
                    .cloned()
                    .unwrap_or_else(|| (self.root.clone(), None));
                callers.push((format!("tools.{name}"), view, path, line));
            }
        }
        for (name, render, path, line) in renders {
            if let Some(view) = &render.view {
                callers.push((format!("render.{name}"), view, path.clone(), *line));
            }
        }
        let mut callable = Vec::new();
        for (place, view, path, line) in &callers {
            for (key, target) in view.calls() {
                let keeps_out = tools
                    .get(target)
                    .and_then(|t| t.visibility.as_ref())
                    .is_some_and(|v| !v.contains(&Audience::App));
                if keeps_out {
                    let reason = format!(
                        "the widget calls `{target}`, whose overlay's visibility leaves out \"app\", so hosts refuse the call; add \"app\" to [tools.{target}] visibility"
                    );
                    self.error(path, *line, Some(format!("{place}.{key}")), reason);
                } else {
                    callable.push(target.to_owned());
                }
            }
        }
        for target in callable {
            tools.entry(target).or_default().app_callable = true;
        }
        let asks = asks_first(tools.iter().map(|(n, t)| (n.as_str(), t)));
        let mut compiled = Vec::new();
        for (name, tool) in tools.iter_mut() {
            let Some(kind) = validate::builtin::kind_of(tool.widget.as_deref()) else {
                continue;
            };
            let view = tool.view.clone().unwrap_or_default();
            let cx = Context {
                tool: Some(name),
                output_schema: tool.output_schema.as_ref(),
                asks: &|t: &str| asks.get(t).copied().unwrap_or(true),
            };
            let widget = builtin::compile(mount, name, kind, &view, cx);
            tool.widget = Some(widget.name.clone());
            compiled.push(widget);
        }
        self.builtin_widgets.append(&mut compiled);
    }

    /// Compiles a render tool's built-in widget, if it names one, and points
    /// the render tool at it. Its data are the render tool's arguments.
    pub(super) fn compile_render_builtin(
        &mut self,
        mount: &str,
        name: &str,
        render: &mut RenderTool,
        overlays: &MountOverlays,
    ) {
        let Some(kind) = validate::builtin::kind_of(Some(&render.widget)) else {
            return;
        };
        let view = render.view.clone().unwrap_or_default();
        let asks = asks_first(overlays.tools());
        let cx = Context {
            tool: None,
            output_schema: render
                .output_schema
                .as_ref()
                .or_else(|| overlays.render_input_schema(render)),
            asks: &|t: &str| asks.get(t).copied().unwrap_or(true),
        };
        let widget = builtin::compile(mount, name, kind, &view, cx);
        render.widget = widget.name.clone();
        self.builtin_widgets.push(widget);
    }
}

/// Whether an action calling each overlaid tool asks first by default: not
/// when the overlay's annotations call it read-only or not destructive (MCP
/// presumes a tool that writes is destructive).
fn asks_first<'a>(
    tools: impl Iterator<Item = (&'a str, &'a ToolOverlay)>,
) -> BTreeMap<String, bool> {
    tools
        .map(|(name, tool)| {
            let hints = tool.annotations.unwrap_or_default();
            let safe = hints.read_only_hint == Some(true) || hints.destructive_hint == Some(false);
            (name.to_owned(), !safe)
        })
        .collect()
}
