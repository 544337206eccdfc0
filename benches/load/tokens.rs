//! The `authorization-server` scenario: the gateway's token endpoint under
//! load, its store in memory and in Redis, against oidc-provider's own
//! token endpoint on the same machine doing the same grants, for a public
//! client with PKCE whose access tokens are ES256 JWTs:
//!
//! - refresh-token rotation: each of `c` clients holds one sign-in and
//!   refreshes it in a loop, each answer checked (200, an access token, a
//!   new refresh token), each refresh token presented once; afterwards every
//!   client presents its previous, rotated token once more, which must be
//!   refused (`invalid_grant`). The servers take turns, as in the sweeps;
//! - code redemption: codes minted first by real sign-ins (a browser per
//!   user through the consent page and the provider's login form, see
//!   [`crate::oauth`]), then redeemed by `c` clients at once, timed alone;
//!   each code lives 60 s, so minting stops after 30 s and redeeming after
//!   25 s: none expires unredeemed.
//!
//! Throughput, latency, the server's CPU seconds per 1,000 grants and its
//! peak RSS; for the Redis store, Redis's own CPU too.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::oauth::{self, GatewayAs, RedisServer, Server};
use crate::procs::Proc;
use crate::report;
use crate::run::{self, Point, Sample};
use crate::web::{self, Http};

pub const REFRESH: &str = "token: refresh rotation";
pub const CODES: &str = "token: code redemption";
/// Turns the servers take in the refresh points.
const ROUNDS: usize = 3;
/// Browsers signing in at once while codes are minted.
const MINTING: usize = 8;
const MINT_FOR: Duration = Duration::from_secs(30);
const REDEEM_FOR: Duration = Duration::from_secs(25);

pub struct Sizes {
    /// Seconds of refreshes per server and point.
    pub secs: f64,
    /// Codes minted and redeemed per server and point.
    pub codes: usize,
    pub conc: Vec<usize>,
}

/// One server under test: its client, its process, and Redis's behind it.
struct Under<'a> {
    server: Server,
    proc: &'a Proc,
    redis: Option<&'a Proc>,
}

/// Run the scenario; its points go to `points`, its summary to `extra`.
pub async fn run(
    root: &Path,
    gateway_exe: &Path,
    upstream: &Proc,
    logs: &Path,
    sizes: &Sizes,
    points: &mut Vec<Point>,
    extra: &mut String,
) -> Result<(), String> {
    let http = web::client();
    let oidc = oauth::provider(root, logs).await?;
    let dir = crate::tempdir("bench-redis");
    let redis = RedisServer::start(&dir).await?;
    let ports = oauth::free_ports(2)?;
    let client = oauth::gateway_client(&http, &oidc, &ports).await?;
    let redis_url = redis.url();
    let mut gateways = Vec::new();
    for (i, (name, store)) in [
        ("gateway-as-memory", "memory"),
        ("gateway-as-redis", redis_url.as_str()),
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
        gateways.push(oauth::gateway_as(name, gateway_exe, &g, logs).await?);
    }
    let under = [
        Under {
            server: oauth::gateway_server(&http, "gateway (memory)", &gateways[0]).await?,
            proc: &gateways[0],
            redis: None,
        },
        Under {
            server: oauth::gateway_server(&http, "gateway (Redis)", &gateways[1]).await?,
            proc: &gateways[1],
            redis: Some(&redis.proc),
        },
        Under {
            server: oauth::provider_server(&http, &oidc).await?,
            proc: &oidc.proc,
            redis: None,
        },
    ];
    let mut redis_cpu = Vec::new();
    for &c in &sizes.conc {
        let measured = refreshes(&http, &under, c, sizes.secs).await?;
        for (p, rc) in measured {
            println!("{}", report::line(&p));
            redis_cpu.extend(rc.map(|r| (REFRESH, c, r)));
            points.push(p);
        }
        for u in &under {
            let (p, rc) = redemptions(&http, u, c, sizes.codes).await;
            println!("{}", report::line(&p));
            redis_cpu.extend(rc.map(|r| (CODES, c, r)));
            points.push(p);
        }
    }
    extra.push_str(&summary(points, &redis_cpu));
    for g in gateways {
        g.stop().await;
    }
    oidc.proc.stop().await;
    redis.proc.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The `authorization-server` scenario in miniature (2 clients, 8 codes per
/// server, 0.6 s of refreshes): every grant answered and checked, every
/// rotated refresh token refused when used again. Skipped, and said so,
/// without oidc-provider (scripts/install-peers.sh) or redis-server.
pub async fn smoke(
    root: &Path,
    gateway_exe: &Path,
    up: &Proc,
    logs: &Path,
    points: &mut Vec<Point>,
) -> bool {
    let redis = std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok();
    if !root.join("tests/peers/node_modules/oidc-provider").exists() || !redis {
        println!("load smoke: authorization-server skipped (no oidc-provider or redis-server)");
        return true;
    }
    let sizes = Sizes {
        secs: 0.6,
        codes: 8,
        conc: vec![2],
    };
    let mut extra = String::new();
    match run(root, gateway_exe, up, logs, &sizes, points, &mut extra).await {
        Ok(()) => true,
        Err(e) => {
            eprintln!("ERROR: authorization-server: {e}");
            false
        }
    }
}

/// A sign-in's refresh token at `server` for each of `n` clients.
async fn families(
    http: &Http,
    server: &Server,
    n: usize,
    prefix: &str,
) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + MINT_FOR;
    let (codes, err) = oauth::codes(http, server, n, MINTING.min(n), prefix, deadline).await;
    if codes.len() < n {
        return Err(format!(
            "{}: {} of {n} sign-ins: {}",
            server.label,
            codes.len(),
            err.unwrap_or_default()
        ));
    }
    let mut tokens = Vec::with_capacity(n);
    for code in codes {
        tokens.push(oauth::redeem(http, server, &code).await?.1);
    }
    Ok(tokens)
}

/// Each server's refresh point at concurrency `c`, the servers in turns,
/// and Redis's CPU seconds per 1,000 refreshes behind the one using it.
async fn refreshes(
    http: &Http,
    under: &[Under<'_>],
    c: usize,
    secs: f64,
) -> Result<Vec<(Point, Option<f64>)>, String> {
    let mut chains = Vec::new();
    for u in under {
        let prefix = format!(
            "refresh-{c}-{}",
            u.server.label.replace([' ', '(', ')'], "")
        );
        let tokens = families(http, &u.server, c, &prefix).await?;
        chains.push(tokens.into_iter().map(Chain::new).collect::<Vec<_>>());
    }
    let turn = Duration::from_secs_f64(secs / ROUNDS as f64);
    let mut samples: Vec<Vec<Sample>> = under.iter().map(|_| Vec::new()).collect();
    let mut helper = vec![(0.0, 0usize); under.len()];
    for _ in 0..ROUNDS {
        for (i, u) in under.iter().enumerate() {
            let held = std::mem::take(&mut chains[i]);
            let cpu0 = u.redis.map(Proc::cpu_secs);
            let (sample, back, done) = rotations(http, u, held, turn).await;
            if let (Some(r), Some(c0)) = (u.redis, cpu0) {
                helper[i].0 += r.cpu_secs() - c0;
                helper[i].1 += done;
            }
            chains[i] = back;
            samples[i].push(sample);
        }
    }
    let mut out = Vec::new();
    for (i, (u, s)) in under.iter().zip(samples).enumerate() {
        // Each client's previous token, once more: refused.
        let mut replays = Vec::new();
        for chain in chains[i].iter().filter(|ch| !ch.broken) {
            if let Some(prev) = &chain.previous {
                replays.push(oauth::replay_refused(http, &u.server, prev).await.err());
            }
        }
        let mut p = run::summarize(REFRESH, u.server.label, c, s);
        for e in replays.into_iter().flatten() {
            p.errors += 1;
            p.first_error.get_or_insert(e);
        }
        let per_1k = u
            .redis
            .map(|_| helper[i].0 / helper[i].1.max(1) as f64 * 1000.0);
        out.push((p, per_1k));
    }
    Ok(out)
}

/// One client's sign-in: its live refresh token and the one it replaced.
struct Chain {
    current: String,
    previous: Option<String>,
    broken: bool,
}

impl Chain {
    fn new(current: String) -> Chain {
        Chain {
            current,
            previous: None,
            broken: false,
        }
    }
}

/// Every chain refreshed in a loop for `time`, at once: the sample, the
/// chains, and how many refreshes succeeded.
async fn rotations(
    http: &Http,
    u: &Under<'_>,
    chains: Vec<Chain>,
    time: Duration,
) -> (Sample, Vec<Chain>, usize) {
    u.proc.reset_peak();
    let cpu0 = u.proc.cpu_secs();
    let start = Instant::now();
    let deadline = start + time;
    let tasks = chains.into_iter().map(|mut chain| {
        let (http, server) = (http.clone(), u.server.clone());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut first = None;
            while !chain.broken && Instant::now() < deadline && lat.len() < 1_000_000 {
                let t = Instant::now();
                match oauth::rotate(&http, &server, &chain.current).await {
                    Ok((_, next)) => {
                        lat.push(t.elapsed().as_nanos() as u64);
                        chain.previous = Some(std::mem::replace(&mut chain.current, next));
                    }
                    Err(e) => {
                        first = Some(e);
                        chain.broken = true;
                    }
                }
            }
            (chain, lat, first)
        })
    });
    let mut back = Vec::new();
    let (mut lat, mut errors, mut first_error) = (Vec::new(), 0, None);
    for t in futures_util::future::join_all(tasks).await {
        match t {
            Ok((chain, l, first)) => {
                lat.extend(l);
                if let Some(e) = first {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
                back.push(chain);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("task: {e}"));
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = u.proc.cpu_secs() - cpu0;
    let done = lat.len();
    let sample = Sample::of(
        lat,
        (errors, first_error),
        wall,
        Some(cpu),
        Some(u.proc.rss_kib().1),
    );
    (sample, back, done)
}

/// `n` codes minted at `u`, then redeemed by `c` clients at once: the
/// point, and Redis's CPU seconds per 1,000 redemptions behind it.
async fn redemptions(http: &Http, u: &Under<'_>, c: usize, n: usize) -> (Point, Option<f64>) {
    let prefix = format!("code-{c}-{}", u.server.label.replace([' ', '(', ')'], ""));
    let minted = Instant::now();
    let (codes, mint_error) =
        oauth::codes(http, &u.server, n, MINTING, &prefix, minted + MINT_FOR).await;
    println!(
        "{CODES}: {} codes of {} minted in {:.1} s",
        codes.len(),
        u.server.label,
        minted.elapsed().as_secs_f64()
    );
    let codes = Arc::new(codes);
    let next = Arc::new(AtomicUsize::new(0));
    u.proc.reset_peak();
    let cpu0 = u.proc.cpu_secs();
    let redis0 = u.redis.map(Proc::cpu_secs);
    let start = Instant::now();
    let deadline = start + REDEEM_FOR;
    let tasks = (0..c).map(|_| {
        let (http, server) = (http.clone(), u.server.clone());
        let (codes, next) = (codes.clone(), next.clone());
        tokio::spawn(async move {
            let (mut lat, mut errors, mut first) = (Vec::new(), 0, None);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= codes.len() || Instant::now() >= deadline {
                    break;
                }
                let t = Instant::now();
                match oauth::redeem(&http, &server, &codes[i]).await {
                    Ok(_) => lat.push(t.elapsed().as_nanos() as u64),
                    Err(e) => {
                        errors += 1;
                        first.get_or_insert(e);
                    }
                }
            }
            (lat, errors, first)
        })
    });
    let (mut lat, mut errors, mut first_error) = (Vec::new(), 0, None);
    for t in futures_util::future::join_all(tasks).await {
        match t {
            Ok((l, e, f)) => {
                lat.extend(l);
                errors += e;
                first_error = first_error.or(f);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("task: {e}"));
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = u.proc.cpu_secs() - cpu0;
    let done = lat.len();
    if codes.len() < n {
        errors += 1;
        first_error.get_or_insert(format!(
            "only {} of {n} codes minted: {}",
            codes.len(),
            mint_error.unwrap_or_default()
        ));
    }
    let sample = Sample::of(
        lat,
        (errors, first_error),
        wall,
        Some(cpu),
        Some(u.proc.rss_kib().1),
    );
    let p = run::summarize(CODES, u.server.label, c, vec![sample]);
    let redis = match (u.redis, redis0) {
        (Some(r), Some(c0)) => Some((r.cpu_secs() - c0) / done.max(1) as f64 * 1000.0),
        _ => None,
    };
    (p, redis)
}

/// Per grant and concurrency: each server's grants a second, the gateway's
/// ratio to oidc-provider's, and Redis's CPU.
fn summary(points: &[Point], redis_cpu: &[(&str, usize, f64)]) -> String {
    let mut s = String::from(
        "\n## The authorization server's token endpoint\n\nGrants a second (p50 / p99 µs), the gateway with each store against oidc-provider 9 on the same machine; CPU s per 1k grants of the serving process (Redis's own in the last column).\n\n| grant | conc. | gateway (memory) | gateway (Redis) | oidc-provider | memory / oidc-provider | Redis / oidc-provider | CPU s / 1k: memory; Redis store; oidc-provider | Redis CPU s / 1k |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    let mut concs: Vec<usize> = points
        .iter()
        .filter(|p| p.scenario == REFRESH || p.scenario == CODES)
        .map(|p| p.concurrency)
        .collect();
    concs.sort_unstable();
    concs.dedup();
    for grant in [REFRESH, CODES] {
        for &c in &concs {
            let find = |t: &str| report::find(points, grant, t, c);
            let (Some(m), Some(r), Some(o)) = (
                find("gateway (memory)"),
                find("gateway (Redis)"),
                find("oidc-provider"),
            ) else {
                continue;
            };
            let cell = |p: &Point| format!("{:.0} ({:.0} / {:.0})", p.per_sec, p.p50_us, p.p99_us);
            let cpu = |p: &Point| {
                p.cpu_per_1k
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or("–".into())
            };
            let redis = redis_cpu
                .iter()
                .find(|(g, cc, _)| *g == grant && *cc == c)
                .map(|(_, _, v)| format!("{v:.3}"))
                .unwrap_or("–".into());
            let _ = writeln!(
                s,
                "| {} | {c} | {} | {} | {} | {:.1}× | {:.1}× | {}; {}; {} | {redis} |",
                grant.trim_start_matches("token: "),
                cell(m),
                cell(r),
                cell(o),
                m.per_sec / o.per_sec,
                r.per_sec / o.per_sec,
                cpu(m),
                cpu(r),
                cpu(o),
            );
        }
    }
    s
}
