//! The `mcp-ui-gateway` command: parse the command line, load the layered
//! configuration, and serve; or run the bundled demo server.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_ui_gateway::config::{self, Overrides, Transport, UpstreamConfig};
use mcp_ui_gateway::gateway::Gateway;
use mcp_ui_gateway::live::Live;
use mcp_ui_gateway::server::Server;
use tokio_util::sync::CancellationToken;

/// A lossless MCP reverse proxy that gives existing MCP servers a user interface.
///
/// With no arguments it serves the bundled demo server (a task list, run as a
/// stdio child) on http://127.0.0.1:8787/mcp.
#[derive(Parser, Debug)]
#[command(version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Log format on stderr (level from RUST_LOG, default info).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve MCP on --listen, in front of the configured upstream(s).
    Serve(ServeArgs),
    /// Run the bundled legacy demo MCP server (a task list) over stdio, or
    /// over streamable HTTP with --http.
    DemoServer {
        /// Serve streamable HTTP at ADDR/mcp instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
}

#[derive(clap::Args, Debug, Default)]
struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8787, or `listen` in the config].
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// Configuration file [default: config/gateway.toml when it exists].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Overlay directory, watched and reloaded live [default: overlays].
    #[arg(long, value_name = "DIR")]
    overlays: Option<PathBuf>,
    /// Front one streamable HTTP upstream, e.g. http://127.0.0.1:3001/mcp.
    #[arg(long, value_name = "URL", conflicts_with_all = ["upstream_sse", "command"])]
    upstream: Option<String>,
    /// Front one legacy HTTP+SSE upstream, e.g. http://127.0.0.1:3001/sse.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    upstream_sse: Option<String>,
    /// Name of the upstream given on the command line (logs, errors).
    #[arg(long, value_name = "NAME", default_value = "upstream")]
    name: String,
    /// Path to serve the upstream given on the command line at.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    path: String,
    /// Front a stdio server: everything after `--` is its command and arguments.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The demo server's stderr ends up in the gateway's log: keep it quiet.
    let default_level = match cli.command {
        Some(Command::DemoServer { .. }) => "warn",
        _ => "info",
    };
    init_logging(cli.log_format, default_level);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match cli.command {
        Some(Command::DemoServer { http: None }) => {
            report(runtime.block_on(mcp_ui_gateway::demo::serve_stdio()))
        }
        Some(Command::DemoServer { http: Some(addr) }) => report(runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!(
                "demo server: http://{}{}",
                listener.local_addr()?,
                mcp_ui_gateway::demo::HTTP_PATH
            );
            let stop = CancellationToken::new();
            tokio::spawn(stop_on_signal(stop.clone()));
            mcp_ui_gateway::demo::serve_http(listener, stop).await
        })),
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        None => runtime.block_on(serve(ServeArgs::default_demo())),
    }
}

impl ServeArgs {
    fn default_demo() -> Self {
        ServeArgs {
            name: "upstream".into(),
            path: "/mcp".into(),
            ..Default::default()
        }
    }

    /// The upstream named on the command line, if any.
    fn upstream(&self) -> Option<UpstreamConfig> {
        let base = UpstreamConfig {
            name: self.name.clone(),
            path: Some(self.path.clone()),
            ..Default::default()
        };
        if let Some(url) = &self.upstream {
            Some(UpstreamConfig {
                url: Some(url.clone()),
                ..base
            })
        } else if let Some(url) = &self.upstream_sse {
            Some(UpstreamConfig {
                sse_url: Some(url.clone()),
                ..base
            })
        } else if let Some((program, args)) = self.command.split_first() {
            Some(UpstreamConfig {
                command: Some(program.clone()),
                args: args.to_vec(),
                ..base
            })
        } else {
            None
        }
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let overrides = Overrides {
        listen: args.listen,
        overlays: args.overlays.clone(),
        upstreams: args.upstream().map(|u| vec![u]),
    };
    let (mut config, file) = match config::load(args.config.as_deref(), &overrides) {
        Ok(c) => c,
        Err(e) => return fail(&format!("configuration error: {e}")),
    };
    let source = file
        .map(|f| f.display().to_string())
        .unwrap_or_else(|| "defaults".into());
    if config.upstreams.is_empty() {
        config.upstreams.push(demo_upstream());
    }
    let mounts = match config.mounts() {
        Ok(m) => m,
        Err(e) => {
            return fail(&format!(
                "configuration error ({source}, environment and flags):\n{e}"
            ));
        }
    };
    let live = match Live::open(&config.overlays) {
        Ok(live) => live,
        Err(errors) => return fail(&format!("{} (in {})", errors, config.overlays.display())),
    };
    let gateway = match Gateway::new(&config, mounts, live.clone()) {
        Ok(g) => g,
        Err(e) => {
            return fail(&format!(
                "configuration error ({source}, environment and flags):\n{e}"
            ));
        }
    };
    if !config.listen.ip().is_loopback() {
        tracing::warn!(listen = %config.listen, "listening on a non-loopback address: anyone who can reach it can use every upstream; put authentication in front and set allowed_hosts and allowed_origins");
    }
    if config.session_key.is_none() {
        tracing::info!(
            "no session_key set: sessions are sealed with a random key and end with this process"
        );
    }
    let server = match Server::bind(gateway.clone(), config.listen).await {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot listen on {}: {e}", config.listen)),
    };
    let addr = server.local_addr();
    for m in &gateway.mounts {
        let m = &m.mount;
        let what = match &m.transport {
            Transport::Http { url } => format!("streamable HTTP {url}"),
            Transport::Sse { url } => format!("legacy SSE {url}"),
            Transport::Stdio(c) => format!(
                "stdio `{}`",
                std::iter::once(&c.program)
                    .chain(&c.args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        };
        println!(
            "MCP endpoint: http://{addr}{} -> upstream '{}' ({what})",
            m.path, m.name
        );
    }
    tracing::info!(%addr, config = %source, "mcp-ui-gateway serving");
    let stop = CancellationToken::new();
    if let Err(e) = live.watch(stop.clone()) {
        tracing::warn!(error = %e, dir = %config.overlays.display(), "cannot watch the overlay directory; edits need a restart");
    }
    tokio::spawn(stop_on_signal(stop.clone()));
    server
        .run(stop, Duration::from_secs(config.shutdown_grace_secs))
        .await;
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// The bundled demo: this same executable, run as a stdio server.
fn demo_upstream() -> UpstreamConfig {
    let program = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "mcp-ui-gateway".into());
    UpstreamConfig {
        name: "demo".into(),
        command: Some(program),
        args: vec!["demo-server".into()],
        ..Default::default()
    }
}

async fn stop_on_signal(stop: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down");
    stop.cancel();
}

fn init_logging(format: LogFormat, default_level: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("{e:#}")),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("mcp-ui-gateway: {message}");
    ExitCode::FAILURE
}
