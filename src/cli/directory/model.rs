//! What the app directories' rules are about: the hosts, the rules, a
//! finding and where it points, and everything the rules look at (the
//! overlays' sites, the upstreams, the sign-ins and the measured heights).
//! Shared by the rules of both directories ([`super::chatgpt`],
//! [`super::claude`]) and the hints both ask for ([`super`]).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use mcp_ui_overlay::overlay::{RenderSite, ToolSite, WidgetSite};

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

/// Claude's limit on an inline widget's height, in CSS pixels.
pub const CLAUDE_INLINE_MAX_PX: u32 = 500;

/// How hosts sign in to one endpoint that asks them to, as the
/// configuration (and, for another issuer, its metadata) says.
#[derive(Debug, Clone, PartialEq)]
pub struct SignIn {
    /// The configuration file, where the fix is written.
    pub file: PathBuf,
    /// The key path of the setting that decides it (`auth.issuer`,
    /// `upstream[1].forward_headers`, …).
    pub place: String,
    /// The endpoints it decides for (mount names), for the message.
    pub endpoints: Vec<String>,
    pub kind: SignInKind,
}

/// See [`SignIn`].
#[derive(Debug, Clone, PartialEq)]
pub enum SignInKind {
    /// `[authorization_server]`: the gateway is the hosts' authorization
    /// server, with these registration paths enabled.
    Gateway { registration: bool, documents: bool },
    /// `[auth]` with another issuer: its metadata, or why it could not be
    /// read; `None` when it was not fetched (`--offline`).
    Issuer {
        issuer: String,
        metadata: Option<Result<Map<String, Value>, String>>,
    },
    /// An endpoint without `[auth]` whose upstream takes these headers from
    /// the client (`forward_headers`): a static credential the host would
    /// have to present.
    Headers(Vec<String>),
}

/// One inline widget's height, or why it was not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Height {
    /// The overlay file and line of the tool (or render tool) table.
    pub file: PathBuf,
    pub line: Option<usize>,
    /// `tools.<name>` or `render.<name>`.
    pub place: String,
    /// The widget it renders, as the overlay names it.
    pub widget: String,
    pub measured: Measured,
}

/// See [`Height`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Measured {
    /// The height the widget reported, rendered with its sample in headless
    /// Chromium as a host renders it, in CSS pixels.
    Px(u32),
    /// No `sample` to render it with.
    NoSample,
    /// It has a sample, but no height came of it: why (no browser, the
    /// browser failed, the widget reported none), and how to get one.
    NotMeasured { why: String, fix: String },
}

/// A tool table's location, for findings.
pub(super) struct Located<'a> {
    pub(super) site: &'a ToolSite,
    /// No table names the tool yet: the fix writes a new one.
    pub(super) new: bool,
}

impl Located<'_> {
    pub(super) fn finding(&self, rule: Rule, key: &str, message: String) -> Finding {
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

    pub(super) fn is_json(&self) -> bool {
        self.site.file.extension().is_some_and(|e| e == "json")
    }
}
