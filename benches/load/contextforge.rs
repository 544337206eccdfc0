//! IBM ContextForge (PyPI `mcp-contextforge-gateway` 1.1.0, Python), the
//! MCP gateway with a registry, virtual servers and a database, as a peer of
//! the sweep: started as its container deploys it, in front of the bench's
//! HTTP upstream, and called through a virtual server. Installed, pinned by
//! hash, into tests/peers/.venv-contextforge by
//! scripts/install-bench-peers.sh.
//!
//! The settings (each an environment variable of ContextForge's, or the
//! gunicorn file `refs/contextforge.gunicorn.py`):
//! - gunicorn with uvicorn workers, one per core (2 here), the app preloaded,
//!   on 127.0.0.1 and a fresh port (`HOST`, `PORT`);
//! - `ENVIRONMENT=production`, which makes it refuse weak secrets: they come
//!   from its own generator (`python -m mcpgateway.scripts.init_secrets`);
//! - its default database, SQLite, in a file of the run's folder
//!   (`DATABASE_URL=sqlite:///…/mcp.db`), and its default cache (`database`);
//! - authentication on, as shipped (`AUTH_REQUIRED` true): every request
//!   carries a JWT minted by its own tool (`python -m
//!   mcpgateway.utils.create_jwt_token`) for the platform admin, signed with
//!   the generated `JWT_SECRET_KEY`;
//! - `LOG_LEVEL=ERROR` (its default) and gunicorn at `warning`;
//! - the admin UI and admin API off (`MCPGATEWAY_UI_ENABLED=false`,
//!   `MCPGATEWAY_ADMIN_API_ENABLED=false`, their defaults);
//! - `SSRF_ALLOW_LOCALHOST=true`: its SSRF guard refuses a loopback upstream
//!   by default, and the bench's upstream is one;
//! - `RATE_LIMITING_ENABLED=false`: its default limit of 100 MCP requests a
//!   minute per user would turn every point into a count of 429s;
//! - `USE_STATEFUL_SESSIONS` false (its default: every call opens a new
//!   session with the upstream) or true (a client session keeps one upstream
//!   session): the two targets `contextforge` and `contextforge (stateful)`.
//!
//! The upstream is registered as a gateway (`POST /gateways`, streamable
//! HTTP), which imports its tools under the gateway's slug (`echo` becomes
//! `bench-echo`); a virtual server (`POST /servers`) holds them all, and the
//! bench calls `/servers/{id}/mcp`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::client::{Session, Target};
use crate::process;
use crate::procs::{self, Proc};
use crate::refs;
use crate::run::Call;

/// `refs/contextforge.gunicorn.py`.
const GUNICORN: &str = include_str!("refs/contextforge.gunicorn.py");
/// The platform admin ContextForge creates at its first start, whom the
/// token names.
const ADMIN: &str = "admin@example.com";
/// How long one start-up step (health, registration, a REST call) may take.
const STEP: Duration = Duration::from_secs(180);

/// A running ContextForge with the bench's upstream behind a virtual server.
pub struct ContextForge {
    /// Its label in the report ([`Sessions::label`]).
    pub label: &'static str,
    /// gunicorn's master and its workers ([`Proc::whole_tree`]).
    pub proc: Proc,
    /// The virtual server's MCP endpoint, `/servers/{id}/mcp`.
    pub path: String,
    /// Sent as `Authorization: Bearer …`.
    pub bearer: String,
    /// `tools/call` of the upstream's `echo` under ContextForge's name for it.
    pub call: Call,
}

impl ContextForge {
    /// Where the load client sends its sessions.
    pub fn target(&self) -> Target {
        Target::Http {
            addr: self.proc.addr,
            host: self.proc.addr.to_string(),
            path: self.path.clone(),
            tls: None,
            bearer: Some(self.bearer.clone()),
            sessionless: false,
        }
    }
}

/// Whether a client session keeps one upstream session (`USE_STATEFUL_SESSIONS`).
#[derive(Clone, Copy)]
pub enum Sessions {
    /// ContextForge's default: a new upstream session per call.
    Stateless,
    Stateful,
}

impl Sessions {
    /// The target's label in the report.
    pub const fn label(self) -> &'static str {
        match self {
            Sessions::Stateless => "contextforge",
            Sessions::Stateful => "contextforge (stateful)",
        }
    }

    /// Its folder's name and its log's.
    fn name(self) -> &'static str {
        match self {
            Sessions::Stateless => "contextforge",
            Sessions::Stateful => "contextforge-stateful",
        }
    }
}

/// The venv scripts/install-bench-peers.sh installs ContextForge into.
pub fn venv(root: &Path) -> PathBuf {
    root.join("tests/peers/.venv-contextforge")
}

/// Whether the venv holds a finished install (the script writes its stamp last).
pub fn installed(root: &Path) -> bool {
    let venv = venv(root);
    venv.join(".version").is_file() && venv.join("bin/gunicorn").is_file()
}

/// Install ContextForge (scripts/install-bench-peers.sh, idempotent) and
/// start it twice in front of `upstream`, with its default sessions and with
/// stateful ones; a note for what did not install or start.
pub async fn start_both(
    root: &Path,
    upstream: SocketAddr,
    dir: &Path,
    logs: &Path,
    notes: &mut Vec<String>,
) -> Vec<ContextForge> {
    println!("installing ContextForge (scripts/install-bench-peers.sh, idempotent) …");
    let began = Instant::now();
    match refs::install(root, "contextforge") {
        Some(0) if installed(root) => {}
        Some(3) => {
            notes.push("ContextForge skipped: needs Python ≥ 3.12 (scripts/install-bench-peers.sh found none)".into());
            return Vec::new();
        }
        _ => {
            notes.push("ContextForge did not install (scripts/install-bench-peers.sh --only contextforge); skipped".into());
            return Vec::new();
        }
    }
    let installing = began.elapsed().as_secs_f64();
    let mut running = Vec::new();
    for sessions in [Sessions::Stateless, Sessions::Stateful] {
        let began = Instant::now();
        match start(root, upstream, dir, logs, sessions).await {
            Ok(cf) => {
                println!(
                    "{}: ready in {:.0} s (install {installing:.0} s)",
                    cf.label,
                    began.elapsed().as_secs_f64()
                );
                running.push(cf);
            }
            Err(e) => notes.push(format!("{} unavailable: {e}", sessions.label())),
        }
    }
    running
}

/// Start ContextForge in `dir` in front of `upstream`, register the upstream,
/// make a virtual server of its tools, and check that a `tools/call` of `echo`
/// through it returns the upstream's result. Its output goes to
/// `logs/contextforge.log` (`contextforge-stateful.log`).
pub async fn start(
    root: &Path,
    upstream: SocketAddr,
    dir: &Path,
    logs: &Path,
    sessions: Sessions,
) -> Result<ContextForge, String> {
    let name = sessions.name();
    let log = logs.join(format!("{name}.log"));
    let see = |e: String| format!("{name}: {e}; see {}", log.display());
    let venv = venv(root);
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut env = secrets(&venv).await.map_err(see)?;
    let stateful = matches!(sessions, Sessions::Stateful).to_string();
    let db = format!("sqlite:///{}", dir.join("mcp.db").display());
    for (k, v) in [
        ("ENVIRONMENT", "production"),
        ("HOST", "127.0.0.1"),
        ("DATABASE_URL", db.as_str()),
        ("PLATFORM_ADMIN_EMAIL", ADMIN),
        ("LOG_LEVEL", "ERROR"),
        ("MCPGATEWAY_UI_ENABLED", "false"),
        ("MCPGATEWAY_ADMIN_API_ENABLED", "false"),
        ("SSRF_ALLOW_LOCALHOST", "true"),
        ("RATE_LIMITING_ENABLED", "false"),
        ("USE_STATEFUL_SESSIONS", stateful.as_str()),
        ("PYTHONUNBUFFERED", "1"),
    ] {
        env.push((k.into(), v.into()));
    }
    let gunicorn = venv.join("bin/gunicorn");
    let proc = process::with_fresh_port(3, async |port| {
        let conf = refs::write_filled(
            &dir,
            "gunicorn.conf.py",
            GUNICORN,
            &[("PORT", port.to_string()), ("WORKERS", refs::workers())],
        )?;
        let mut env = env.clone();
        env.push(("PORT".into(), port.to_string()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (&**k, &**v)).collect();
        let args = [
            "-c".to_owned(),
            conf.display().to_string(),
            "--chdir".into(),
            dir.display().to_string(),
            "mcpgateway.main:app".into(),
        ];
        procs::start(name, &gunicorn, &args, &env, port, logs).await
    })
    .await
    .map_err(see)?
    .whole_tree();
    match set_up(&venv, &env, &proc, upstream).await {
        Ok((path, bearer, call)) => Ok(ContextForge {
            label: sessions.label(),
            proc,
            path,
            bearer,
            call,
        }),
        Err(e) => {
            proc.stop().await;
            Err(see(e))
        }
    }
}

/// Wait until it is healthy, mint the token, register the upstream, make the
/// virtual server and call `echo` through it: its path, the token and the call.
async fn set_up(
    venv: &Path,
    env: &[(String, String)],
    proc: &Proc,
    upstream: SocketAddr,
) -> Result<(String, String, Call), String> {
    let addr = proc.addr;
    healthy(addr).await?;
    let jwt = env
        .iter()
        .find(|(k, _)| k == "JWT_SECRET_KEY")
        .map(|(_, v)| v.as_str())
        .ok_or("init_secrets printed no JWT_SECRET_KEY")?;
    let bearer = mint(venv, env, jwt).await?;
    let auth = Some(bearer.as_str());
    let gateway = json!({
        "name": "bench",
        "url": format!("http://{upstream}/mcp"),
        "transport": "STREAMABLEHTTP",
    });
    let gateway = rest(addr, "POST", "/gateways", auth, Some(gateway)).await?;
    let gateway_id = string(&gateway, "id", "POST /gateways")?;
    let tools = rest(
        addr,
        "GET",
        &format!("/tools?gateway_id={gateway_id}&limit=0"),
        auth,
        None,
    )
    .await?;
    let tools = tools.as_array().ok_or("GET /tools: not a list")?;
    let ids: Vec<&str> = tools.iter().filter_map(|t| t["id"].as_str()).collect();
    // Its name for `echo`: the gateway's slug and the tool's, e.g. `bench-echo`.
    let echo = tools
        .iter()
        .find(|t| t["originalName"] == "echo")
        .ok_or_else(|| format!("GET /tools: no tool named echo among {}", tools.len()))?;
    let echo = string(echo, "name", "GET /tools (echo)")?;
    let server = json!({
        "server": { "name": "bench", "associated_tools": ids },
        "visibility": "public",
    });
    let server = rest(addr, "POST", "/servers", auth, Some(server)).await?;
    let path = format!("/servers/{}/mcp", string(&server, "id", "POST /servers")?);
    let params = json!({ "name": echo, "arguments": { "message": "hello" } }).to_string();
    check_call(addr, &path, &bearer, &params).await?;
    // The load's calls borrow their params for the whole run.
    let call = Call::Given {
        method: "tools/call",
        params: Box::leak(params.into_boxed_str()),
    };
    Ok((path, bearer, call))
}

/// The secrets ContextForge's own generator makes, as `KEY=VALUE`.
async fn secrets(venv: &Path) -> Result<Vec<(String, String)>, String> {
    let out = python(
        venv,
        &[],
        &["-m", "mcpgateway.scripts.init_secrets", "--stdout"],
    )
    .await?;
    let pairs: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    if pairs.is_empty() {
        return Err(format!("init_secrets printed no KEY=VALUE: {out:?}"));
    }
    Ok(pairs)
}

/// A token for the platform admin, minted by ContextForge's own tool.
async fn mint(venv: &Path, env: &[(String, String)], secret: &str) -> Result<String, String> {
    let args = [
        "-m",
        "mcpgateway.utils.create_jwt_token",
        "--username",
        ADMIN,
        "--exp",
        "1440",
        "--secret",
        secret,
    ];
    let token = python(venv, env, &args).await?;
    let token = token.trim();
    if token.split('.').count() != 3 {
        return Err(format!("create_jwt_token printed no JWT: {token:?}"));
    }
    Ok(token.to_owned())
}

/// Run the venv's Python with `args`; its standard output.
async fn python(venv: &Path, env: &[(String, String)], args: &[&str]) -> Result<String, String> {
    let run = tokio::process::Command::new(venv.join("bin/python"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .map_err(|_| format!("python {}: no exit in 120 s", args.join(" ")))?
        .map_err(|e| format!("python {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "python {}: {}: {}",
            args[..2].join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("python {}: {e}", args.join(" ")))
}

/// Wait for `GET /health` to answer 200: gunicorn listens before its workers
/// have set up the database.
async fn healthy(addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + STEP;
    loop {
        let Err(last) = rest(addr, "GET", "/health", None, None).await else {
            return Ok(());
        };
        if Instant::now() > deadline {
            return Err(format!("not healthy within {STEP:?}: {last}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// One request to its REST API; the JSON body of a 2xx answer.
async fn rest(
    addr: SocketAddr,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> Result<Value, String> {
    let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
    let exchange = async {
        let mut sender = crate::tls::connect::<Full<Bytes>>(addr, None).await?;
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string())
            .header("accept", "application/json");
        if let Some(t) = bearer {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((status, bytes.to_bytes()))
    };
    let (status, bytes) = tokio::time::timeout(STEP, exchange)
        .await
        .map_err(|_| format!("{what}: no answer in {STEP:?}"))?
        .map_err(|e| format!("{what}: {e}"))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        return Err(format!("{what}: HTTP {status}: {text}"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{what}: not JSON: {e}"))
}

/// The string field `key` of `v`.
fn string(v: &Value, key: &str, what: &str) -> Result<String, String> {
    v[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{what}: no {key:?} in the answer"))
}

/// One MCP session through the virtual server: `tools/call` must return the
/// upstream's `echo` result (the text `hello`).
async fn check_call(
    addr: SocketAddr,
    path: &str,
    bearer: &str,
    params: &str,
) -> Result<(), String> {
    let target = Target::Http {
        addr,
        host: addr.to_string(),
        path: path.to_owned(),
        tls: None,
        bearer: Some(bearer.to_owned()),
        sessionless: false,
    };
    let mut session = Session::open(&target)
        .await
        .map_err(|e| format!("initialize at {path}: {e}"))?;
    let body = session.request_text("tools/call", params).await;
    session.close().await;
    let body = body.map_err(|e| format!("tools/call at {path}: {e}"))?;
    // A JSON body, or the last event of an SSE one.
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .unwrap_or(&body);
    let text = serde_json::from_str::<Value>(json.trim())
        .ok()
        .and_then(|v| {
            v["result"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
        });
    if text.as_deref() != Some("hello") {
        return Err(format!(
            "tools/call at {path} did not return the upstream's result: {}",
            &body[..body.len().min(300)]
        ));
    }
    Ok(())
}
