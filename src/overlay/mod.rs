//! Overlays: what an operator adds to an unmodified upstream, as typed data.
//! Per mount, the UI metadata of some of its tools ([`ToolOverlay`]); across
//! mounts, the widgets those tools render, compiled into one HTML resource
//! each ([`Widget`]). Everything here is immutable once built: a reload builds
//! a new [`OverlaySet`] and the caller swaps it in whole.
//!
//! - [`load`] reads an overlay directory (the only filesystem code);
//! - [`validate`] holds the rules every overlay must pass, pure;
//! - [`widget`] turns a widget folder's content into its resource, pure.
//!
//! The `Deserialize` types below *are* the file format (`overlays/README.md`,
//! `overlays/schema/*.json`): unknown keys are errors, so a typo cannot
//! silently disable a setting.

pub mod load;
pub mod validate;
pub mod widget;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

pub use load::{
    Inspection, LoadError, LoadErrors, MountFileSite, RenderSite, ToolSite, inspect_dir, load_dir,
};
pub use widget::Widget;

/// How many superseded versions of each widget stay readable after a reload
/// (see [`OverlaySet::retain_previous_versions`]).
pub const RETAINED_VERSIONS: usize = 8;

/// Who may call a tool, in MCP Apps' words (`_meta.ui.visibility`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    /// The model sees and calls the tool.
    Model,
    /// The widget (the "View") may call the tool through the host.
    App,
}

impl Audience {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Model => "model",
            Audience::App => "app",
        }
    }
}

/// The overlay of one tool: `[tools.<name>]` in a mount file. Every field is
/// optional; an absent field leaves the upstream's value alone.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverlay {
    /// Name of a widget folder under `widgets/`; its resource URI becomes the
    /// tool's `_meta.ui.resourceUri` (and the two aliases).
    pub widget: Option<String>,
    /// Replaces the tool's `title`.
    pub title: Option<String>,
    /// Replaces the tool's `description`.
    pub description: Option<String>,
    /// `_meta.ui.visibility`; also decides `openai/visibility` and
    /// `openai/widgetAccessible`. Default `["model", "app"]`.
    pub visibility: Option<Vec<Audience>>,
    /// `openai/toolInvocation/invoking`: status text while the tool runs.
    pub invoking: Option<String>,
    /// `openai/toolInvocation/invoked`: status text once it has run.
    pub invoked: Option<String>,
    /// Hints merged into the tool's `annotations`.
    pub annotations: Option<Annotations>,
    /// Top-level `securitySchemes`, mirrored into `_meta.securitySchemes`.
    pub security_schemes: Option<Vec<SecurityScheme>>,
    /// Top-level input properties that carry files (`openai/fileParams`).
    #[serde(default)]
    pub file_params: Vec<String>,
    /// `openai/profile`: `true` marks the account-profile tool; `false`
    /// removes a marker the upstream set.
    pub profile: Option<bool>,
    /// Replaces the tool's `outputSchema`; also what shaped results are
    /// checked against.
    pub output_schema: Option<Map<String, Value>>,
    /// Opt-in changes to `tools/call` results.
    #[serde(default)]
    pub result: ResultShaping,
    /// How a listed tool that has none of the members the rewrite touches
    /// is rewritten, worked out on first use.
    #[serde(skip)]
    pub bare_rewrite: Memo<crate::rewrite::tools::Bare>,
}

/// A value worked out from its owner on first use and kept beside it. Not
/// part of the owner's value: memos are equal whether filled or not, and a
/// clone starts empty.
pub struct Memo<T>(std::sync::OnceLock<T>);

impl<T> Memo<T> {
    pub fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(make)
    }
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(std::sync::OnceLock::new())
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl<T> PartialEq for Memo<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

/// A gateway-owned render tool: `[render.<name>]` in a mount file. The
/// gateway lists it beside the upstream's tools and answers its calls
/// itself: the arguments, checked against the input schema, come back as
/// `structuredContent` with the widget's template metadata. The decoupled
/// pattern: the upstream's data tools fetch, this tool renders.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderTool {
    /// Name of the widget folder it renders (required).
    pub widget: String,
    /// The upstream tools whose results it renders (at least one); the
    /// default description tells the model to call the first one first.
    pub data_tools: Vec<String>,
    /// The tool's `title`.
    pub title: Option<String>,
    /// The tool's `description`; default: one naming the data tools.
    pub description: Option<String>,
    /// `inputSchema`; default: the `output_schema` of the first data tool
    /// whose overlay declares one (so the input is that tool's output).
    pub input_schema: Option<Map<String, Value>>,
    /// `outputSchema`; default: the input schema (the arguments are echoed).
    pub output_schema: Option<Map<String, Value>>,
    /// Hints merged over the defaults (read-only, not destructive, closed
    /// world, idempotent: the gateway only echoes the arguments).
    pub annotations: Option<Annotations>,
    /// `openai/toolInvocation/invoking`.
    pub invoking: Option<String>,
    /// `openai/toolInvocation/invoked`.
    pub invoked: Option<String>,
}

/// The `_meta` key that marks a tool in `tools/list` as gateway-owned (a
/// render tool); its value is `{"dataTools": [..], "widget": ".."}`.
pub const RENDER_TOOL_META: &str = "io.github.mcp-ui-gateway/renderTool";

/// MCP `ToolAnnotations` hints, spelled as on the wire so they can be copied
/// from the spec. OpenAI's review requires the first three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
    pub open_world_hint: Option<bool>,
    pub idempotent_hint: Option<bool>,
}

impl Annotations {
    /// The hints that are set, with their wire names, in a stable order.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, bool)> {
        [
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("openWorldHint", self.open_world_hint),
            ("idempotentHint", self.idempotent_hint),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v)))
    }
}

/// One entry of a tool's `securitySchemes` (OpenAI Apps SDK). Listing both
/// kinds means "works anonymously, does more when signed in".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
// `Noauth {}` rather than a unit variant: serde ignores unknown keys next to
// the tag for unit variants, and a stray key must be reported.
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum SecurityScheme {
    Noauth {},
    Oauth2 {
        #[serde(default)]
        scopes: Vec<String>,
    },
}

impl SecurityScheme {
    /// The wire form.
    pub fn to_json(&self) -> Value {
        match self {
            SecurityScheme::Noauth {} => serde_json::json!({ "type": "noauth" }),
            SecurityScheme::Oauth2 { scopes } => {
                serde_json::json!({ "type": "oauth2", "scopes": scopes })
            }
        }
    }
}

/// `[tools.<name>.result]`: opt-in shaping of `tools/call` results. Off by
/// default, because the gateway's promise is to forward results unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultShaping {
    /// Parse the first text content as a JSON object into `structuredContent`
    /// when the upstream sends none (legacy servers return JSON as text).
    #[serde(default)]
    pub structured_from_text: bool,
    /// Top-level keys of the structured data moved into the result's `_meta`,
    /// which only the widget receives, never the model.
    #[serde(default)]
    pub widget_only: Vec<String>,
}

impl ResultShaping {
    /// True when results pass through untouched.
    pub fn is_noop(&self) -> bool {
        !self.structured_from_text && self.widget_only.is_empty()
    }
}

/// A widget folder's manifest, `widget.toml` (or `widget.json`). Optional: a
/// folder holding only `index.html` is a complete widget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WidgetManifest {
    /// Ignored; lets JSON editors find the schema.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// The HTML document, relative to the folder. Default `index.html`.
    pub entry: Option<String>,
    /// `title` of the `resources/list` entry.
    pub title: Option<String>,
    /// `openai/widgetDescription`, and the `resources/list` description.
    pub description: Option<String>,
    /// `_meta.ui.prefersBorder` and `openai/widgetPrefersBorder`.
    pub prefers_border: Option<bool>,
    /// `_meta.ui.domain` and `openai/widgetDomain`. Host-specific: omit
    /// unless you know which host reads it.
    pub domain: Option<String>,
    /// `openai/ui.availableDisplayModes`.
    pub display_modes: Option<Vec<DisplayMode>>,
    /// Origins the widget may reach; the host blocks everything else.
    pub csp: Option<Csp>,
    /// Browser permissions the widget asks for.
    pub permissions: Option<Permissions>,
}

impl WidgetManifest {
    /// The entry document's path inside the folder.
    pub fn entry(&self) -> &str {
        self.entry.as_deref().unwrap_or("index.html")
    }
}

/// `[csp]`: origins (`scheme://host[:port]`, `*.` allowed as the first
/// label). A list that is absent is not emitted; an empty list is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Csp {
    /// fetch/XHR/WebSocket targets (`connect-src`).
    pub connect_domains: Option<Vec<String>>,
    /// Scripts, styles, images, fonts and media.
    pub resource_domains: Option<Vec<String>>,
    /// Nested iframes (`frame-src`); triggers stricter review in ChatGPT.
    pub frame_domains: Option<Vec<String>>,
    /// `base-uri` (MCP Apps only).
    pub base_uri_domains: Option<Vec<String>>,
    /// ChatGPT `openExternal` targets opened without confirmation (only in
    /// `openai/widgetCSP`, MCP Apps has no equivalent).
    pub redirect_domains: Option<Vec<String>>,
}

/// `[permissions]`: mapped to the iframe's `allow` attribute by hosts that
/// honour them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub camera: bool,
    #[serde(default)]
    pub microphone: bool,
    #[serde(default)]
    pub geolocation: bool,
    #[serde(default)]
    pub clipboard_write: bool,
}

/// A display mode ChatGPT may open the widget in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DisplayMode {
    Inline,
    Fullscreen,
    Pip,
}

impl DisplayMode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DisplayMode::Inline => "inline",
            DisplayMode::Fullscreen => "fullscreen",
            DisplayMode::Pip => "pip",
        }
    }
}

// === impl MountOverlays ===

/// The tool overlays and render tools of one mount (one upstream).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MountOverlays {
    /// Hashed: a `tools/list` page looks up every tool it lists.
    tools: HashMap<String, ToolOverlay, foldhash::fast::RandomState>,
    render: BTreeMap<String, RenderTool>,
}

impl MountOverlays {
    pub fn new(tools: impl IntoIterator<Item = (String, ToolOverlay)>) -> Self {
        MountOverlays {
            tools: tools.into_iter().collect(),
            render: BTreeMap::new(),
        }
    }

    /// Adds gateway-owned render tools.
    pub fn with_render(mut self, render: impl IntoIterator<Item = (String, RenderTool)>) -> Self {
        self.render.extend(render);
        self
    }

    /// The render tool called `name`, if any.
    pub fn render_tool(&self, name: &str) -> Option<&RenderTool> {
        self.render.get(name)
    }

    /// Every render tool, by name.
    pub fn render_tools(&self) -> impl Iterator<Item = (&str, &RenderTool)> {
        self.render.iter().map(|(name, tool)| (name.as_str(), tool))
    }

    /// The input schema of `render`: its own, or else the `output_schema` of
    /// the first data tool whose overlay declares one.
    pub fn render_input_schema<'a>(
        &'a self,
        render: &'a RenderTool,
    ) -> Option<&'a Map<String, Value>> {
        render.input_schema.as_ref().or_else(|| {
            render
                .data_tools
                .iter()
                .find_map(|t| self.tools.get(t)?.output_schema.as_ref())
        })
    }

    /// The overlay of the tool called `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&ToolOverlay> {
        self.tools.get(name)
    }

    /// Every overlaid tool, by name.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ToolOverlay)> {
        let mut tools: Vec<_> = self.tools.iter().map(|(n, t)| (n.as_str(), t)).collect();
        tools.sort_unstable_by_key(|(name, _)| *name);
        tools.into_iter()
    }

    /// The widgets this mount's tools and render tools render.
    pub fn widget_names(&self) -> BTreeSet<&str> {
        let render = self.render.values().map(|r| r.widget.as_str());
        self.tools
            .values()
            .filter_map(|tool| tool.widget.as_deref())
            .chain(render)
            .collect()
    }
}

// === impl Widgets ===

/// The compiled widgets: the current version of each, by name, plus a few
/// superseded versions that stay readable by URI (hosts cache by URI and may
/// still ask for a version a conversation rendered earlier).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Widgets {
    current: BTreeMap<String, Arc<Widget>>,
    /// Superseded versions per widget name, oldest first, none equal to the
    /// current URI.
    history: BTreeMap<String, Vec<Arc<Widget>>>,
    by_uri: BTreeMap<String, Arc<Widget>>,
}

impl Widgets {
    pub fn new(widgets: impl IntoIterator<Item = Widget>) -> Self {
        let current: BTreeMap<_, _> = widgets
            .into_iter()
            .map(|widget| (widget.name.clone(), Arc::new(widget)))
            .collect();
        let mut widgets = Widgets {
            current,
            history: BTreeMap::new(),
            by_uri: BTreeMap::new(),
        };
        widgets.index();
        widgets
    }

    /// The current version of the widget called `name`.
    pub fn get(&self, name: &str) -> Option<&Widget> {
        self.current.get(name).map(Arc::as_ref)
    }

    /// The widget version served at `uri`, current or retained.
    pub fn by_uri(&self, uri: &str) -> Option<&Widget> {
        self.by_uri.get(uri).map(Arc::as_ref)
    }

    /// The current versions, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Widget> {
        self.current.values().map(Arc::as_ref)
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    /// Keeps `previous`'s versions readable, at most `per_widget` superseded
    /// versions per name (the newest ones).
    pub fn retain_previous(&mut self, previous: &Widgets, per_widget: usize) {
        let names: BTreeSet<&String> = previous
            .current
            .keys()
            .chain(previous.history.keys())
            .collect();
        for name in names {
            let current_uri = self.current.get(name).map(|w| w.uri.as_str());
            let mut kept: Vec<Arc<Widget>> = Vec::new();
            let older = previous.history.get(name).into_iter().flatten();
            for widget in older.chain(previous.current.get(name)) {
                let stale = Some(widget.uri.as_str()) != current_uri;
                if stale && !kept.iter().any(|k| k.uri == widget.uri) {
                    kept.push(Arc::clone(widget));
                }
            }
            let excess = kept.len().saturating_sub(per_widget);
            kept.drain(..excess);
            if !kept.is_empty() {
                self.history.insert(name.clone(), kept);
            }
        }
        self.index();
    }

    fn index(&mut self) {
        let all = self.history.values().flatten().chain(self.current.values());
        self.by_uri = all.map(|w| (w.uri.clone(), Arc::clone(w))).collect();
    }
}

// === impl OverlaySet ===

/// Everything the overlay directory says, compiled: the unit a reload swaps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OverlaySet {
    mounts: BTreeMap<String, MountOverlays>,
    widgets: Widgets,
}

impl OverlaySet {
    pub fn new(mounts: BTreeMap<String, MountOverlays>, widgets: Widgets) -> Self {
        OverlaySet { mounts, widgets }
    }

    /// The overlays of the upstream mounted as `name`.
    pub fn mount(&self, name: &str) -> Option<&MountOverlays> {
        self.mounts.get(name)
    }

    /// Every mount that has overlays, by name.
    pub fn mounts(&self) -> impl Iterator<Item = (&str, &MountOverlays)> {
        self.mounts.iter().map(|(name, m)| (name.as_str(), m))
    }

    pub fn widgets(&self) -> &Widgets {
        &self.widgets
    }

    /// The current widgets rendered by `mount`'s tools: what its
    /// `resources/list` gains.
    pub fn widgets_for(&self, mount: &str) -> Vec<&Widget> {
        let Some(overlays) = self.mounts.get(mount) else {
            return Vec::new();
        };
        let names = overlays.widget_names();
        names
            .into_iter()
            .filter_map(|n| self.widgets.get(n))
            .collect()
    }

    /// After a reload: keep the widget versions `previous` served readable
    /// (bounded by [`RETAINED_VERSIONS`]).
    pub fn retain_previous_versions(&mut self, previous: &OverlaySet) {
        self.widgets
            .retain_previous(&previous.widgets, RETAINED_VERSIONS);
    }

    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.widgets.is_empty()
    }
}

#[cfg(test)]
mod tests;
