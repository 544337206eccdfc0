//! Memory per user and per sign-in:
//!
//! - `memory`: the gateway's RSS for `n` distinct signed-in callers, each a
//!   different user's JWT access token (signed by oidc-provider's own key,
//!   `/admin/mint`), each opening a session and making a call over one of 8
//!   shared connections (so what the gateway keeps per caller, the verified
//!   token and the rate budget, is filled), then `n` more; against the same
//!   sessions without `[auth]`, and with `[auth]` and one caller for all.
//! - `families`: the authorization server's memory per sign-in holding
//!   refresh tokens (a family): the gateway's RSS before and after `n`
//!   sign-ins with the memory store, and Redis's `used_memory` with the
//!   Redis store.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::{Session, Target};
use crate::oauth::{self, GatewayAs, Oidc, RedisServer};
use crate::procs::{self, Proc};
use crate::run::Call;
use crate::web::{self, Http};

/// Connections the sessions share, as a host's backend pools them.
const SHARED: usize = 8;
/// Requests to the provider's mint at once.
const MINTING: usize = 8;

/// The `memory` scenario: its lines go to `extra`.
pub async fn callers(
    root: &Path,
    gateway_exe: &Path,
    upstream: &Proc,
    logs: &Path,
    n: usize,
    extra: &mut String,
) -> Result<(), String> {
    let http = web::client();
    let oidc = oauth::provider(root, logs).await?;
    let ports = oauth::free_ports(3)?;
    let audience = |port: u16| format!("http://127.0.0.1:{port}/mcp");
    let started = Instant::now();
    let tokens = mint(&http, &oidc, &audience(ports[1]), 2 * n).await?;
    let one = mint(&http, &oidc, &audience(ports[2]), 1).await?;
    println!(
        "memory: {} tokens minted in {:.1} s",
        tokens.len() + 1,
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        extra,
        "\n## Memory per caller\n\nThe gateway's RSS (KiB) for sessions over {SHARED} shared connections, each initialized and making one `tools/call` (3 requests), and the time and the gateway's CPU opening them; a fresh gateway for each row but the third. With `[auth]`, every caller's token is a different user's RS256 JWT access token ({} bytes) and `requests_per_minute = 1000000` (so each caller has a rate budget, never exhausted).\n\n| gateway | sessions | callers | RSS before | RSS after | KiB per session | s | gateway CPU s | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|",
        tokens.first().map(String::len).unwrap_or(0)
    );
    let plain = resource_gateway(
        "gateway-memory-plain",
        gateway_exe,
        ports[0],
        upstream,
        None,
        logs,
    )
    .await?;
    let mut errors = 0;
    let row = sessions(&plain, &vec![None; n]).await;
    errors += row.errors;
    let bare = line(extra, "no `[auth]`", n, 0, row);
    plain.stop().await;

    let gw = resource_gateway(
        "gateway-memory-callers",
        gateway_exe,
        ports[1],
        upstream,
        Some(&oidc),
        logs,
    )
    .await?;
    let (first, second) = tokens.split_at(n);
    let first: Vec<Option<&str>> = first.iter().map(|t| Some(t.as_str())).collect();
    let second: Vec<Option<&str>> = second.iter().map(|t| Some(t.as_str())).collect();
    let row = sessions(&gw, &first).await;
    errors += row.errors;
    let each = line(extra, "`[auth]`, a caller per session", n, n, row);
    let row = sessions(&gw, &second).await;
    errors += row.errors;
    let more = line(extra, "the same gateway, as many callers again", n, n, row);
    gw.stop().await;

    let gw = resource_gateway(
        "gateway-memory-one",
        gateway_exe,
        ports[2],
        upstream,
        Some(&oidc),
        logs,
    )
    .await?;
    let row = sessions(&gw, &vec![Some(one[0].as_str()); n]).await;
    errors += row.errors;
    let single = line(extra, "`[auth]`, one caller for all", n, 1, row);
    gw.stop().await;
    let token = tokens.first().map(String::len).unwrap_or(0);
    let counted = (n.min(10_000) * (token + 64)) as f64 / (1 << 20) as f64;
    let _ = writeln!(
        extra,
        "\nPer caller, over a session of one caller: {:.2} KiB (a caller per session {each:.2}, one caller for all {single:.2}; no `[auth]` {bare:.2}). What the gateway keeps per caller, and its bounds (docs/oauth.md, \"Bounds a client can reach\"): the verified JWT (its claims, by the token's SHA-256), at most 10,000 tokens and 8 MiB of them per issuer, counted as the token's bytes + 64 ({} tokens of {token} B count {counted:.1} MiB); the rate budget, at most 65,536 callers. The second {n} callers find the table of verified tokens {}: {more:.2} KiB each. Sessions with an HTTP upstream live in their sealed ids.",
        each - single,
        n.min(10_000),
        if 2 * n > 10_000 {
            "full, their tokens verified at every use and never kept"
        } else {
            "with room"
        },
    );
    oidc.proc.stop().await;
    match errors {
        0 => Ok(()),
        e => Err(format!("{e} sessions failed (the first is printed above)")),
    }
}

/// A row of the table; the KiB per session.
fn line(extra: &mut String, label: &str, n: usize, callers: usize, r: Row) -> f64 {
    let per = r.after.saturating_sub(r.before) as f64 / n.max(1) as f64;
    let row = format!(
        "| {label} | {n} | {callers} | {} | {} | {per:.2} | {:.1} | {:.1} | {} |",
        r.before, r.after, r.secs, r.cpu, r.errors
    );
    println!("memory: {row}");
    let _ = writeln!(extra, "{row}");
    per
}

/// `n` JWT access tokens of different users for `audience`, signed by the
/// provider's RS256 key, valid an hour.
async fn mint(http: &Http, oidc: &Oidc, audience: &str, n: usize) -> Result<Vec<String>, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let url = format!("{}/admin/mint", oidc.issuer);
    let tasks = (0..MINTING).map(|t| {
        let (http, url, iss, aud) = (
            http.clone(),
            url.clone(),
            oidc.issuer.clone(),
            audience.to_owned(),
        );
        tokio::spawn(async move {
            let mut out = Vec::new();
            for i in (t..n).step_by(MINTING) {
                let body = json!({"header": {"typ": "at+jwt"}, "claims": {
                    "jti": format!("bench-{i}-{now}"), "sub": format!("user-{i}"),
                    "iat": now, "exp": now + 3600, "scope": "tools:call",
                    "client_id": "bench-host", "iss": iss, "aud": aud}});
                let a = web::post_json(&http, &url, &body).await?;
                let token = a.json()["access_token"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("/admin/mint: {}", a.describe()))?;
                out.push((i, token));
            }
            Ok::<_, String>(out)
        })
    });
    let mut all = Vec::with_capacity(n);
    for t in futures_util::future::join_all(tasks).await {
        all.extend(t.map_err(|e| e.to_string())??);
    }
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// A gateway in front of `upstream` at `/mcp`, accepting `oidc`'s tokens
/// (`[auth]`, a rate budget per caller) when given.
async fn resource_gateway(
    name: &str,
    exe: &Path,
    port: u16,
    upstream: &Proc,
    oidc: Option<&Oidc>,
    logs: &Path,
) -> Result<Proc, String> {
    let auth = oidc
        .map(|o| {
            format!(
                "\n[auth]\nissuer = \"{}\"\nscopes = [\"tools:call\"]\nrequests_per_minute = 1000000\n",
                o.issuer
            )
        })
        .unwrap_or_default();
    let toml = format!(
        "listen = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n\n[[upstream]]\nname = \"bench\"\nurl = \"http://{}/mcp\"\npath = \"/mcp\"\n{auth}",
        upstream.addr
    );
    procs::gateway_with_config(name, exe, &toml, "warn", logs).await
}

/// One session per entry of `callers` (its token, or none), over
/// [`SHARED`] connections, each initialized and making one call; the
/// gateway's RSS before and after (KiB), and the errors.
/// What a batch of sessions cost the gateway.
struct Row {
    /// RSS before and after, KiB.
    before: u64,
    after: u64,
    errors: usize,
    /// Wall time and the gateway's CPU seconds, opening them.
    secs: f64,
    cpu: f64,
}

async fn sessions(gw: &Proc, callers: &[Option<&str>]) -> Row {
    let target = Target::Http {
        addr: gw.addr,
        host: gw.addr.to_string(),
        path: "/mcp".into(),
        tls: None,
        bearer: callers.first().copied().flatten().map(str::to_owned),
        sessionless: false,
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (before, _) = gw.rss_kib();
    let (started, cpu0) = (Instant::now(), gw.cpu_secs());
    let mut errors = 0;
    let mut conns = Vec::new();
    for _ in 0..SHARED {
        match Session::open(&target).await {
            Ok(s) => conns.push(s),
            Err(e) => {
                errors += 1;
                eprintln!("memory: {e}");
            }
        }
    }
    let lanes = conns.len().max(1);
    let opened =
        futures_util::future::join_all(conns.iter_mut().enumerate().map(|(lane, s)| async move {
            let mut errors = 0;
            for caller in callers.iter().skip(lane).step_by(lanes) {
                if let Some(token) = caller {
                    s.set_bearer(token);
                }
                let called = match s.restart().await {
                    Ok(()) => s
                        .request("tools/call", Call::Small.message().1)
                        .await
                        .map(drop),
                    Err(e) => Err(e),
                };
                if let Err(e) = called {
                    if errors == 0 {
                        eprintln!("memory: {e}");
                    }
                    errors += 1;
                }
            }
            errors
        }))
        .await;
    errors += opened.iter().sum::<usize>();
    let (secs, cpu) = (started.elapsed().as_secs_f64(), gw.cpu_secs() - cpu0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (after, _) = gw.rss_kib();
    drop(conns);
    Row {
        before,
        after,
        errors,
        secs,
        cpu,
    }
}

/// The `families` scenario: its lines go to `extra`.
pub async fn families(
    root: &Path,
    gateway_exe: &Path,
    upstream: &Proc,
    logs: &Path,
    n: usize,
    extra: &mut String,
) -> Result<(), String> {
    let http = web::client();
    let oidc = oauth::provider(root, logs).await?;
    let dir = crate::tempdir("bench-families");
    let redis = RedisServer::start(&dir).await?;
    let ports = oauth::free_ports(2)?;
    let client = oauth::gateway_client(&http, &oidc, &ports).await?;
    let redis_url = redis.url();
    let mut keys = String::new();
    let mut failed = 0;
    let _ = writeln!(
        extra,
        "\n## Memory per sign-in holding refresh tokens (a family)\n\nEach sign-in: a user's browser through the consent page and the provider's login, the code redeemed at once (a family opened); {} sign-ins per user. \"Before\" is after one sign-in.\n\n| store | families opened | measured | before | after | per family | errors |\n|---|--:|---|--:|--:|--:|--:|",
        oauth::CODES_PER_USER
    );
    for (i, (name, store)) in [
        ("gateway-families-memory", "memory"),
        ("gateway-families-redis", redis_url.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let g = GatewayAs {
            port: ports[i],
            store,
            upstream: upstream.addr,
            provider: &oidc,
            client: &client,
            requests_per_minute: None,
        };
        let gw = oauth::gateway_as(name, gateway_exe, &g, logs).await?;
        let server = oauth::gateway_server(&http, "gateway", &gw).await?;
        let warm = open(&http, &server, 1, 1, &format!("warm-{i}")).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss0 = gw.rss_kib().0;
        let used0 = redis.used_memory().unwrap_or(0);
        let started = Instant::now();
        let (opened, errors) = open(&http, &server, n, 8, &format!("family-{i}")).await;
        let took = started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss1 = gw.rss_kib().0;
        let errors = errors + warm.1;
        failed += errors;
        let per =
            |a: u64, b: u64, unit: f64| a.saturating_sub(b) as f64 / unit / opened.max(1) as f64;
        let mut row = format!(
            "| {store_name} | {opened} | gateway RSS, KiB | {rss0} | {rss1} | {:.3} KiB | {errors} |",
            per(rss1, rss0, 1.0),
            store_name = if i == 0 { "memory" } else { "Redis" }
        );
        if i == 1 {
            let used1 = redis.used_memory()?;
            let _ = write!(
                row,
                "\n| Redis | {opened} | Redis `used_memory`, bytes | {used0} | {used1} | {:.0} B | {errors} |",
                per(used1, used0, 1.0)
            );
            keys = redis_keys(&redis);
        }
        println!("families: {opened} opened in {took:.1} s\n{row}");
        let _ = writeln!(extra, "{row}");
        gw.stop().await;
    }
    let _ = writeln!(
        extra,
        "\nThe RSS and `used_memory` figures include each sign-in's code, kept redeemed for its 60 s, and the allocator's growth. In Redis ({keys}).\n- bounds (docs/oauth.md, \"Bounds a client can reach\"): the memory store keeps at most 500,000 families and 100,000 codes redeemed within their minute; `sign_ins_per_user` 100 families per user; Redis keys expire with what they name"
    );
    oidc.proc.stop().await;
    redis.proc.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    match failed {
        0 => Ok(()),
        e => Err(format!("{e} sign-ins failed (the first is printed above)")),
    }
}

/// Sign in and redeem the code, `n` times by `browsers` browsers at once;
/// each sign-in is a family. Bounded by 150 s. Families opened, errors.
async fn open(
    http: &Http,
    server: &oauth::Server,
    n: usize,
    browsers: usize,
    prefix: &str,
) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(150);
    let tasks = (0..browsers).map(|b| {
        let (http, server, prefix) = (http.clone(), server.clone(), prefix.to_owned());
        let mine = n / browsers + usize::from(b < n % browsers);
        tokio::spawn(async move {
            let (mut opened, mut errors) = (0, 0);
            let mut browser = web::Browser::new(&http, "");
            for k in 0..mine {
                if Instant::now() >= deadline {
                    break;
                }
                if k % oauth::CODES_PER_USER == 0 {
                    browser = web::Browser::new(
                        &http,
                        &format!("{prefix}-{b}-{}", k / oauth::CODES_PER_USER),
                    );
                }
                let back = browser
                    .sign_in(&server.authorize_url, oauth::CALLBACK)
                    .await;
                let code = back.and_then(|b| web::query_param(&b, "code").ok_or(b));
                let redeemed = match code {
                    Ok(code) => oauth::redeem(&http, &server, &code).await.map(drop),
                    Err(e) => Err(e),
                };
                match redeemed {
                    Ok(()) => opened += 1,
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("families: {e}");
                        }
                        errors += 1;
                    }
                }
            }
            (opened, errors)
        })
    });
    let mut total = (0, 0);
    for t in futures_util::future::join_all(tasks).await {
        let (o, e) = t.unwrap_or((0, 1));
        total = (total.0 + o, total.1 + e);
    }
    total
}

/// What the Redis holds: keys by kind, and `MEMORY USAGE` of one of each.
fn redis_keys(redis: &RedisServer) -> String {
    let mut out = Vec::new();
    for kind in ["code", "family", "user", "client"] {
        let pattern = format!("mcp-ui-gateway:oauth:{kind}:*");
        let keys = redis
            .cli(&["--scan", "--pattern", &pattern])
            .unwrap_or_default();
        let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
        let usage = keys
            .first()
            .and_then(|k| redis.cli(&["MEMORY", "USAGE", k]).ok())
            .map(|u| u.trim().to_owned())
            .unwrap_or_else(|| "–".into());
        out.push(format!(
            "{} `{kind}:` keys, `MEMORY USAGE` of one {usage} B",
            keys.len()
        ));
    }
    out.join("; ")
}
