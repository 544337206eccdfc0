//! The `--target` mode: load-test endpoints that are already running (a
//! server, the gateway in front of it), compared in turns within one run.

use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::client::{Session, Target};
use crate::procs::Proc;
use crate::report;
use crate::run::{self, Budget, Call, Point};

/// Concurrencies when `--conc` is not given.
const CONC: [usize; 3] = [1, 8, 32];
/// Turns the targets take in each point.
const ROUNDS: usize = 3;

#[derive(Debug)]
pub struct Given {
    /// In the order given; the first is what the others are compared with.
    pub targets: Vec<(String, Target, String)>,
    /// `--pid NAME=PID`: whose CPU time and RSS a target's points report.
    pub pids: Vec<(String, u32)>,
    pub call: Call,
}

impl Given {
    pub fn parse(
        targets: &[String],
        pids: &[String],
        (bearers, sessionless): (&[String], &[String]),
        call: Option<&str>,
        params: Option<&str>,
        allow_remote: bool,
    ) -> Result<Given, String> {
        let mut parsed: Vec<(String, Target, String)> = Vec::new();
        for spec in targets {
            let (name, what) = spec
                .split_once('=')
                .filter(|(n, w)| !n.trim().is_empty() && !w.trim().is_empty())
                .ok_or_else(|| {
                    format!(
                        "--target {spec:?}: expected NAME=URL or NAME=stdio:COMMAND, e.g. gateway=http://127.0.0.1:8080/mcp"
                    )
                })?;
            let name = name.trim().to_owned();
            if parsed.iter().any(|(n, _, _)| *n == name) {
                return Err(format!(
                    "--target {spec:?}: the name {name:?} is given twice"
                ));
            }
            let target =
                target(what.trim(), allow_remote).map_err(|e| format!("--target {spec:?}: {e}"))?;
            parsed.push((name, target, what.trim().to_owned()));
        }
        for spec in bearers {
            let (name, token) = spec
                .split_once('=')
                .ok_or_else(|| format!("--bearer {spec:?}: expected NAME=TOKEN"))?;
            match parsed.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, Target::Http { bearer, .. }, _)) => {
                    *bearer = Some(token.trim().to_owned());
                }
                Some(_) => return Err(format!("--bearer {spec:?}: {name} is not an HTTP target")),
                None => return Err(format!("--bearer {spec:?}: no --target is named {name:?}")),
            }
        }
        for name in sessionless {
            match parsed.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, Target::Http { sessionless, .. }, _)) => *sessionless = true,
                Some(_) => return Err(format!("--sessionless {name}: not an HTTP target")),
                None => return Err(format!("--sessionless {name}: no --target is named so")),
            }
        }
        let mut watched = Vec::new();
        for spec in pids {
            let (name, pid) = spec
                .split_once('=')
                .ok_or_else(|| format!("--pid {spec:?}: expected NAME=PID"))?;
            if !parsed.iter().any(|(n, _, _)| n == name) {
                return Err(format!(
                    "--pid {spec:?}: no --target is named {name:?} (targets: {})",
                    parsed
                        .iter()
                        .map(|(n, _, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            let pid: u32 = pid
                .trim()
                .parse()
                .map_err(|_| format!("--pid {spec:?}: {pid:?} is not a process id"))?;
            Proc::watch(pid).map_err(|e| format!("--pid {spec:?}: {e}"))?;
            watched.push((name.to_owned(), pid));
        }
        let method = call.unwrap_or("tools/list").trim();
        if method.is_empty()
            || method
                .chars()
                .any(|c| c == '"' || c == '\\' || c.is_control())
        {
            return Err(format!("--call {method:?}: not a JSON-RPC method name"));
        }
        let params = params.unwrap_or("{}");
        let value: serde_json::Value = serde_json::from_str(params)
            .map_err(|e| format!("--params: not JSON ({e}): {params}"))?;
        if !(value.is_object() || value.is_array()) {
            return Err(format!(
                "--params: JSON-RPC params are an object or an array, not {params}"
            ));
        }
        // The call is repeated by every session for the rest of the process.
        let call = Call::Given {
            method: Box::leak(method.to_owned().into_boxed_str()),
            params: Box::leak(value.to_string().into_boxed_str()),
        };
        Ok(Given {
            targets: parsed,
            pids: watched,
            call,
        })
    }
}

/// `http://HOST[:PORT]/PATH` (HOST resolved now) or `stdio:PROGRAM ARGS…`.
fn target(what: &str, allow_remote: bool) -> Result<Target, String> {
    if let Some(cmd) = what.strip_prefix("stdio:") {
        let mut words = cmd.split_whitespace();
        let program = words.next().ok_or("stdio: names no program")?;
        return Ok(Target::Stdio {
            program: PathBuf::from(program),
            args: words.map(str::to_owned).collect(),
        });
    }
    let uri: http::Uri = what.parse().map_err(|e| format!("not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(
                "https is not spoken by the load client; give the plain http:// address it listens on"
                    .into(),
            );
        }
        _ => return Err("expected an http:// URL or stdio:COMMAND".into()),
    }
    let authority = uri.authority().ok_or("the URL has no host")?;
    let port = authority.port_u16().unwrap_or(80);
    let addrs: Vec<SocketAddr> = (authority.host().trim_matches(['[', ']']), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", authority.host()))?
        .collect();
    if !allow_remote && let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
        return Err(format!(
            "{a} is not a loopback address; pass --allow-remote to load-test another machine"
        ));
    }
    // The first address that accepts a connection (`localhost` may give
    // ::1 first to a server listening on 127.0.0.1 only); else the first,
    // and the check before the run says why it fails.
    let addr = addrs
        .iter()
        .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{} resolves to no address", authority.host()))?;
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .unwrap_or("/");
    Ok(Target::Http {
        addr,
        host: authority.as_str().to_owned(),
        path: path.to_owned(),
        tls: None,
        bearer: None,
        sessionless: false,
    })
}

/// Check each target answers the call once, then measure every
/// concurrency with the targets in turns. Prints as it goes; writes
/// `target.md` and `target.svg` into `out`. True when nothing failed.
pub async fn run(given: &Given, conc: &[usize], secs: f64, out: &Path) -> bool {
    let started = Instant::now();
    let (method, params) = given.call.message();
    for (name, target, what) in &given.targets {
        let first = async {
            let mut s = Session::open(target).await?;
            let r = s.request(method, params).await;
            s.close().await;
            r
        };
        if let Err(e) = first.await {
            eprintln!("ERROR: {name} ({what}): {e}");
            return false;
        }
    }
    let procs: Vec<Option<Proc>> = given
        .targets
        .iter()
        .map(|(name, _, _)| {
            given
                .pids
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, pid)| Proc::watch(*pid).ok())
        })
        .collect();
    let scenario = method.to_owned();
    let mut points: Vec<Point> = Vec::new();
    for &c in conc {
        let budget = Budget {
            calls_per_session: (1_000_000 / c).max(50),
            max_time: Duration::from_secs_f64(secs),
            warmup_calls: 2,
        };
        let targets: Vec<(&str, Target, Option<&Proc>)> = given
            .targets
            .iter()
            .zip(&procs)
            .map(|((name, t, _), p)| (name.as_str(), t.clone(), p.as_ref()))
            .collect();
        for p in run::interleaved(&scenario, &targets, c, given.call, &budget, ROUNDS).await {
            println!("{}", report::line(&p));
            points.push(p);
        }
    }
    let ok = report::errors_ok(&points);
    let md = markdown(given, &points, started.elapsed());
    println!("\n{md}");
    let names: Vec<(&str, &str)> = given
        .targets
        .iter()
        .map(|(n, _, _)| (scenario.as_str(), n.as_str()))
        .collect();
    let svg = report::svg(
        &points,
        &names,
        &format!("{method} latency against concurrency"),
    );
    let (md_path, svg_path) = (out.join("target.md"), out.join("target.svg"));
    if let Err(e) = std::fs::write(&md_path, &md).and_then(|()| std::fs::write(&svg_path, svg)) {
        eprintln!("ERROR: writing {}: {e}", out.display());
        return false;
    }
    println!("wrote {} and {}", md_path.display(), svg_path.display());
    ok
}

fn markdown(given: &Given, points: &[Point], took: Duration) -> String {
    let (method, params) = given.call.message();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Run of {}: `{method}` with params `{}`, the targets in turns ({ROUNDS} rounds per point); the run took {:.1} s.\n",
        report::date_utc(),
        shortened(params, 200),
        took.as_secs_f64()
    );
    for (name, _, what) in &given.targets {
        let pid = given
            .pids
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| format!(" (process {p})"))
            .unwrap_or_default();
        let _ = writeln!(s, "- {name}: `{what}`{pid}");
    }
    s.push('\n');
    s.push_str(&report::table(points));
    if let Some(((first, _, _), rest)) = given.targets.split_first() {
        for (name, _, _) in rest {
            s.push_str(&report::ratios(points, method, name, &[first.as_str()]));
        }
    }
    s
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn shortened(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Default concurrencies of the mode.
pub fn default_conc() -> Vec<usize> {
    CONC.to_vec()
}
