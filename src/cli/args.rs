//! The command line of the `mcp-ui-gateway` binary, as clap types: every
//! command, flag and help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::UpstreamConfig;

/// A lossless MCP reverse proxy that gives existing MCP servers a user interface.
///
/// With no arguments it serves the bundled demo server (a task list, run as a
/// stdio child) on http://127.0.0.1:8787/mcp.
#[derive(Parser, Debug)]
#[command(version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Log format on stderr (level from RUST_LOG, default info).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
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
    /// directories ask (ChatGPT's review): annotation hints, output schemas,
    /// in-band OAuth challenges, widget domains, native MCP Apps tools an
    /// overlay replaces; --strict makes these problems. Takes the upstreams
    /// from the configuration, or one from the same flags as `serve`. Exit
    /// status: 0 when clean, 1 when there are problems, 2 on a usage or
    /// configuration error.
    Check(CheckArgs),
    /// Write overlay stubs for the tools of a live upstream.
    ///
    /// Lists the tools of every configured upstream (or --upstream NAME, or
    /// the stdio server given after `--`) and writes <overlays>/<name>.toml:
    /// one [tools.<tool>] table per tool, its keys commented out, so the file
    /// changes nothing until edited. Never replaces an existing file without
    /// --force.
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
    #[command(flatten)]
    pub one: OneUpstream,
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
    /// Only this upstream [default: every configured one]; with a command
    /// after `--` or --upstream-sse, the name to give that upstream.
    #[arg(long, visible_alias = "name", value_name = "NAME")]
    pub upstream: Option<String>,
    /// One legacy HTTP+SSE upstream instead of the configured ones, e.g.
    /// http://127.0.0.1:3001/sse.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream_sse: Option<String>,
    /// Replace stub files that already exist.
    #[arg(long)]
    pub force: bool,
    /// One stdio server instead of the configured ones: everything after
    /// `--` is its command and arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
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
    #[command(flatten)]
    pub one: OneUpstream,
}

/// One upstream given on the command line instead of the configured ones.
#[derive(clap::Args, Debug, Default)]
pub struct OneUpstream {
    /// One streamable HTTP upstream instead of the configured ones, e.g.
    /// http://127.0.0.1:3001/mcp.
    #[arg(long, value_name = "URL", conflicts_with_all = ["upstream_sse", "command"])]
    pub upstream: Option<String>,
    /// One legacy HTTP+SSE upstream instead of the configured ones, e.g.
    /// http://127.0.0.1:3001/sse.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream_sse: Option<String>,
    /// Name of the upstream given on the command line (logs, errors, and its
    /// overlay file: <overlays>/<NAME>.toml).
    #[arg(long, value_name = "NAME", default_value = "upstream")]
    pub name: String,
    /// Path the gateway serves the upstream given on the command line at.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    pub path: String,
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

impl ServeArgs {
    pub fn default_demo() -> Self {
        ServeArgs {
            // The demo is for trying things out: show its widget in /preview.
            preview: true,
            one: OneUpstream {
                name: "upstream".into(),
                path: "/mcp".into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

impl OneUpstream {
    /// The upstream named on the command line, if any.
    pub fn upstream(&self) -> Option<UpstreamConfig> {
        command_line_upstream(
            &self.name,
            &self.path,
            self.upstream.as_deref(),
            self.upstream_sse.as_deref(),
            &self.command,
        )
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
