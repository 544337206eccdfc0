//! The overlay file format as typed data: the `Deserialize` types below
//! *are* `docs/overlays.md` and `overlays/schema/*.json`. Unknown keys are
//! errors, so a typo cannot silently disable a setting.

use serde::Deserialize;
use serde_json::{Map, Value};

pub use super::domain::{HostDomains, WidgetDomain};
use super::memo::Memo;

pub mod view;

#[cfg(test)]
mod tests;

/// `tools_list` in a mount file: how long a client of the 2026-07-28
/// revision may keep the mount's tool listing (`ttlMs`), and with whom
/// (`cacheScope`), where the gateway announces them (for an upstream of the
/// handshake era). Default: the mount's `cache_ttl_ms` and `cache_scope`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsList {
    pub ttl_ms: u64,
    #[serde(default)]
    pub cache_scope: CacheScope,
}

/// Who may reuse a cached listing: only the same authorization context
/// (`private`, the default), or anyone (`public`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    #[default]
    Private,
    Public,
}

/// The longest `tools_list.ttl_ms` (a day, as for a mount's `cache_ttl_ms`).
pub const MAX_TOOLS_LIST_TTL_MS: u64 = 24 * 60 * 60 * 1000;

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
    /// Name of a widget folder under `widgets/`, or `builtin:<kind>`; its
    /// resource URI becomes the tool's `_meta.ui.resourceUri` (and the two
    /// aliases). Loading replaces a built-in kind by the name of the widget
    /// it compiled for this tool.
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
    /// The options of a built-in widget (`widget = "builtin:<kind>"`).
    pub view: Option<view::View>,
    /// What the widget is shown with when its height is measured (`check`,
    /// `/preview`).
    pub sample: Option<Sample>,
    /// Keys merged into the tool's `_meta` as given, last (an escape hatch
    /// for keys this format does not know yet); overriding a key the gateway
    /// writes itself is allowed, with a warning.
    pub meta: Option<Map<String, Value>>,
    /// Set by loading when a built-in widget's action or refresh calls this
    /// tool: its visibility then includes `"app"` (and ChatGPT's
    /// `openai/widgetAccessible` is true) unless the overlay sets one.
    #[serde(skip)]
    pub app_callable: bool,
    /// How a listed tool that has none of the members the rewrite touches
    /// is rewritten, worked out on first use. The `tools/list` rewrite
    /// decides what it holds (`rewrite::tools::Bare`); an overlay does not
    /// know the rewrite's types.
    #[serde(skip)]
    pub bare_rewrite: Memo<Box<dyn std::any::Any + Send + Sync>>,
}

/// A gateway-owned render tool: `[render.<name>]` in a mount file. The
/// gateway lists it beside the upstream's tools and answers its calls
/// itself: the arguments, checked against the input schema, come back as
/// `structuredContent` with the widget's template metadata. The decoupled
/// pattern: the upstream's data tools fetch, this tool renders.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderTool {
    /// Name of the widget folder it renders, or `builtin:<kind>` (required).
    /// Loading replaces a built-in kind by the name of the widget it
    /// compiled for this render tool.
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
    /// Keys merged into the tool's `_meta` as given, last; overriding a key
    /// the gateway writes is allowed, with a warning.
    pub meta: Option<Map<String, Value>>,
    /// The options of a built-in widget (`widget = "builtin:<kind>"`); its
    /// data is the render tool's arguments.
    pub view: Option<view::View>,
    /// What the widget is shown with when its height is measured (`check`,
    /// `/preview`): `arguments` only, which the render tool echoes.
    pub sample: Option<Sample>,
}

/// `[tools.<name>.sample]` (or `[render.<name>.sample]`): a call and its
/// result, as the widget receives them, to render it with when its height
/// is measured. Nothing is called: the upstream never sees a sample.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// The tool's arguments (`ui/notifications/tool-input`,
    /// `window.openai.toolInput`); a render tool's are also its result.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The result's `structuredContent` (`window.openai.toolOutput`):
    /// required for a tool, refused for a render tool.
    pub structured_content: Option<Map<String, Value>>,
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

/// Merges an overlay's `meta` table into `meta` as given, key by key, last.
/// Returns the keys it replaced for which `gateway_wrote` is true: a value
/// the gateway wrote itself, now the operator's.
pub fn merge_meta(
    meta: &mut Map<String, Value>,
    extra: &Map<String, Value>,
    gateway_wrote: impl Fn(&str, &Value) -> bool,
) -> Vec<String> {
    let mut overridden = Vec::new();
    for (key, value) in extra {
        if let Some(old) = meta.insert(key.clone(), value.clone())
            && gateway_wrote(key, &old)
        {
            overridden.push(key.clone());
        }
    }
    overridden
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
    /// The folder, relative to the widget folder, that a reference with a
    /// leading `/` (a bundler's absolute `base`) resolves in. Default: the
    /// entry document's folder.
    pub base: Option<String>,
    /// What the build writes where its own server would put the asset base
    /// URL at run time: a reference starting with it resolves in `base`,
    /// like one starting with `/`. Default [`BASE_PLACEHOLDER`].
    pub base_placeholder: Option<String>,
    /// Images, fonts and other media up to this many bytes become `data:`
    /// URIs in the document; larger ones are served by the gateway.
    /// Default [`INLINE_LIMIT`].
    pub inline_limit: Option<usize>,
    /// `title` of the `resources/list` entry.
    pub title: Option<String>,
    /// `openai/widgetDescription`, and the `resources/list` description.
    pub description: Option<String>,
    /// `_meta.ui.prefersBorder` and `openai/widgetPrefersBorder`.
    pub prefers_border: Option<bool>,
    /// `_meta.ui.domain` and `openai/widgetDomain`, whose form is
    /// host-specific: one value, or one per host (see [`WidgetDomain`]).
    pub domain: Option<WidgetDomain>,
    /// `openai/ui.availableDisplayModes`.
    pub display_modes: Option<Vec<DisplayMode>>,
    /// Origins the widget may reach; the host blocks everything else.
    pub csp: Option<Csp>,
    /// Browser permissions the widget asks for.
    pub permissions: Option<Permissions>,
    /// Keys merged into the resource `_meta` (list entry and content) as
    /// given, last; overriding a key the gateway writes is allowed, with a
    /// warning.
    pub meta: Option<Map<String, Value>>,
    /// The bridge the widget's code speaks; absent, detected from the code
    /// (see [`BridgeKind`]).
    pub bridge: Option<BridgeKind>,
}

/// The bridge a widget's code speaks to its host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum BridgeKind {
    /// The MCP Apps `ui/*` messages: served as written.
    #[default]
    #[serde(rename = "mcp-apps")]
    McpApps,
    /// ChatGPT's `window.openai`: served with a script implementing it on
    /// the `ui/*` messages, so MCP Apps hosts render the widget too.
    #[serde(rename = "openai")]
    OpenAi,
}

/// The default `base_placeholder`: what OpenAI's Apps SDK example builds
/// write before their assets' paths.
pub(crate) const BASE_PLACEHOLDER: &str = "__ASSET_BASE_URL__";

/// The default `inline_limit` of a widget: 8 KiB.
pub(crate) const INLINE_LIMIT: usize = 8 * 1024;

impl WidgetManifest {
    /// The folder a leading `/` resolves in: `base`, else the entry's folder.
    pub fn base(&self) -> &str {
        match &self.base {
            Some(base) => base.trim_matches('/'),
            None => self.entry().rsplit_once('/').map_or("", |(dir, _)| dir),
        }
    }

    /// The placeholder read as the base (`""`: none).
    pub(crate) fn base_placeholder(&self) -> &str {
        self.base_placeholder.as_deref().unwrap_or(BASE_PLACEHOLDER)
    }

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
