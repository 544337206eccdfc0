//! The app directories' rules: what ChatGPT's app review and Claude's
//! connector directory ask of the tools, widgets and sign-in an app lists,
//! checked over the overlays, the facts of the configuration they need,
//! each upstream's live `tools/list` when it is known, and the widget
//! heights `check` measured. Pure: `check` gathers the inputs and prints the
//! findings, as warnings, or as problems with `--strict`; `--host` chooses
//! whose directory's rules apply ([`Hosts`]), each finding naming the hosts
//! that ask for it ([`Rule::hosts`]).
//!
//! It sits beside `check` rather than in `overlay::validate` because it
//! reads listings as the rewrites do (the Python SDK's text wrapper schema).
//!
//! Rules that need a listing (the upstream's titles, annotations, schemas
//! and `_meta`) are skipped for an upstream whose listing is not known
//! (`check --offline`); the others apply to the files alone. ChatGPT's own
//! rules are in [`chatgpt`], Claude's in [`claude`]; the hints both ask for
//! are here.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::init::toml_key;
use crate::overlay::{RenderSite, ToolOverlay, ToolSite, WidgetSite};

mod chatgpt;
pub mod claude;

pub use chatgpt::has_chatgpt_domain;
pub use claude::{CLAUDE_INLINE_MAX_PX, Height, Measured, SignIn, SignInKind};

#[cfg(test)]
mod tests;

/// A host whose app directory asks for a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ChatGpt,
    Claude,
}

impl Host {
    /// As printed in findings.
    pub fn name(self) -> &'static str {
        match self {
            Host::ChatGpt => "ChatGPT",
            Host::Claude => "Claude",
        }
    }
}

/// Whose directories' rules apply (`check --host`): both by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hosts {
    pub chatgpt: bool,
    pub claude: bool,
}

impl Default for Hosts {
    fn default() -> Self {
        Hosts::BOTH
    }
}

impl Hosts {
    pub const BOTH: Hosts = Hosts {
        chatgpt: true,
        claude: true,
    };
    pub const CHATGPT: Hosts = Hosts {
        chatgpt: true,
        claude: false,
    };
    pub const CLAUDE: Hosts = Hosts {
        chatgpt: false,
        claude: true,
    };

    /// Whether one of the chosen hosts asks for `rule`.
    pub fn ask(self, rule: Rule) -> bool {
        rule.hosts().iter().any(|host| match host {
            Host::ChatGpt => self.chatgpt,
            Host::Claude => self.claude,
        })
    }
}

/// One rule of the app directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// A listed tool lacks `readOnlyHint`, `destructiveHint` or
    /// `openWorldHint` in its annotations, the upstream's and the overlay's
    /// together (both directories require all three).
    Annotations,
    /// A tool's results carry `structuredContent` (shaped by the gateway,
    /// or an MCP App's) but `tools/list` shows no `outputSchema`.
    OutputSchema,
    /// An `oauth2` security scheme on an upstream whose authorization
    /// challenges are not relayed in-band: ChatGPT cannot start account
    /// linking.
    OauthInBand,
    /// A widget with no ChatGPT domain while the gateway's public URL is
    /// known: ChatGPT's submission needs a unique one.
    WidgetDomain,
    /// An overlay replaces the `resourceUri` of a tool the upstream already
    /// lists as an MCP App.
    NativeUi,
    /// A listed tool (or render tool) without a `title`: Claude's directory
    /// requires one on every tool.
    Title,
    /// A tool a built-in widget calls, whose visibility nothing states:
    /// Claude's directory wants the tools only a widget calls (helpers)
    /// visible to the app alone.
    AppOnlyHelper,
    /// An endpoint hosts cannot sign in to by OAuth with dynamic client
    /// registration or a Client ID Metadata Document (nor use without
    /// signing in): a static token or header blocks Claude's listing.
    SignIn,
    /// An inline widget taller than Claude's limit, or not measured.
    WidgetHeight,
}

impl Rule {
    /// The rule's id, as printed: `app-directory/<id>`.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Annotations => "annotations",
            Rule::OutputSchema => "output-schema",
            Rule::OauthInBand => "oauth-in-band",
            Rule::WidgetDomain => "widget-domain",
            Rule::NativeUi => "native-ui",
            Rule::Title => "title",
            Rule::AppOnlyHelper => "app-only-helper",
            Rule::SignIn => "sign-in",
            Rule::WidgetHeight => "widget-height",
        }
    }

    /// The hosts whose directory asks for it.
    pub fn hosts(self) -> &'static [Host] {
        match self {
            Rule::Annotations | Rule::NativeUi => &[Host::ChatGpt, Host::Claude],
            Rule::OutputSchema | Rule::OauthInBand | Rule::WidgetDomain => &[Host::ChatGpt],
            Rule::Title | Rule::AppOnlyHelper | Rule::SignIn | Rule::WidgetHeight => {
                &[Host::Claude]
            }
        }
    }

    /// The rule and its hosts, as a finding is tagged:
    /// `[app-directory/annotations: ChatGPT, Claude]`.
    pub fn tag(self) -> String {
        let hosts: Vec<&str> = self.hosts().iter().map(|h| h.name()).collect();
        format!("[{self}: {}]", hosts.join(", "))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "app-directory/{}", self.id())
    }
}

/// One broken rule: which, where (file, line of the table, key path) and
/// what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub file: PathBuf,
    pub line: Option<usize>,
    pub place: Option<String>,
    pub message: String,
}

/// What the rules know of one configured upstream.
#[derive(Debug, Clone, Copy)]
pub struct Upstream<'a> {
    /// Its mount name (the overlays' `upstream`).
    pub mount: &'a str,
    /// The overlay file of the mount (where a table for one of its tools
    /// goes: the mount file that names it, else `<overlays>/<mount>.toml`).
    pub file: &'a Path,
    /// `auth_challenge = "in-band"`: a refused `tools/call` is answered with
    /// a tool result carrying the challenge, which ChatGPT acts on.
    pub in_band_challenges: bool,
    /// Its live tools, when known (not with `check --offline`).
    pub tools: Option<&'a [Value]>,
}

/// Everything the rules look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Input<'a> {
    pub tools: &'a [ToolSite],
    pub renders: &'a [RenderSite],
    pub widgets: &'a [WidgetSite],
    /// The configured upstreams; overlays of any other are not checked here.
    pub upstreams: &'a [Upstream<'a>],
    /// The gateway's `public_url`, when configured.
    pub public_url: Option<&'a str>,
    /// Whose directories' rules apply.
    pub hosts: Hosts,
    /// How hosts sign in to each endpoint that asks them to.
    pub sign_ins: &'a [SignIn],
    /// Each inline widget's height, or why it was not measured.
    pub heights: &'a [Height],
}

/// The three hints both directories require, by wire name.
pub const REQUIRED_HINTS: [&str; 3] = ["readOnlyHint", "destructiveHint", "openWorldHint"];

/// Every finding the chosen hosts ask for: the tools' (overlaid, then the
/// listed ones no overlay names), the widgets', the render tools', the
/// helpers', the endpoints' and the heights'. Render tools always carry the
/// three hints (the gateway's defaults, merged under the overlay's) and an
/// output schema, so only their titles and widgets are checked.
pub fn findings(input: &Input<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for site in input.tools {
        let Some(overlay) = &site.overlay else {
            continue;
        };
        let Some(upstream) = input.upstreams.iter().find(|u| u.mount == site.mount) else {
            continue;
        };
        // `None` offline; `Some(None)` for a tool the listing lacks (reported
        // elsewhere as unknown): the listing's rules skip both.
        let listed = upstream
            .tools
            .map(|tools| tools.iter().find(|t| t["name"] == site.tool.as_str()));
        let tool = listed.flatten();
        let at = Located { site, new: false };
        if let Some(tool) = tool {
            out.extend(annotations(&at, overlay, tool));
            out.extend(claude::title(&at, overlay, tool));
            out.extend(chatgpt::native_ui(&at, overlay, tool));
        }
        if listed.is_none() || tool.is_some() {
            out.extend(chatgpt::output_schema(&at, overlay, tool));
        }
        out.extend(chatgpt::oauth_in_band(&at, overlay, upstream, tool));
    }
    for upstream in input.upstreams {
        out.extend(unoverlaid(input, upstream));
    }
    out.extend(chatgpt::widget_domains(input));
    out.extend(claude::render_titles(input));
    out.extend(claude::helpers(input));
    out.extend(input.sign_ins.iter().filter_map(claude::sign_in));
    out.extend(input.heights.iter().filter_map(claude::height));
    out.retain(|f| input.hosts.ask(f.rule));
    out
}

/// The hints and title of the tools `upstream` lists that no overlay table
/// names: what a new `[tools.<name>]` table in its file would set.
fn unoverlaid(input: &Input<'_>, upstream: &Upstream<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let written = |name: &str| {
        input
            .tools
            .iter()
            .any(|s| s.mount == upstream.mount && s.tool == name)
    };
    let blank = ToolOverlay::default();
    for tool in upstream.tools.unwrap_or_default() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if written(name) {
            continue;
        }
        let site = ToolSite {
            file: upstream.file.to_path_buf(),
            line: None,
            mount: upstream.mount.to_owned(),
            tool: name.to_owned(),
            key: name.to_owned(),
            overlay: None,
        };
        let at = Located {
            site: &site,
            new: true,
        };
        out.extend(annotations(&at, &blank, tool));
        out.extend(claude::title(&at, &blank, tool));
    }
    out
}

/// A tool table's location, for findings.
struct Located<'a> {
    site: &'a ToolSite,
    /// No table names the tool yet: the fix writes a new one.
    new: bool,
}

impl Located<'_> {
    fn finding(&self, rule: Rule, key: &str, message: String) -> Finding {
        let tool = &self.site.key;
        let place = match key {
            "" => format!("tools.{tool}"),
            key => format!("tools.{tool}.{key}"),
        };
        Finding {
            rule,
            file: self.site.file.clone(),
            line: self.site.line,
            place: Some(place),
            message,
        }
    }

    fn is_json(&self) -> bool {
        self.site.file.extension().is_some_and(|e| e == "json")
    }
}

/// [`Rule::Annotations`]: the hints the overlay and the upstream set
/// together, and the overlay lines that would set the missing ones.
fn annotations(at: &Located<'_>, overlay: &ToolOverlay, tool: &Value) -> Option<Finding> {
    let upstream = |key: &str| tool.get("annotations")?.get(key)?.as_bool();
    let ours: Vec<(&str, bool)> = overlay
        .annotations
        .map(|a| a.entries().collect())
        .unwrap_or_default();
    let hint = |key: &str| {
        ours.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .or_else(|| upstream(key))
    };
    let missing: Vec<&str> = REQUIRED_HINTS
        .into_iter()
        .filter(|key| hint(key).is_none())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let read_only = hint("readOnlyHint") == Some(true);
    let lines: Vec<(&str, bool, &str)> = missing
        .iter()
        .map(|key| match *key {
            "readOnlyHint" => (*key, false, "true if it changes nothing"),
            "destructiveHint" if read_only => (*key, false, "it only reads"),
            "destructiveHint" => (*key, true, "false if it never deletes nor overwrites"),
            _ => (
                *key,
                true,
                "false if it reaches nothing beyond its own data",
            ),
        })
        .collect();
    let name = &at.site.key;
    let table = overlay.annotations.is_some();
    let add = if at.is_json() {
        let pairs: Vec<String> = lines
            .iter()
            .map(|(key, value, _)| format!("\"{key}\": {value}"))
            .collect();
        if table {
            format!(
                "add to the \"annotations\" of tool {name:?}, with the values true of the tool (shown: MCP's defaults):\n    {}",
                pairs.join(", ")
            )
        } else {
            format!(
                "add to tool {name:?}, with the values true of the tool (shown: MCP's defaults):\n    \"annotations\": {{ {} }}",
                pairs.join(", ")
            )
        }
    } else {
        let mut text = String::from("add, with the values true of the tool:");
        let header = format!("[tools.{}.annotations]", toml_key(name));
        if table {
            text = format!(
                "add to its annotations ({header} or the inline table), with the values true of the tool:"
            );
        } else {
            text.push_str(&format!("\n    {header}"));
        }
        for (key, value, note) in &lines {
            text.push_str(&format!("\n    {key} = {value}  # {note}"));
        }
        text
    };
    let message = format!(
        "{} missing from its annotations (ChatGPT's app review and Claude's directory require readOnlyHint, destructiveHint and openWorldHint; without them hosts assume a tool that writes, destroys and reaches the outside world); {add}",
        missing.join(", ")
    );
    Some(at.finding(Rule::Annotations, "annotations", message))
}
