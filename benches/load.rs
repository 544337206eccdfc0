//! The load benchmark: real MCP (initialize, session header, JSON and SSE
//! responses) from N concurrent sessions × M calls, against a fast in-tree
//! upstream reached directly, through the gateway, through the reference
//! HTTP proxies nginx and HAProxy, the Rust MCP gateway `mcp-proxy`
//! (benches/load/refs.rs) and IBM ContextForge (benches/load/contextforge.rs),
//! and through the stdio bridges `supergateway` (npm) and `mcp-proxy` (PyPI),
//! all in one run.
//!
//! `cargo bench --bench load` runs everything (it installs the peers first
//! with scripts/install-peers.sh) and writes target/bench/load.md and
//! target/bench/latency.svg. `-- --quick` runs shorter points; `-- --only
//! NAME[,NAME]` selects scenarios (sweep, revision, sse, tls, stdio, everything, big, list,
//! idle, reload, app, hosts, auth, authorization-server, memory, families; revision: a
//! sessionless 2026-07-28 call against a 2025 call on a session (benches/load/revision.rs);
//! auth: the gateway with `[auth]` (RS256 and ES256 JWTs, introspected tokens) against
//! the same gateway open (benches/load/signed.rs);
//! authorization-server: the gateway's token endpoint, its store in memory and
//! in Redis, against oidc-provider's (benches/load/tokens.rs); memory and
//! families: the gateway's memory per signed-in caller and per refresh-token
//! family (benches/load/memory.rs); app: an app endpoint against a single mount; hosts: the
//! patterns of ChatGPT and Claude against a stdio server, before and after
//! client sessions stopped owning a process (benches/load/hosts.rs); tls: HTTPS upstreams and an HTTPS listener against plain, with
//! the gateway's TLS handshakes per point); `-- --no-peers` skips the peers; `-- --secs S` sets the time of
//! each point and `-- --conc 1,32` the concurrencies of the sweeps (for
//! profiling one case). `-- --target NAME=URL` (repeated) drives endpoints
//! that are already running instead (see `-- --help`). Without `--bench` (as
//! `cargo test --all-targets` runs it) it is a few-second correctness smoke
//! of direct and gateway paths (TLS included, and the authorization
//! server's token endpoint in miniature) that asserts zero errors,
//! connections kept across calls, and never speed.
//!
//! The same binary is the upstream: `__upstream-http`, `__upstream-https`
//! and `__upstream-stdio`.

#[path = "load/app.rs"]
mod app;
#[path = "load/client.rs"]
mod client;
#[path = "load/contextforge.rs"]
mod contextforge;
#[path = "load/everything.rs"]
mod everything;
#[path = "load/given.rs"]
mod given;
#[path = "load/hosts.rs"]
mod hosts;
#[path = "load/memory.rs"]
mod memory;
#[path = "load/oauth.rs"]
mod oauth;
#[path = "load/opts.rs"]
mod opts;
#[path = "../tests/support/process.rs"]
mod process;
#[path = "load/procs.rs"]
mod procs;
#[path = "load/refs.rs"]
mod refs;
#[path = "load/relay.rs"]
mod relay;
#[path = "load/report.rs"]
mod report;
#[path = "load/revision.rs"]
mod revision;
#[path = "load/run.rs"]
mod run;
#[path = "load/signed.rs"]
mod signed;
#[path = "load/summary.rs"]
mod summary;
#[path = "load/tls.rs"]
mod tls;
#[path = "load/tokens.rs"]
mod tokens;
#[path = "load/upstream.rs"]
mod upstream;
#[path = "load/web.rs"]
mod web;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use client::{Session, Target};
use opts::Opts;
use procs::Proc;
use run::{Budget, Call, Point};

const GATEWAY: &str = env!("CARGO_BIN_EXE_mcp-ui-gateway");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Tools the HTTP upstream lists (the `tools/list` rewrite scenario).
const LIST_TOOLS: usize = 1000;
const SWEEP: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Turns the targets of one comparison take, each a share of its time.
const ROUNDS: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tools = args
        .iter()
        .position(|a| a == "--tools")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(LIST_TOOLS);
    match args.get(1).map(String::as_str) {
        Some("__upstream-http") => return upstream::run_http(tools),
        Some("__upstream-stdio") => return upstream::run_stdio(tools),
        Some("__upstream-https") => return upstream::run_https(&args[2..], tools),
        Some("__relay-http") => {
            let upstream = args.get(2).and_then(|a| a.parse().ok());
            return relay::run(upstream.expect("__relay-http UPSTREAM_ADDR"));
        }
        _ => {}
    }
    let opts = match Opts::parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if opts.help {
        print!("{}", opts::USAGE);
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ok = rt.block_on(async move {
        if let Some(given) = &opts.given {
            let conc = opts.conc.clone().unwrap_or_else(given::default_conc);
            let secs = opts.secs.unwrap_or(if opts.quick { 1.0 } else { 3.0 });
            given::run(given, &conc, secs, &out_dir()).await
        } else if opts.full {
            full(&opts).await
        } else {
            smoke().await
        }
    });
    if !ok {
        std::process::exit(1);
    }
}

fn out_dir() -> PathBuf {
    // target/tmp -> target/bench
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|t| t.join("bench"))
        .unwrap_or_else(|| PathBuf::from("target/bench"));
    std::fs::create_dir_all(&dir).expect("create target/bench");
    dir
}

/// The overlay directory the gateway runs with: every other listed tool
/// (`tool_2`, `tool_4`, …) gets a widget, so `tools/list` goes through the
/// rewrite; `echo` and `big` stay plain.
fn write_overlays(dir: &Path, version: usize) {
    let widget = dir.join("widgets/board");
    std::fs::create_dir_all(&widget).expect("overlay dir");
    std::fs::write(
        widget.join("widget.toml"),
        "entry = \"index.html\"\ntitle = \"Board\"\n",
    )
    .unwrap();
    std::fs::write(widget.join("index.html"), "<!doctype html><p>board</p>\n").unwrap();
    let mut toml = String::new();
    for i in (2..LIST_TOOLS).step_by(2) {
        let _ = writeln!(
            toml,
            "[tools.tool_{i}]\nwidget = \"board\"\ninvoking = \"Working {version}…\"\n"
        );
    }
    // Write whole then rename, as an editor does.
    let tmp = dir.join(".bench.toml.tmp");
    std::fs::write(&tmp, toml).unwrap();
    std::fs::rename(&tmp, dir.join("bench.toml")).unwrap();
}

/// What a gateway of the run is put in front of.
enum Upstream<'a> {
    /// The in-tree HTTP upstream, at this path.
    Http(&'a Proc, &'a str),
    /// The in-tree HTTP upstream over TLS, at this path, trusted through
    /// `ca_file` (this authority's PEM file).
    Https(&'a Proc, &'a str, &'a Path),
    /// The in-tree stdio upstream: this binary, re-executed.
    Stdio(&'a Path),
    /// Another stdio server: this command line.
    Command(&'a [String]),
}

/// Start the release gateway called `name` in front of `upstream`, with the
/// run's overlays; the run cannot go on without it.
async fn gateway(name: &str, upstream: Upstream<'_>, overlays: &Path, logs: &Path) -> Proc {
    gateway_tls(name, upstream, overlays, logs, None).await
}

/// [`gateway`], serving HTTPS with the certificate of `listener` when given.
async fn gateway_tls(
    name: &str,
    upstream: Upstream<'_>,
    overlays: &Path,
    logs: &Path,
    listener: Option<&tls::Certs>,
) -> Proc {
    let mut args = vec![
        "serve".to_owned(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--overlays".into(),
        overlays.display().to_string(),
    ];
    if let Some(certs) = listener {
        args.extend([
            "--tls-cert".into(),
            certs.cert.display().to_string(),
            "--tls-key".into(),
            certs.key.display().to_string(),
        ]);
    }
    let named = ["--name".to_owned(), "bench".into()];
    match upstream {
        Upstream::Http(up, path) => {
            args.extend(named);
            args.extend(["--upstream".into(), format!("http://{}{path}", up.addr)]);
        }
        Upstream::Https(up, path, ca) => {
            // Trust is set per upstream: a configuration file of its own.
            let file = logs.join(format!("{name}.toml"));
            let toml = format!(
                "[[upstream]]\nname = \"bench\"\npath = \"/mcp\"\nurl = \"https://{}{path}\"\nca_file = {:?}\n",
                up.addr,
                ca.display().to_string()
            );
            std::fs::write(&file, toml).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            args.extend(["--config".into(), file.display().to_string()]);
        }
        Upstream::Stdio(exe) => args.extend(named.into_iter().chain([
            "--".into(),
            exe.display().to_string(),
            "__upstream-stdio".into(),
        ])),
        Upstream::Command(cmd) => {
            args.extend(named);
            args.push("--".into());
            args.extend(cmd.iter().cloned());
        }
    }
    // `LOAD_GATEWAY_ENV="K=V K2=V2"`: extra environment for the gateway
    // alone (to compare settings within one build).
    let extra = std::env::var("LOAD_GATEWAY_ENV").unwrap_or_default();
    let mut env: Vec<(&str, &str)> = vec![("RUST_LOG", "info")];
    env.extend(extra.split_whitespace().filter_map(|kv| kv.split_once('=')));
    let mut proc = procs::gateway(name, Path::new(GATEWAY), &args, &env, logs)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    proc.tls = listener.map(|c| c.client.clone());
    proc
}

/// The MCP endpoint at `path` of `p`, over TLS when `p` serves HTTPS.
fn http(p: &Proc, path: &str) -> Target {
    Target::Http {
        addr: p.addr,
        host: p.addr.to_string(),
        path: path.into(),
        tls: p.tls.clone(),
        bearer: None,
        sessionless: false,
    }
}

/// What `cargo test --all-targets` runs: direct, the bare relay and the
/// gateway, JSON and SSE responses and a stdio upstream, the TLS cases, a
/// few sessions × a few calls, and overlay reloads; zero errors required,
/// speed never asserted.
async fn smoke() -> bool {
    let exe = std::env::current_exe().expect("current exe");
    let out = out_dir();
    let logs = out.join("smoke-logs");
    std::fs::create_dir_all(&logs).unwrap();
    let overlays = tempdir("smoke-overlays");
    write_overlays(&overlays, 0);
    let up = procs::http_upstream(&exe, LIST_TOOLS, &logs)
        .await
        .expect("HTTP upstream");
    let gw = gateway("gateway", Upstream::Http(&up, "/mcp"), &overlays, &logs).await;
    let gw_sse = gateway("gateway-sse", Upstream::Http(&up, "/sse"), &overlays, &logs).await;
    let gw_stdio = gateway("gateway-stdio", Upstream::Stdio(&exe), &overlays, &logs).await;
    let budget = Budget {
        calls_per_session: 25,
        max_time: Duration::from_secs(60),
        warmup_calls: 1,
    };
    let small = Budget {
        calls_per_session: 3,
        ..budget
    };
    let stdio = Target::Stdio {
        program: exe.clone(),
        args: vec!["__upstream-stdio".into()],
    };
    let bare = procs::bare_relay(&exe, up.addr, &logs)
        .await
        .expect("bare relay");
    let mut points = Vec::new();
    for (label, target, proc) in [
        ("direct", http(&up, "/mcp"), None),
        ("bare relay", http(&bare, "/mcp"), Some(&bare)),
        ("gateway", http(&gw, "/mcp"), Some(&gw)),
        ("direct (SSE)", http(&up, "/sse"), None),
        ("gateway (SSE)", http(&gw_sse, "/mcp"), Some(&gw_sse)),
        ("stdio", stdio.clone(), None),
        ("gateway (stdio)", http(&gw_stdio, "/mcp"), Some(&gw_stdio)),
    ] {
        points.push(run::point("smoke", label, &target, 4, Call::Small, &budget, proc).await);
        points.push(run::point("smoke big", label, &target, 2, Call::Big, &small, proc).await);
        points.push(run::point("smoke list", label, &target, 2, Call::List, &small, proc).await);
    }
    let tls_cases = TlsCases::start(&exe, &up, &overlays, &logs).await;
    let tls_points = run::interleaved(
        TLS_SCENARIO,
        &tls_cases.targets(),
        4,
        Call::Small,
        &budget,
        1,
    )
    .await;
    tls_cases.stop().await;
    let mut ok = tls_ok(&tls_points);
    points.extend(tls_points);
    let gw_app = app::gateway(&up, &overlays, &logs).await;
    points.extend(app::compare(&gw_app, 2, &small, 1).await);
    gw_app.stop().await;
    ok &= given_mode(&exe, &up, &gw, &out).await;
    ok &= tokens::smoke(Path::new(ROOT), Path::new(GATEWAY), &up, &logs, &mut points).await;
    let reload = reload_under_load(&gw, &overlays, 2, Duration::from_millis(1500), 200).await;
    points.push(reload.0);
    print!("{}", report::table(&points));
    ok &= report::errors_ok(&points);
    if let Some(e) = reload.1 {
        eprintln!("ERROR: reload: {e}");
        ok = false;
    }
    for p in [gw, gw_sse, gw_stdio, bare, up] {
        p.stop().await;
    }
    let _ = std::fs::remove_dir_all(&overlays);
    if ok {
        println!("load smoke: {} points, 0 errors", points.len());
    }
    ok
}

/// The `--target` mode against the smoke's own processes, named as a user
/// names theirs (URLs, a stdio command, a watched PID), and the mistakes it
/// must refuse before any load.
async fn given_mode(exe: &Path, up: &Proc, gw: &Proc, out: &Path) -> bool {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let stdio = format!("stdio=stdio:{} __upstream-stdio", exe.display());
    let parsed = Opts::parse(&args(&[
        "--bench",
        "--target",
        &format!("direct=http://{}/mcp", up.addr),
        "--target",
        &format!("gateway=http://localhost:{}/mcp", gw.addr.port()),
        "--target",
        &stdio,
        "--pid",
        &format!("gateway={}", gw.pid),
        "--call",
        "tools/call",
        "--params",
        r#"{"name":"echo","arguments":{"message":"hi"}}"#,
    ]));
    let given = match parsed {
        Ok(Opts { given: Some(g), .. }) => g,
        Ok(_) => {
            eprintln!("ERROR: --target: no targets parsed");
            return false;
        }
        Err(e) => {
            eprintln!("ERROR: --target: {e}");
            return false;
        }
    };
    let mut ok = given::run(&given, &[2], 0.3, out).await;
    let refused = [
        (
            vec!["--target", "far=http://192.0.2.1:9/mcp"],
            "--allow-remote",
        ),
        (
            vec!["--target", "a=http://127.0.0.1:9/mcp", "--params", "{oops"],
            "not JSON",
        ),
        (
            vec!["--target", "a=https://127.0.0.1:9/mcp"],
            "https is not spoken",
        ),
        (
            vec!["--target", "a=http://127.0.0.1:9/", "--pid", "b=1"],
            "no --target is named \"b\"",
        ),
        (vec!["--call", "tools/call"], "go with --target"),
        (vec!["--sweep"], "unknown option"),
    ];
    for (argv, want) in refused {
        match Opts::parse(&args(&argv)) {
            Err(e) if e.contains(want) => {}
            Err(e) => {
                eprintln!("ERROR: {argv:?} was refused with {e:?}, not {want:?}");
                ok = false;
            }
            Ok(_) => {
                eprintln!("ERROR: {argv:?} was accepted");
                ok = false;
            }
        }
    }
    ok
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-ui-gateway-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `sessions` sessions alternate `tools/call` and `tools/list` for `time`
/// while the overlay file is rewritten every `every_ms`; afterwards the
/// list must carry the last version. Returns the point and, if the last
/// version never showed, why.
async fn reload_under_load(
    gw: &Proc,
    overlays: &Path,
    sessions: usize,
    time: Duration,
    every_ms: u64,
) -> (Point, Option<String>) {
    let target = http(gw, "/mcp");
    let stop = Instant::now() + time;
    let dir = overlays.to_owned();
    let writer = tokio::spawn(async move {
        let mut v = 1;
        while Instant::now() < stop {
            write_overlays(&dir, v);
            v += 1;
            tokio::time::sleep(Duration::from_millis(every_ms)).await;
        }
        v - 1
    });
    let budget = Budget {
        calls_per_session: 1_000_000,
        max_time: time,
        warmup_calls: 0,
    };
    let (a, b) = tokio::join!(
        run::point(
            "reload",
            "gateway",
            &target,
            sessions,
            Call::Small,
            &budget,
            Some(gw)
        ),
        run::point(
            "reload",
            "gateway",
            &target,
            sessions,
            Call::List,
            &budget,
            None
        ),
    );
    let last = writer.await.unwrap_or(0);
    let mut p = a;
    p.scenario = "reload (call + list)".into();
    p.calls += b.calls;
    p.errors += b.errors;
    p.first_error = p.first_error.or(b.first_error);
    p.per_sec += b.per_sec;
    p.p50_us = f64::NAN;
    p.p90_us = f64::NAN;
    p.p99_us = b.p99_us.max(p.p99_us);
    p.cpu_per_1k = None;
    // The last version must be served within a few seconds.
    let want = format!("Working {last}…");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut why;
    loop {
        match Session::open(&target).await {
            Ok(mut s) => match s.request_text("tools/list", "{}").await {
                Ok(body) if body.contains(&want) => {
                    why = None;
                    s.close().await;
                    break;
                }
                Ok(_) => why = Some(format!("the list never showed {want:?}")),
                Err(e) => why = Some(e),
            },
            Err(e) => why = Some(e),
        }
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (p, why)
}

async fn full(opts: &Opts) -> bool {
    let started = Instant::now();
    let exe = std::env::current_exe().expect("current exe");
    let out = out_dir();
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let root = Path::new(ROOT);
    let peers = procs::Peers::at(root);
    let mut notes: Vec<String> = Vec::new();
    if opts.peers
        && ["stdio", "sweep", "everything"]
            .iter()
            .any(|s| opts.wants(s))
    {
        println!("installing peers (scripts/install-peers.sh, idempotent) …");
        let st = std::process::Command::new("bash")
            .arg(root.join("scripts/install-peers.sh"))
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            notes
                .push("scripts/install-peers.sh failed; peers that are missing are skipped".into());
        }
    }
    let overlays = tempdir("bench-overlays");
    write_overlays(&overlays, 0);
    let up = procs::http_upstream(&exe, LIST_TOOLS, &logs)
        .await
        .expect("HTTP upstream");
    let gw = gateway("gateway", Upstream::Http(&up, "/mcp"), &overlays, &logs).await;
    let stdio_cmd = format!("{} __upstream-stdio", exe.display());
    // Points are bounded by time first (long enough for stable ratios on a
    // noisy machine), and by a call count.
    let (secs, per) = if opts.quick {
        (1.0, 200_000)
    } else {
        (3.0, 1_000_000)
    };
    let secs = opts.secs.unwrap_or(secs);
    let budget = |c: usize| Budget {
        calls_per_session: (per / c).max(50),
        max_time: Duration::from_secs_f64(secs),
        warmup_calls: 5,
    };
    let mut points: Vec<Point> = Vec::new();
    let mut extra = String::new();
    let sweep = opts.conc.clone().unwrap_or_else(|| SWEEP.to_vec());

    if opts.wants("sweep") {
        let bare = procs::bare_relay(&exe, up.addr, &logs)
            .await
            .expect("bare relay");
        let refs = if opts.peers {
            References::start(root, up.addr, &logs, &mut notes).await
        } else {
            References::default()
        };
        for &c in &sweep {
            let mut targets = vec![
                ("direct", http(&up, "/mcp"), None, Call::Small),
                ("bare relay", http(&bare, "/mcp"), Some(&bare), Call::Small),
            ];
            for (label, p) in &refs.http {
                targets.push((label, http(p, "/mcp"), Some(p), Call::Small));
            }
            targets.push(("gateway", http(&gw, "/mcp"), Some(&gw), Call::Small));
            if let Some(p) = &refs.mcp_proxy {
                targets.push((MCP_PROXY_RS, http(p, "/"), Some(p), MCP_PROXY_RS_CALL));
            }
            for cf in &refs.contextforge {
                targets.push((cf.label, cf.target(), Some(&cf.proc), cf.call));
            }
            let measured =
                run::interleaved_calls("tools/call", &targets, c, &budget(c), ROUNDS).await;
            for p in measured {
                println!("{}", report::line(&p));
                points.push(p);
            }
        }
        refs.stop().await;
        bare.stop().await;
    }
    if opts.wants("revision") {
        for &c in opts.conc.as_deref().unwrap_or(&[1, 32]) {
            for p in revision::compare(&gw, c, &budget(c), ROUNDS).await {
                println!("{}", report::line(&p));
                points.push(p);
            }
        }
        extra.push_str(&revision::summary(&points));
    }
    if opts.wants("sse") {
        let gw_sse = gateway("gateway-sse", Upstream::Http(&up, "/sse"), &overlays, &logs).await;
        for c in [1, 32] {
            let targets = [
                ("direct (SSE)", http(&up, "/sse"), None),
                ("gateway (SSE)", http(&gw_sse, "/mcp"), Some(&gw_sse)),
            ];
            compare(&mut points, "tools/call SSE", &targets, c, &budget(c)).await;
        }
        gw_sse.stop().await;
    }
    if opts.wants("tls") {
        let cases = TlsCases::start(&exe, &up, &overlays, &logs).await;
        for &c in opts.conc.as_deref().unwrap_or(&[1, 32]) {
            compare(&mut points, TLS_SCENARIO, &cases.targets(), c, &budget(c)).await;
        }
        cases.stop().await;
    }
    if opts.wants("stdio") {
        let gw_stdio = gateway("gateway-stdio", Upstream::Stdio(&exe), &overlays, &logs).await;
        let mut bridges: Vec<(&str, Proc)> = vec![("gateway (stdio)", gw_stdio)];
        if opts.peers {
            if peers.node.exists() && peers.supergateway.exists() {
                // supergateway and mcp-proxy take their port on the command
                // line and print none they picked: a fresh one per attempt.
                let started = process::with_fresh_port(3, async |port| {
                    let args = vec![
                        peers.supergateway.display().to_string(),
                        "--stdio".into(),
                        stdio_cmd.clone(),
                        "--outputTransport".into(),
                        "streamableHttp".into(),
                        "--stateful".into(),
                        "--port".into(),
                        port.to_string(),
                        "--logLevel".into(),
                        "none".into(),
                    ];
                    procs::start("supergateway", &peers.node, &args, &[], port, &logs).await
                })
                .await;
                match started {
                    Ok(p) => bridges.push(("supergateway", p)),
                    Err(e) => notes.push(format!("supergateway unavailable: {e}")),
                }
            } else {
                notes.push("supergateway not installed (tests/peers/node_modules); skipped".into());
            }
            if peers.mcp_proxy.exists() {
                let started = process::with_fresh_port(3, async |port| {
                    let args = vec![
                        "--host".into(),
                        "127.0.0.1".into(),
                        "--port".into(),
                        port.to_string(),
                        "--log-level".into(),
                        "WARNING".into(),
                        exe.display().to_string(),
                        "__upstream-stdio".into(),
                    ];
                    procs::start("mcp-proxy", &peers.mcp_proxy, &args, &[], port, &logs).await
                })
                .await;
                match started {
                    Ok(p) => bridges.push(("mcp-proxy", p)),
                    Err(e) => notes.push(format!("mcp-proxy unavailable: {e}")),
                }
            } else {
                notes.push("mcp-proxy not installed (tests/peers/.venv/bench); skipped".into());
            }
        }
        let stdio = Target::Stdio {
            program: exe.clone(),
            args: vec!["__upstream-stdio".into()],
        };
        for &c in &sweep {
            let mut targets = vec![("stdio", stdio.clone(), None)];
            for (label, proc) in &bridges {
                targets.push((*label, http(proc, "/mcp"), Some(proc)));
            }
            compare(&mut points, "stdio tools/call", &targets, c, &budget(c)).await;
        }
        for (_, p) in bridges {
            p.stop().await;
        }
    }
    if opts.wants("everything") && opts.peers {
        let conc = opts.conc.clone().unwrap_or_else(|| vec![1, 8, 32]);
        if let Err(e) =
            everything::compare_transports(&mut points, &peers, &overlays, &logs, &conc, &budget)
                .await
        {
            notes.push(format!("server-everything scenario skipped: {e}"));
        }
    }
    if opts.wants("big") {
        // Enough calls for the gateway's CPU time to be more than a few
        // clock ticks.
        let b = |c: usize| Budget {
            calls_per_session: if opts.quick { 200 } else { 1000 } / c,
            max_time: Duration::from_secs_f64(secs),
            warmup_calls: 1,
        };
        let (rss0, _) = gw.rss_kib();
        for c in [1, 4] {
            for (label, target, proc) in [
                ("direct", http(&up, "/mcp"), None),
                ("gateway", http(&gw, "/mcp"), Some(&gw)),
            ] {
                let p = run::point("1 MiB result", label, &target, c, Call::Big, &b(c), proc).await;
                println!("{}", report::line(&p));
                if label == "gateway" {
                    let peak = p.peak_rss_kib.unwrap_or(0);
                    let _ = writeln!(
                        extra,
                        "- 1 MiB result at concurrency {c}: gateway peak RSS {:.1} MiB, {:.1} MiB over its idle RSS before the scenario ({:.1} MiB), i.e. {:.2} MiB per in-flight result",
                        peak as f64 / 1024.0,
                        (peak.saturating_sub(rss0)) as f64 / 1024.0,
                        rss0 as f64 / 1024.0,
                        (peak.saturating_sub(rss0)) as f64 / 1024.0 / c as f64,
                    );
                }
                points.push(p);
            }
        }
    }
    if opts.wants("list") {
        let b = Budget {
            calls_per_session: if opts.quick { 50 } else { 300 },
            max_time: Duration::from_secs(15),
            warmup_calls: 3,
        };
        for (label, target, proc) in [
            ("direct", http(&up, "/mcp"), None),
            ("gateway", http(&gw, "/mcp"), Some(&gw)),
        ] {
            let p = run::point(
                "tools/list 1,000 tools",
                label,
                &target,
                1,
                Call::List,
                &b,
                proc,
            )
            .await;
            println!("{}", report::line(&p));
            points.push(p);
        }
    }
    if opts.wants("app") {
        let gw_app = app::gateway(&up, &overlays, &logs).await;
        for &c in opts.conc.as_deref().unwrap_or(&[1, 32]) {
            for p in app::compare(&gw_app, c, &budget(c), ROUNDS).await {
                println!("{}", report::line(&p));
                points.push(p);
            }
        }
        extra.push_str(&app::summary(&points));
        gw_app.stop().await;
    }
    if opts.wants("hosts") {
        let (calls, secs) = if opts.quick {
            (1_000, 5.0)
        } else {
            (10_000, 20.0)
        };
        let concs = opts.conc.clone().unwrap_or_else(|| vec![1, 8]);
        match hosts::run(root, Path::new(GATEWAY), &logs, &concs, calls, secs).await {
            Ok(host_points) => {
                extra.push_str(&format!(
                    "\n## The hosts' patterns against a stdio server (Python SDK)\n\nEach point: a fresh gateway, at most {calls} host calls or {secs} s. A Claude call is its three requests (initialize, initialized, the call).\n\n"
                ));
                extra.push_str(&hosts::table(&host_points));
            }
            Err(e) => notes.push(format!("hosts scenario skipped: {e}")),
        }
    }
    let mut failed = false;
    let conc = opts.conc.clone().unwrap_or_else(|| vec![1, 32]);
    if opts.wants("authorization-server") {
        let sizes = tokens::Sizes {
            secs,
            codes: if opts.quick { 500 } else { 5000 },
            conc,
        };
        let gw_exe = Path::new(GATEWAY);
        let run = tokens::run(root, gw_exe, &up, &logs, &sizes, &mut points, &mut extra);
        if let Err(e) = run.await {
            eprintln!("ERROR: authorization-server: {e}");
            notes.push(format!("authorization-server scenario failed: {e}"));
            failed = true;
        }
    }
    if opts.wants("auth") {
        let concs = opts.conc.clone().unwrap_or_else(|| vec![1, 32]);
        let gw_exe = Path::new(GATEWAY);
        let sinks = (&mut points, &mut extra);
        let plan = signed::Plan {
            concs: &concs,
            budget: &budget,
            rounds: ROUNDS,
        };
        let run = signed::run(root, gw_exe, &up, &logs, &plan, sinks);
        if let Err(e) = run.await {
            eprintln!("ERROR: auth: {e}");
            notes.push(format!("auth scenario failed: {e}"));
            failed = true;
        }
    }
    if opts.wants("memory") {
        let n = if opts.quick { 1000 } else { 10_000 };
        let run = memory::callers(root, Path::new(GATEWAY), &up, &logs, n, &mut extra);
        if let Err(e) = run.await {
            eprintln!("ERROR: memory: {e}");
            notes.push(format!("memory scenario failed: {e}"));
            failed = true;
        }
    }
    if opts.wants("families") {
        let n = if opts.quick { 500 } else { 10_000 };
        let run = memory::families(root, Path::new(GATEWAY), &up, &logs, n, &mut extra);
        if let Err(e) = run.await {
            eprintln!("ERROR: families: {e}");
            notes.push(format!("families scenario failed: {e}"));
            failed = true;
        }
    }
    if opts.wants("idle") {
        let n = idle_count(if opts.quick { 200 } else { 10_000 }, &mut notes);
        // Room for every session's own connection, whatever the default
        // (half the gateway's open-file limit) would be.
        let cap = (n + 256).to_string();
        let env = [
            ("RUST_LOG", "info"),
            ("MCP_UI_GATEWAY_LIMITS__MAX_CONNECTIONS", &cap),
        ];
        let args = [
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--overlays",
            &overlays.display().to_string(),
            "--name",
            "bench",
            "--upstream",
            &format!("http://{}/mcp", up.addr),
        ]
        .map(str::to_owned);
        let fresh = procs::gateway("gateway-idle", Path::new(GATEWAY), &args, &env, &logs)
            .await
            .unwrap_or_else(|e| panic!("gateway-idle: {e}"));
        extra.push_str(&idle_sessions(&fresh, n).await);
        fresh.stop().await;
    }
    if opts.wants("reload") {
        let (p, why) = reload_under_load(
            &gw,
            &overlays,
            8,
            Duration::from_secs(if opts.quick { 2 } else { 5 }),
            100,
        )
        .await;
        println!("{}", report::line(&p));
        let _ = writeln!(
            extra,
            "- overlay reloads during load (8 sessions × 2 kinds of call, the overlay file rewritten every 100 ms): {} calls, {} errors; the last version was {}",
            p.calls,
            p.errors,
            if why.is_none() {
                "served afterwards"
            } else {
                "NOT served"
            }
        );
        if let Some(w) = why {
            notes.push(format!("reload: {w}"));
        }
        points.push(p);
    }
    let _ = writeln!(
        extra,
        "- gateway (HTTP upstream) CPU over the whole run: {:.2} s; VmHWM {} MiB",
        gw.cpu_secs(),
        gw.rss_kib().1 / 1024
    );
    gw.stop().await;
    up.stop().await;
    let _ = std::fs::remove_dir_all(&overlays);

    let ok = report::errors_ok(&points) && !failed;
    let md = markdown(&points, &extra, &notes, started.elapsed());
    println!("\n{md}");
    std::fs::write(out.join("load.md"), &md).expect("write load.md");
    let svg = report::svg(
        &points,
        &[
            ("tools/call", "direct"),
            ("tools/call", "bare relay"),
            ("tools/call", "nginx"),
            ("tools/call", "haproxy"),
            ("tools/call", "gateway"),
            ("tools/call", MCP_PROXY_RS),
            ("tools/call", CONTEXTFORGE),
            ("tools/call", CONTEXTFORGE_STATEFUL),
            ("stdio tools/call", "stdio"),
            ("stdio tools/call", "gateway (stdio)"),
            ("stdio tools/call", "supergateway"),
            ("stdio tools/call", "mcp-proxy"),
        ],
        "tools/call latency against concurrency (one run, 2 shared cores)",
    );
    if svg.is_empty() {
        println!("wrote {}", out.join("load.md").display());
    } else {
        std::fs::write(out.join("latency.svg"), svg).expect("write latency.svg");
        println!(
            "wrote {} and {}",
            out.join("load.md").display(),
            out.join("latency.svg").display()
        );
    }
    ok
}

/// The Rust `mcp-proxy`'s label, and its call: the small `echo` under the
/// name it gives the tool.
const MCP_PROXY_RS: &str = "mcp-proxy-rs";
const MCP_PROXY_RS_CALL: Call = Call::Given {
    method: "tools/call",
    params: r#"{"name":"bench/echo","arguments":{"message":"hello"}}"#,
};

/// ContextForge's labels: its default sessions (a new upstream session per
/// call) and stateful ones (benches/load/contextforge.rs).
const CONTEXTFORGE: &str = contextforge::Sessions::Stateless.label();
const CONTEXTFORGE_STATEFUL: &str = contextforge::Sessions::Stateful.label();

/// The reference proxies of the sweep that started: nginx and HAProxy, the
/// Rust `mcp-proxy` and ContextForge; a note for each that did not.
#[derive(Default)]
struct References {
    http: Vec<(&'static str, Proc)>,
    mcp_proxy: Option<Proc>,
    contextforge: Vec<contextforge::ContextForge>,
    dir: Option<PathBuf>,
}

impl References {
    async fn start(root: &Path, up: SocketAddr, logs: &Path, notes: &mut Vec<String>) -> Self {
        let dir = tempdir("bench-refs");
        let mut refs = References::default();
        match refs::nginx(up, &dir, logs).await {
            Ok(p) => refs.http.push(("nginx", p)),
            Err(e) => notes.push(format!("nginx unavailable: {e}")),
        }
        match refs::haproxy(up, &dir, logs).await {
            Ok(p) => refs.http.push(("haproxy", p)),
            Err(e) => notes.push(format!("haproxy unavailable: {e}")),
        }
        println!("installing the Rust mcp-proxy (scripts/install-bench-peers.sh, idempotent) …");
        let installed = refs::install(root, "mcp-proxy");
        let bin = refs::mcp_proxy_bin(root);
        if installed != Some(0) || !bin.exists() {
            notes.push(
                "the Rust mcp-proxy did not install (scripts/install-bench-peers.sh); skipped"
                    .into(),
            );
        } else {
            match refs::mcp_proxy(&bin, up, &dir, logs).await {
                Ok(p) => refs.mcp_proxy = Some(p),
                Err(e) => notes.push(format!("the Rust mcp-proxy unavailable: {e}")),
            }
        }
        refs.contextforge = contextforge::start_both(root, up, &dir, logs, notes).await;
        refs.dir = Some(dir);
        refs
    }

    async fn stop(self) {
        for (_, p) in self.http {
            p.stop().await;
        }
        if let Some(p) = self.mcp_proxy {
            p.stop().await;
        }
        for cf in self.contextforge {
            cf.proc.stop().await;
        }
        if let Some(d) = self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The `tls` scenario's name in the report.
const TLS_SCENARIO: &str = "tools/call TLS";
/// Its reference: the same gateway, plain on both sides.
const TLS_PLAIN: &str = "plain";

/// The gateways of the `tls` scenario, each fresh and each reading its TLS
/// handshake counters around every point: plain on both sides; an HTTPS
/// upstream (the in-tree one over TLS, trusted by `ca_file`) offering HTTP/2
/// and HTTP/1.1, and one offering HTTP/1.1 alone; HTTPS at the listener;
/// HTTPS on both sides.
struct TlsCases {
    upstreams: Vec<Proc>,
    gateways: Vec<(&'static str, Proc)>,
    dir: PathBuf,
}

impl TlsCases {
    async fn start(exe: &Path, up: &Proc, overlays: &Path, logs: &Path) -> TlsCases {
        let dir = tempdir("bench-tls");
        let certs = tls::make(&dir).unwrap_or_else(|e| panic!("TLS certificates: {e}"));
        let pair = (certs.cert.as_path(), certs.key.as_path());
        let mut upstreams = Vec::new();
        for alpn in ["h2,http/1.1", "http/1.1"] {
            let p = procs::https_upstream(exe, LIST_TOOLS, pair, alpn, logs)
                .await
                .unwrap_or_else(|e| panic!("HTTPS upstream ({alpn}): {e}"));
            upstreams.push(p);
        }
        let (h2, h1) = (&upstreams[0], &upstreams[1]);
        let ca = certs.ca.as_path();
        let cases: [(&str, Upstream<'_>, Option<&tls::Certs>); 5] = [
            (TLS_PLAIN, Upstream::Http(up, "/mcp"), None),
            ("https upstream (h2)", Upstream::Https(h2, "/mcp", ca), None),
            (
                "https upstream (http/1.1)",
                Upstream::Https(h1, "/mcp", ca),
                None,
            ),
            ("TLS listener", Upstream::Http(up, "/mcp"), Some(&certs)),
            (
                "TLS both (h2 upstream)",
                Upstream::Https(h2, "/mcp", ca),
                Some(&certs),
            ),
        ];
        let mut gateways = Vec::new();
        for (i, (label, upstream, listener)) in cases.into_iter().enumerate() {
            let name = format!("gateway-tls-{i}");
            let gw = gateway_tls(&name, upstream, overlays, logs, listener).await;
            gateways.push((label, gw.scraping()));
        }
        TlsCases {
            upstreams,
            gateways,
            dir,
        }
    }

    fn targets(&self) -> Vec<(&str, Target, Option<&Proc>)> {
        self.gateways
            .iter()
            .map(|(label, gw)| (*label, http(gw, "/mcp"), Some(gw)))
            .collect()
    }

    async fn stop(self) {
        for (_, p) in self.gateways {
            p.stop().await;
        }
        for p in self.upstreams {
            p.stop().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What the smoke requires of the `tls` points: every count read; no
/// handshake at the listener during the calls (the client keeps its
/// connections) and one per session before them where the listener is
/// HTTPS; upstream handshakes during the calls at most two per session (the
/// pool keeps its connections), and at least one in all where the upstream
/// is HTTPS.
fn tls_ok(points: &[Point]) -> bool {
    let mut ok = true;
    for p in points.iter().filter(|p| p.scenario == TLS_SCENARIO) {
        let mut fail = |why: String| {
            eprintln!("ERROR: {} / {}: {why}", p.scenario, p.target);
            ok = false;
        };
        let (Some(calls), Some(opening)) = (p.handshakes, p.opening) else {
            fail("no TLS handshake counts read from /metrics".into());
            continue;
        };
        let listener = p.target.contains("listener") || p.target.contains("both");
        let upstream = p.target.contains("upstream");
        if calls.listener != 0 {
            fail(format!(
                "{} listener handshakes during the calls",
                calls.listener
            ));
        }
        if listener != (opening.listener > 0) {
            fail(format!(
                "{} listener handshakes while opening sessions",
                opening.listener
            ));
        }
        if calls.upstream > 2 * p.concurrency as u64 {
            fail(format!(
                "{} upstream handshakes during {} calls of {} sessions: connections are not reused",
                calls.upstream, p.calls, p.concurrency
            ));
        }
        if upstream != (calls.upstream + opening.upstream > 0) {
            fail(format!(
                "{} upstream handshakes in all",
                calls.upstream + opening.upstream
            ));
        }
    }
    ok
}

/// `tools/call` against `targets` in turns ([`run::interleaved`]), each
/// point printed as it comes and kept.
async fn compare(
    points: &mut Vec<Point>,
    scenario: &str,
    targets: &[(&str, Target, Option<&Proc>)],
    concurrency: usize,
    budget: &Budget,
) {
    let measured =
        run::interleaved(scenario, targets, concurrency, Call::Small, budget, ROUNDS).await;
    for p in measured {
        println!("{}", report::line(&p));
        points.push(p);
    }
}

/// Idle sessions on a fresh gateway: `n` sessions (each initialized, one
/// call) sharing a few connections, as a host's backend pools them, then `n`
/// sessions each holding a connection of its own; the gateway's RSS before,
/// with all of them idle, and after they went away.
/// `wanted` idle sessions, or as many as this process's open-file limit
/// (raised to the hard limit) leaves room for, each holding a connection;
/// a note when fewer.
fn idle_count(wanted: usize, notes: &mut Vec<String>) -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let Rlimit { maximum, .. } = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: maximum,
            maximum,
        },
    );
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    let room = usize::try_from(soft.saturating_sub(512)).unwrap_or(usize::MAX);
    if room < wanted {
        notes.push(format!(
            "idle: {room} sessions with a connection of their own instead of {wanted} (the open-file limit is {soft}; raise `ulimit -n`)"
        ));
    }
    wanted.min(room)
}

async fn idle_sessions(gw: &Proc, n: usize) -> String {
    let target = http(gw, "/mcp");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut out = String::new();
    const SHARED: usize = 8;
    let (before, _) = gw.rss_kib();
    let mut errors = 0;
    let mut conns = Vec::new();
    for _ in 0..SHARED {
        match Session::open(&target).await {
            Ok(s) => conns.push(s),
            Err(_) => errors += 1,
        }
    }
    let per_conn = n.div_ceil(conns.len().max(1));
    let opened = futures_util::future::join_all(conns.iter_mut().map(|s| async move {
        let mut errors = 0;
        for i in 0..per_conn {
            // The first session is the connection's own.
            let started = if i == 0 { Ok(()) } else { s.restart().await };
            let called = match started {
                Ok(()) => s
                    .request("tools/call", Call::Small.message().1)
                    .await
                    .map(drop),
                Err(e) => Err(e),
            };
            errors += usize::from(called.is_err());
        }
        errors
    }))
    .await;
    errors += opened.iter().sum::<usize>();
    let held = per_conn * conns.len();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (open, _) = gw.rss_kib();
    drop(conns);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let per = |a: u64, b: u64, n: usize| a.saturating_sub(b) as f64 / n.max(1) as f64;
    let line = format!(
        "- {held} idle sessions (HTTP upstream) over {SHARED} shared connections, each session initialized with one call: gateway RSS {before} KiB before, {open} KiB with all of them idle ({:.2} KiB per session); {errors} errors",
        per(open, before, held)
    );
    println!("{line}");
    let _ = writeln!(out, "{line}");

    let (before, _) = gw.rss_kib();
    let mut sessions = Vec::with_capacity(n);
    let mut errors = 0;
    for chunk in 0..n.div_ceil(50) {
        let k = 50.min(n - chunk * 50);
        for s in futures_util::future::join_all((0..k).map(|_| Session::open(&target))).await {
            match s {
                Ok(mut s) => {
                    if s.request("tools/call", Call::Small.message().1)
                        .await
                        .is_err()
                    {
                        errors += 1;
                    }
                    sessions.push(s);
                }
                Err(_) => errors += 1,
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (open, _) = gw.rss_kib();
    let held = sessions.len();
    drop(sessions);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (after, _) = gw.rss_kib();
    let line = format!(
        "- {held} idle sessions (HTTP upstream), each initialized, one call, then idle on a connection of its own: gateway RSS {before} KiB before, {open} KiB with all open ({:.1} KiB per session and connection), {after} KiB after the clients disconnected ({:.1} KiB per session retained by the allocator); {errors} errors",
        per(open, before, held),
        per(after, before, held)
    );
    println!("{line}");
    let _ = writeln!(out, "{line}");
    out
}

fn markdown(points: &[Point], extra: &str, notes: &[String], took: Duration) -> String {
    let commit = std::process::Command::new("git")
        .args(["-C", ROOT, "rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let dirty = std::process::Command::new("git")
        .args(["-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let date = report::date_utc();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_default();
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Run of {} at commit {}{}; {nproc} CPUs ({cpu}), shared by the client, the proxy and the upstream; the run took {:.0} s.\n",
        date.trim(),
        commit.trim(),
        if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        },
        took.as_secs_f64()
    );
    // The sweep's MCP gateways besides this one, in the order measured.
    let mut gateways: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.scenario == "tools/call") {
        let t = p.target.as_str();
        if !["direct", "bare relay", "nginx", "haproxy", "gateway"].contains(&t)
            && !gateways.contains(&t)
        {
            gateways.push(t);
        }
    }
    s.push_str("## Summary\n\n");
    s.push_str(&summary::table(points, &gateways));
    s.push_str("\n## Every point\n\n");
    s.push_str(&report::table(points));
    let refs: Vec<&str> = ["direct", "bare relay", "nginx", "haproxy"]
        .into_iter()
        .chain(gateways.iter().copied())
        .collect();
    s.push_str(&report::ratios(points, "tools/call", "gateway", &refs));
    for hop in ["bare relay", "nginx", "haproxy"] {
        s.push_str(&report::ratios(points, "tools/call", hop, &["direct"]));
    }
    s.push_str(&report::ratios(
        points,
        "tools/call SSE",
        "gateway (SSE)",
        &["direct (SSE)"],
    ));
    s.push_str(&report::ratios(
        points,
        "stdio tools/call",
        "gateway (stdio)",
        &["stdio", "supergateway", "mcp-proxy"],
    ));
    s.push_str(&report::ratios(
        points,
        everything::SCENARIO,
        "gateway (everything stdio)",
        &["everything (streamable HTTP)"],
    ));
    s.push_str(&report::ratios(
        points,
        "1 MiB result",
        "gateway",
        &["direct"],
    ));
    s.push_str(&report::ratios(
        points,
        "tools/list 1,000 tools",
        "gateway",
        &["direct"],
    ));
    s.push_str(&report::tls(points, TLS_SCENARIO, TLS_PLAIN));
    if !extra.is_empty() {
        s.push('\n');
        s.push_str(extra);
    }
    for n in notes {
        let _ = writeln!(s, "- note: {n}");
    }
    s
}
