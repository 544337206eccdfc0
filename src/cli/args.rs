//! The command line of the `mcp-ui-gateway` binary, as clap types: every
//! command, flag and help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use mcp_ui_model::config::UpstreamConfig;

/// A lossless MCP reverse proxy that gives existing MCP servers a user interface.
///
/// With no command it serves: `mcp-ui-gateway --listen ADDR` is `mcp-ui-gateway
/// serve --listen ADDR`, and with no arguments at all it serves the bundled
/// demo server (a task list, run as a stdio child) on
/// http://127.0.0.1:8787/mcp.
#[derive(Parser, Debug)]
#[command(version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `serve`'s flags, taken when no command is named.
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Log format on stderr (level from RUST_LOG, default info).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Cli {
    /// The command line, parsed; exits with a usage error (status 2) as
    /// clap does, also for `serve`'s flags given before a command
    /// (`--listen ADDR check`), which would otherwise be ignored.
    pub fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches, error::ErrorKind, parser::ValueSource};
        let mut command = Cli::command();
        let matches = command.get_matches_mut();
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit());
        if let Some((name, _)) = matches.subcommand() {
            let before: Vec<String> = matches
                .ids()
                .map(|id| id.as_str())
                .filter(|id| *id != "log_format")
                .filter(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
                .map(|id| match id {
                    "command" => "-- COMMAND".to_owned(),
                    id => format!("--{}", id.replace('_', "-")),
                })
                .collect();
            if !before.is_empty() {
                command
                    .error(
                        ErrorKind::ArgumentConflict,
                        format!(
                            "{} given before `{name}`: a command's flags go after it (`mcp-ui-gateway {name} {}`), and `serve`'s flags work without a command",
                            before.join(", "),
                            before[0]
                        ),
                    )
                    .exit();
            }
        }
        cli
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve MCP on --listen, in front of the configured upstream(s).
    Serve(ServeArgs),
    /// Check the overlays: every problem, one per line, then a summary.
    ///
    /// Reports what loading the overlay directory reports (syntax, unknown
    /// keys, missing widgets, status text over 64 characters, malformed CSP
    /// origins, ...), overlay files for upstreams that are not configured,
    /// and, unless --offline, what each overlaid upstream's live tools/list
    /// contradicts: unknown tools, file parameters its input schema cannot
    /// carry, result shaping that cannot work. Warns of what the app
    /// directories ask, each warning naming the hosts that ask it (ChatGPT's
    /// review: annotation hints, output schemas, in-band OAuth challenges,
    /// widget domains, native MCP Apps tools an overlay replaces; Claude's
    /// directory: titles and hints, app-only helpers, sign-in, widget
    /// height, measured in headless Chromium with each widget's sample);
    /// --host chooses whose, --strict makes them problems. Takes the upstreams
    /// from the configuration, or one from the same flags as `serve`. Exit
    /// status: 0 when clean, 1 when there are problems, 2 on a usage or
    /// configuration error.
    Check(CheckArgs),
    /// Write overlay stubs for the tools of a live upstream.
    ///
    /// Lists the tools of every configured upstream (or only --name NAME's),
    /// or of the one upstream given as for `serve` (--upstream URL,
    /// --upstream-sse URL, or a stdio server after `--`, named by --name),
    /// and writes <overlays>/<name>.toml: one [tools.<tool>] table per tool,
    /// its keys commented out, so the file changes nothing until edited.
    /// Never replaces an existing file without --force. Ends with the
    /// `check` command line for the same upstream and directory.
    Init(InitArgs),
    /// Run the bundled legacy demo MCP server (a task list) over stdio, or
    /// over streamable HTTP with --http.
    DemoServer {
        /// Serve streamable HTTP at ADDR/mcp instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// Started by `serve` next to itself: ends the stdio children's process
    /// groups once the gateway is gone (`upstream::stdio::guardian`).
    #[command(name = "guard-children", hide = true)]
    GuardChildren,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Configuration file [default: config/gateway.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Overlay directory [default: overlays, or `overlays` in the config].
    #[arg(long, value_name = "DIR")]
    pub overlays: Option<PathBuf>,
    /// Do not contact the upstreams: check the files alone.
    #[arg(long)]
    pub offline: bool,
    /// Fail on the app directory rules too: report them as problems (exit
    /// 1) instead of warnings.
    #[arg(long)]
    pub strict: bool,
    /// Whose app directory rules to apply: `claude` (Claude's connector
    /// directory: titles, the three hints, app-only helper tools, sign-in by
    /// OAuth with dynamic registration or a Client ID Metadata Document,
    /// inline widgets at most 500 px high), `chatgpt` (ChatGPT's app review:
    /// the three hints, output schemas, in-band OAuth challenges, widget
    /// domains) or `both`. Each finding names the hosts that ask for it; with
    /// --strict, CI fails only on the chosen hosts' rules.
    #[arg(long, value_enum, default_value_t = DirectoryHost::Both)]
    pub host: DirectoryHost,
    /// The browser Claude's widget-height rule renders widgets in: each
    /// inline widget with a `sample` is rendered in headless Chromium, as
    /// a host renders it (its resource as the gateway serves it, the ui/*
    /// bridge, 720 px wide), and the height it reports is compared with 500
    /// px; all in one browser run, offline too [default: $CHROMIUM, else
    /// chromium, chromium-browser, google-chrome or google-chrome-stable on
    /// the PATH]. Without one, the widgets are reported as not measured.
    #[arg(long, value_name = "PATH")]
    pub browser: Option<PathBuf>,
    /// How long the browser may take to measure the widgets before it is
    /// ended and they are reported as not measured.
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub browser_timeout: u64,
    #[command(flatten)]
    pub one: OneUpstream,
}

/// `check --host`: whose app directory rules apply.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectoryHost {
    Claude,
    Chatgpt,
    Both,
}

impl DirectoryHost {
    /// The hosts whose rules apply.
    pub fn hosts(self) -> super::directory::Hosts {
        use super::directory::Hosts;
        match self {
            DirectoryHost::Claude => Hosts::CLAUDE,
            DirectoryHost::Chatgpt => Hosts::CHATGPT,
            DirectoryHost::Both => Hosts::BOTH,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Configuration file [default: config/gateway.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Overlay directory to write into, created if missing [default:
    /// overlays, or `overlays` in the config].
    #[arg(long, value_name = "DIR")]
    pub overlays: Option<PathBuf>,
    /// Replace stub files that already exist.
    #[arg(long)]
    pub force: bool,
    /// Scaffold a minimal widget folder `widgets/NAME/` (an HTML document
    /// speaking the MCP Apps bridge and window.openai, and its manifest)
    /// instead of tool stubs.
    #[arg(long, value_name = "NAME")]
    pub widget: Option<String>,
    #[command(flatten)]
    pub one: OneUpstream,
}

#[derive(clap::Args, Debug, Default)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8787, or `listen` in the config].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Configuration file [default: config/gateway.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Overlay directory, watched and reloaded live [default: overlays].
    #[arg(long, value_name = "DIR")]
    pub overlays: Option<PathBuf>,
    /// Serve /preview, a browser page rendering the mounts' tools and widgets
    /// [default: on with a loopback --listen, or `preview` in the config].
    #[arg(long, overrides_with = "no_preview")]
    pub preview: bool,
    /// Do not serve /preview.
    #[arg(long, overrides_with = "preview")]
    pub no_preview: bool,
    /// Threads serving connections, each with its own event loop
    /// [default: one per CPU, or `workers` in the config].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); re-read
    /// when it changes [default: `tls_cert` in the config]. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert [default: `tls_key` in the config].
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Path the gateway serves the upstream given on the command line at.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    pub path: String,
    #[command(flatten)]
    pub one: OneUpstream,
}

/// One upstream given on the command line instead of the configured ones:
/// the same flags, with the same meaning, for `serve`, `check` and `init`.
#[derive(clap::Args, Debug, Default)]
pub struct OneUpstream {
    // Which of these three may go together is checked by `upstream()`, not
    // by clap: a name where the URL belongs (`--upstream NAME -- COMMAND`,
    // as `init` once took) gets a message that says so.
    /// One streamable HTTP upstream instead of the configured ones, e.g.
    /// http://127.0.0.1:3001/mcp.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// One legacy HTTP+SSE upstream instead of the configured ones, e.g.
    /// http://127.0.0.1:3001/sse.
    #[arg(long, value_name = "URL")]
    pub upstream_sse: Option<String>,
    /// Name of the upstream given on the command line (logs, errors, and its
    /// overlay file: <overlays>/<NAME>.toml) [default: upstream]. Without an
    /// upstream on the command line, `check` and `init` take the configured
    /// upstream of that name (`check --offline` takes any name: it needs no
    /// upstream).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// One stdio server instead of the configured ones: everything after
    /// `--` is its command and arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The name of an upstream given on the command line without `--name`.
pub const DEFAULT_NAME: &str = "upstream";

impl OneUpstream {
    /// Whether the flags give an upstream (a URL or a command), not only a
    /// name.
    pub fn given(&self) -> bool {
        self.upstream.is_some() || self.upstream_sse.is_some() || !self.command.is_empty()
    }

    /// The upstream given on the command line, if any, served at `path`.
    /// `Err` for a usage error: a URL flag whose value is not a URL (a name
    /// given where a URL belongs, as `init --upstream NAME` once took), or
    /// more than one upstream.
    pub fn upstream(&self, path: &str) -> Result<Option<UpstreamConfig>, String> {
        for (flag, value) in [
            ("--upstream", &self.upstream),
            ("--upstream-sse", &self.upstream_sse),
        ] {
            if let Some(value) = value
                && !value.contains("://")
            {
                return Err(format!(
                    "{flag} takes the URL of an upstream (e.g. http://127.0.0.1:3001/mcp), not \"{value}\"; to name the upstream, or to pick a configured one, use --name {value}"
                ));
            }
        }
        let given = [
            self.upstream.is_some(),
            self.upstream_sse.is_some(),
            !self.command.is_empty(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(
                "give one upstream: --upstream URL, --upstream-sse URL or a command after `--`"
                    .into(),
            );
        }
        let name = self.name.as_deref().unwrap_or(DEFAULT_NAME);
        Ok(command_line_upstream(
            name,
            path,
            self.upstream.as_deref(),
            self.upstream_sse.as_deref(),
            &self.command,
        ))
    }
}

/// An upstream given by flags: `url`, `sse_url` or a stdio `command`.
pub fn command_line_upstream(
    name: &str,
    path: &str,
    url: Option<&str>,
    sse_url: Option<&str>,
    command: &[String],
) -> Option<UpstreamConfig> {
    let base = UpstreamConfig {
        name: name.to_owned(),
        path: Some(path.to_owned()),
        ..Default::default()
    };
    if let Some(url) = url {
        Some(UpstreamConfig {
            url: Some(url.to_owned()),
            ..base
        })
    } else if let Some(url) = sse_url {
        Some(UpstreamConfig {
            sse_url: Some(url.to_owned()),
            ..base
        })
    } else if let Some((program, args)) = command.split_first() {
        Some(UpstreamConfig {
            command: Some(program.clone()),
            args: args.to_vec(),
            ..base
        })
    } else {
        None
    }
}
