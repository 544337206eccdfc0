//! The `mcp-ui-gateway` command: parse the command line, load the layered
//! configuration, and serve; check or scaffold the overlays; or run the
//! bundled demo server.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_ui_gateway::cli;
use mcp_ui_gateway::cli::args::{Cli, Command, LogFormat, ServeArgs};
use mcp_ui_gateway::cli::loaded::{Loaded, load_config, overlay_apps};
use mcp_ui_gateway::cli::output::{fail, usage_fail};
use mcp_ui_model::config::{Config, Overrides};
use mcp_ui_overlay::host::WidgetOrigins;
use mcp_ui_proxy::gateway::Gateway;
use mcp_ui_proxy::live::Live;
use mcp_ui_proxy::server::ListenerTls;
use mcp_ui_proxy::server::Server;
use mcp_ui_upstream::upstream::stdio::guardian;
use tokio_util::sync::CancellationToken;

/// mimalloc: the gateway allocates and frees small buffers on every request
/// (header maps, bodies, ids), which it serves faster than the system
/// allocator (see BENCHMARKS.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Print a line on stdout; a closed stdout (`| head`) is not an error worth
/// dying for, unlike with `println!`.
macro_rules! say {
    ($($arg:tt)*) => { cli::output::say_line(format_args!($($arg)*)) };
}

fn main() -> ExitCode {
    let cli = Cli::parse_args();
    if let Some(Command::GuardChildren) = cli.command {
        init_logging(cli.log_format, "info");
        return guard_children();
    }
    // The demo server's stderr ends up in the gateway's log: keep it quiet.
    // `check` and `init` print what matters themselves; of the log they keep
    // warnings and what a stdio upstream says on stderr (why it failed).
    let default_level = match cli.command {
        Some(Command::DemoServer { .. }) => "warn",
        Some(Command::Check(_) | Command::Init(_)) => "warn,mcp_ui_gateway::upstream::stderr=info",
        _ => "info",
    };
    init_logging(cli.log_format, default_level);
    // `serve` runs connections on single-threaded runtimes, this thread's
    // among them (see `Server::run_workers`); the other commands share one.
    let runtime = match cli.command {
        Some(Command::Serve(_)) | None => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Runtime::new(),
    }
    .expect("tokio runtime");
    match cli.command {
        Some(Command::DemoServer { http: None }) => {
            report(runtime.block_on(mcp_ui_gateway::demo::serve_stdio()))
        }
        Some(Command::DemoServer { http: Some(addr) }) => report(runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let stop = CancellationToken::new();
            stop_on_signal(stop.clone());
            say!(
                "demo server: http://{}{}",
                listener.local_addr()?,
                mcp_ui_gateway::demo::HTTP_PATH
            );
            mcp_ui_gateway::demo::serve_http(listener, stop).await
        })),
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        Some(Command::Check(args)) => runtime.block_on(cli::run_check::run(args)),
        Some(Command::Init(args)) => runtime.block_on(cli::run_init::run(args)),
        Some(Command::GuardChildren) => unreachable!("handled above"),
        None => runtime.block_on(serve(cli.serve)),
    }
}

/// A directory removed when this is dropped.
struct Removed(std::path::PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bundled demo served where there is no overlay directory (the binary
/// run outside a checkout): its overlays, built in, written to a directory
/// of this process's own, which is used instead and removed at exit.
fn demo_overlays(config: &mut Config) -> Option<Removed> {
    let dir = std::env::temp_dir().join(format!("mcp-ui-gateway-demo-{}", std::process::id()));
    match mcp_ui_gateway::demo::overlays::write(&dir) {
        Ok(()) => {
            tracing::info!(
                missing = %config.overlays.display(),
                dir = %dir.display(),
                "no overlay directory: the bundled demo is served with its built-in overlays"
            );
            config.overlays = dir.clone();
            Some(Removed(dir))
        }
        Err(e) => {
            tracing::warn!(error = %e, dir = %dir.display(), "cannot write the demo's built-in overlays: the demo is served without its widgets");
            let _ = std::fs::remove_dir_all(&dir);
            None
        }
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let one = match args.one.upstream(&args.path) {
        Ok(one) => one,
        Err(message) => return usage_fail(&message),
    };
    let overrides = overrides(&args, one);
    let Loaded {
        mut config,
        resolved,
        source,
        demo,
    } = match load_config(args.config.as_deref(), &overrides) {
        Ok(loaded) => loaded,
        Err(message) => return fail(&message),
    };
    let _demo_overlays = (demo && args.overlays.is_none() && !config.overlays.exists())
        .then(|| demo_overlays(&mut config))
        .flatten();
    start_guardian();
    let live = match open_overlays(&config, &resolved) {
        Ok(live) => live,
        Err(code) => return code,
    };
    let gateway = match Gateway::new(&config, resolved, live.clone()) {
        Ok(g) => g,
        Err(e) => {
            return fail(&format!(
                "configuration error ({source}, environment and flags):\n{e}"
            ));
        }
    };
    live.describe(
        gateway
            .mounts
            .iter()
            .map(|m| m.config.name.clone())
            .collect(),
    );
    warn_and_raise_limits(&config);
    let (server, tls) = match listen(&config, &gateway, &source).await {
        Ok(listening) => listening,
        Err(code) => return code,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let addr = server.local_addr();
    // Signals first: whoever reads the endpoint line may stop us at once.
    let stop = CancellationToken::new();
    stop_on_signal(stop.clone());
    if let Some(tls) = &tls {
        tls.watch(stop.clone());
    }
    announce(&gateway, &config, scheme, addr);
    tracing::info!(
        %addr,
        tls = tls.is_some(),
        config = %source,
        max_connections = server.max_connections(),
        "mcp-ui-gateway serving"
    );
    if let Err(e) = live.watch(stop.clone()) {
        tracing::warn!(error = %e, dir = %config.overlays.display(), "cannot watch the overlay directory; edits need a restart");
    }
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    let workers = server.run_workers(config.worker_count(), stop, grace);
    tokio::pin!(workers);
    // Beside serving, never delaying its end.
    tokio::select! {
        () = &mut workers => {}
        () = beside_serving(&config, &gateway) => workers.await,
    }
    if let Some(tracer) = &gateway.telemetry
        && !tracer.flush(Duration::from_secs(5)).await
    {
        tracing::warn!("traces still queued after 5 s at shutdown were not exported");
    }
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// The overlay directory, loaded for the resolved apps and watched from
/// then on; the exit code of a failure (said on stderr) otherwise.
fn open_overlays(
    config: &Config,
    resolved: &mcp_ui_model::config::Resolved,
) -> Result<Arc<Live>, ExitCode> {
    let overlay_options = mcp_ui_overlay::overlay::LoadOptions {
        max_bytes: config.limits.max_widget_bytes,
        public_url: config.public_url.clone(),
        apps: overlay_apps(&resolved.apps),
    };
    Live::open_with(&config.overlays, overlay_options)
        .map_err(|errors| fail(&format!("{} (in {})", errors, config.overlays.display())))
}

/// The listener, bound, with TLS when `tls_cert` and `tls_key` are set;
/// the exit code of a failure (said on stderr) otherwise.
async fn listen(
    config: &Config,
    gateway: &Arc<Gateway>,
    source: &str,
) -> Result<(Server, Option<Arc<ListenerTls>>), ExitCode> {
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => match ListenerTls::load(cert, key) {
            Ok(tls) => Some(Arc::new(tls)),
            Err(e) => return Err(fail(&format!("configuration error ({source}): {e}"))),
        },
        _ => None,
    };
    let server = match Server::bind(gateway.clone(), config.listen).await {
        Ok(s) => s,
        Err(e) => return Err(fail(&cli::listen_error(config.listen, &e))),
    };
    let server = match &tls {
        Some(tls) => server.with_tls(tls.clone()),
        None => server,
    };
    Ok((server, tls))
}

/// The settings the command line gives, over the configuration's.
fn overrides(args: &ServeArgs, one: Option<mcp_ui_model::config::UpstreamConfig>) -> Overrides {
    Overrides {
        listen: args.listen,
        overlays: args.overlays.clone(),
        preview: match (args.preview, args.no_preview) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        workers: args.workers,
        tls_cert: args.tls_cert.clone(),
        tls_key: args.tls_key.clone(),
        upstreams: one.map(|u| vec![u]),
    }
}

/// What the operator should know before serving starts (an exposed
/// listener, sessions that end with the process), and the open file limit
/// raised as far as it goes.
fn warn_and_raise_limits(config: &Config) {
    if let Some(warning) = config.exposure_warning() {
        tracing::warn!(listen = %config.listen, "{warning}");
    }
    if config.session_key.is_none() {
        tracing::info!(
            "no session_key set: sessions are sealed with a random key and end with this process"
        );
    }
    // Every connection, upstream connection and stdio pipe takes a file
    // descriptor: take all the hard limit allows.
    let fds = mcp_ui_proxy::server::raise_fd_limit();
    let shown = |v: Option<u64>| v.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
    tracing::info!(
        soft = %shown(fds.soft),
        was = %shown(fds.before),
        hard = %shown(fds.hard),
        "open file limit (RLIMIT_NOFILE)"
    );
}

/// The lines on stdout naming every endpoint served at `scheme://addr`:
/// the mounts, the apps, the authorization server, the preview, and the
/// widget origins behind `public_url`.
fn announce(gateway: &Gateway, config: &Config, scheme: &str, addr: std::net::SocketAddr) {
    for m in &gateway.mounts {
        let m = &m.config;
        let what = cli::describe_transport(m);
        say!(
            "MCP endpoint: {scheme}://{addr}{} -> upstream '{}' ({what}){}",
            m.path,
            m.name,
            cli::describe_auth(m.auth.as_ref(), config.auth.is_some())
        );
    }
    for app in &gateway.apps {
        say!(
            "App endpoint: {scheme}://{addr}{} -> {}{}",
            app.config.path,
            app.config.upstream_names().join(", "),
            cli::describe_auth(app.config.auth.as_ref(), config.auth.is_some())
        );
    }
    if let Some(a) = &gateway.oauth.authorization_server {
        say!(
            "Authorization server: {} (metadata at {scheme}://{addr}/.well-known/oauth-authorization-server); users sign in with {}",
            a.issuer(),
            a.config.provider.name
        );
    }
    if gateway.preview {
        say!("Preview: {scheme}://{addr}{}", mcp_ui_proxy::preview::PATH);
    }
    let paths = gateway.mounts.iter().map(|m| m.config.path.as_str());
    let paths = paths.chain(gateway.apps.iter().map(|a| a.config.path.as_str()));
    for path in paths {
        if let Some(o) = WidgetOrigins::behind(config.public_url.as_deref(), path) {
            say!("{}", o.line());
        }
    }
}

/// What is listed once at start, beside serving: the overlays compared with
/// their upstreams' live tools, and the app endpoints' members.
async fn beside_serving(config: &mcp_ui_model::config::Config, gateway: &Gateway) {
    let mounts: Vec<_> = gateway.mounts.iter().map(|m| &m.config).collect();
    let compare = mcp_ui_proxy::upstream_tools::compare_at_start(
        &mounts,
        &config.limits,
        &gateway.live,
        &gateway.upstream_tools,
    );
    tokio::join!(compare, name_app_collisions(config, gateway));
}

/// The `[[app]]` endpoints' members are listed once, beside serving, as
/// `check` lists them: a tool name two members offer is logged at start, not
/// first met by a client.
async fn name_app_collisions(config: &mcp_ui_model::config::Config, gateway: &Gateway) {
    let apps: Vec<_> = gateway.apps.iter().map(|a| a.config.clone()).collect();
    if apps.is_empty() {
        return;
    }
    let mounts: Vec<_> = gateway.mounts.iter().map(|m| m.config.clone()).collect();
    let problems =
        cli::apps::collisions(&apps, &mounts, &config.limits, &mut std::io::sink()).await;
    for problem in problems {
        tracing::warn!("{problem} (the members' tools as listed at start)");
    }
}

/// Start the process that ends the stdio children if this one is killed
/// (`upstream::stdio::guardian`); without it the gateway still serves.
fn start_guardian() {
    let started = std::env::current_exe().and_then(|exe| guardian::start(&exe));
    match started {
        Ok(pid) => tracing::debug!(pid, "started the stdio children's guardian"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot start the stdio children's guardian; a killed gateway may leave stdio children running");
        }
    }
}

/// The guardian's process: follow the gateway's list of process groups on
/// stdin; at its end (the gateway is gone), end the groups still listed.
fn guard_children() -> ExitCode {
    let left = guardian::run(std::io::stdin().lock());
    if left > 0 {
        tracing::warn!(
            groups = left,
            "the gateway is gone; ended the stdio children it left"
        );
    }
    ExitCode::SUCCESS
}

/// Cancel `stop` on SIGTERM or SIGINT. The handlers are installed before this
/// returns, so a signal sent as soon as the endpoint is printed is honoured.
fn stop_on_signal(stop: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("cannot install signal handlers; stop the gateway with SIGKILL");
            return;
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            // The server logs the shutdown; logging here could fail (a
            // closed stderr) before the cancel.
            stop.cancel();
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
}

fn init_logging(format: LogFormat, default_level: &str) {
    use mcp_ui_proxy::middleware::request_id::SpanFields;
    use std::io::IsTerminal;
    use tracing_subscriber::fmt::format::{DefaultFields, JsonFields};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| {
            tracing_subscriber::EnvFilter::try_new(mcp_ui_gateway::log_filter::directives(&spec))
                .ok()
        })
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default_level));
    let ansi = std::io::stderr().is_terminal();
    let logs = tracing_subscriber::registry().with(filter);
    // The request span's fields written once, beneath the formatter (which
    // would style them for a terminal).
    match format {
        LogFormat::Text => logs
            .with((!ansi).then(SpanFields::<DefaultFields>::new))
            .with(log_lines(ansi))
            .init(),
        LogFormat::Json => logs
            .with((!ansi).then(SpanFields::<JsonFields>::new))
            .with(log_lines(ansi).json())
            .init(),
    }
}

type Stderr = fn() -> std::io::Stderr;

/// The log formatter, writing to stderr.
fn log_lines<S>(
    ansi: bool,
) -> tracing_subscriber::fmt::Layer<
    S,
    tracing_subscriber::fmt::format::DefaultFields,
    tracing_subscriber::fmt::format::Format,
    Stderr,
> {
    tracing_subscriber::fmt::layer()
        // A closed stderr must not turn every log call into a panic.
        .log_internal_errors(false)
        .with_ansi(ansi)
        .with_writer(std::io::stderr as Stderr)
}

fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("{e:#}")),
    }
}
