//! The load bench's command line.

use crate::given::Given;

pub const USAGE: &str = "\
The load benchmark of mcp-ui-gateway.

USAGE:
    cargo bench --bench load [-- OPTIONS]

Without --target it starts everything itself on 127.0.0.1 (an in-tree
upstream, the gateway, a bare relay and the peer proxies) and compares them.
With --target it drives endpoints that are already running: yours.

OPTIONS (the built-in scenarios):
    --quick                1 s points instead of 3 s
    --only LIST            scenarios, comma-separated: sweep revision sse tls stdio everything
                           big list idle reload app hosts auth authorization-server memory
                           families (revision: a sessionless 2026-07-28 tools/call against a
                           2025 one on a reused session, same gateway; auth: the gateway with
                           [auth], RS256 and ES256 JWTs and introspected tokens, against it
                           open; authorization-server: refresh rotations and code redemptions at
                           the gateway's token endpoint, memory and Redis stores, against
                           oidc-provider's; memory: RSS per signed-in caller; families: memory
                           per refresh-token family; hosts: ChatGPT's and Claude's patterns
                           against a stdio server, before and after; sweep: direct, the bare relay, nginx, HAProxy, the
                           gateway, the Rust mcp-proxy and IBM ContextForge (default and stateful
                           sessions; Python >= 3.12); everything: server-everything over
                           stdio through the gateway against its own streamable HTTP; app: an
                           app endpoint against a single mount)
    --no-peers             skip the peers (nginx, HAProxy, both mcp-proxy, ContextForge,
                           supergateway, server-everything) and their install
    --secs S               seconds per measured point
    --conc LIST            concurrencies of the sweeps, e.g. 1,32 (default 1,2,4,8,16,32,64;
                           1,32 for tls)

OPTIONS (your endpoints):
    --target NAME=URL      a streamable HTTP endpoint, e.g. gateway=http://127.0.0.1:8080/mcp
    --target NAME=stdio:CMD
                           a stdio server started per session, e.g. 'direct=stdio:python server.py'
                           (CMD is split on spaces); repeat --target to compare, in turns;
                           every later target is also given as a ratio against the first
    --call METHOD          the request each session repeats (default tools/list)
    --params JSON          its params (default {}), e.g. '{\"name\":\"echo\",\"arguments\":{}}'
    --pid NAME=PID         read CPU seconds and peak RSS of the process serving NAME
    --bearer NAME=TOKEN    send `Authorization: Bearer TOKEN` on NAME's requests (a gateway
                           with [auth]); the token stays out of the report
    --sessionless NAME     call NAME as a client of the 2026-07-28 revision does (ChatGPT):
                           no initialize and no session id, the `_meta` envelope and
                           MCP-Protocol-Version, Mcp-Method and Mcp-Name on every request
    --conc LIST, --secs S  as above (default 1,8,32 and 3 s)
    --allow-remote         allow targets that are not loopback addresses

Every point is bounded in calls and time. Results go to target/bench/
(load.md and latency.svg, or target.md and target.svg with --target).
";

pub struct Opts {
    /// `cargo bench` passes `--bench`; without it (`cargo test`) the smoke runs.
    pub full: bool,
    pub quick: bool,
    pub peers: bool,
    pub only: Option<Vec<String>>,
    /// Seconds per measured point (`--secs`), for profiling one scenario.
    pub secs: Option<f64>,
    /// Concurrencies of the sweeps (`--conc 1,32`).
    pub conc: Option<Vec<usize>>,
    /// The `--target` mode, when any target is given.
    pub given: Option<Given>,
    pub help: bool,
}

impl Opts {
    pub fn wants(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == scenario))
    }

    /// Parse the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Opts, String> {
        let mut o = Opts {
            full: false,
            quick: false,
            peers: true,
            only: None,
            secs: None,
            conc: None,
            given: None,
            help: false,
        };
        let mut targets: Vec<String> = Vec::new();
        let mut pids: Vec<String> = Vec::new();
        let mut bearers: Vec<String> = Vec::new();
        let mut sessionless: Vec<String> = Vec::new();
        let (mut call, mut params, mut allow_remote) = (None, None, false);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value (see --help)"))
            };
            match a.as_str() {
                "--bench" => o.full = true,
                "--quick" => o.quick = true,
                "--no-peers" => o.peers = false,
                "--help" | "-h" => o.help = true,
                "--allow-remote" => allow_remote = true,
                "--only" => o.only = Some(list(&value(a)?)),
                "--secs" => {
                    let v = value(a)?;
                    o.secs = Some(
                        v.parse()
                            .ok()
                            .filter(|s: &f64| *s > 0.0 && *s <= 3600.0)
                            .ok_or_else(|| {
                                format!("--secs {v:?}: a number of seconds up to 3600")
                            })?,
                    );
                }
                "--conc" => {
                    let v = value(a)?;
                    let cs: Result<Vec<usize>, _> = list(&v).iter().map(|c| c.parse()).collect();
                    match cs {
                        Ok(cs) if !cs.is_empty() && cs.iter().all(|&c| (1..=4096).contains(&c)) => {
                            o.conc = Some(cs);
                        }
                        _ => {
                            return Err(format!(
                                "--conc {v:?}: concurrencies from 1 to 4096, comma-separated"
                            ));
                        }
                    }
                }
                "--target" => targets.push(value(a)?),
                "--pid" => pids.push(value(a)?),
                "--bearer" => bearers.push(value(a)?),
                "--sessionless" => sessionless.push(value(a)?),
                "--call" => call = Some(value(a)?),
                "--params" => params = Some(value(a)?),
                other if other.starts_with('-') => {
                    return Err(format!("unknown option {other:?} (see --help)"));
                }
                // `cargo bench` may pass a filter; there is nothing to filter.
                _ => {}
            }
        }
        if targets.is_empty() {
            if call.is_some()
                || params.is_some()
                || !pids.is_empty()
                || !bearers.is_empty()
                || !sessionless.is_empty()
                || allow_remote
            {
                return Err(
                    "--call, --params, --pid, --bearer, --sessionless and --allow-remote go with --target (see --help)"
                        .into(),
                );
            }
        } else {
            o.given = Some(Given::parse(
                &targets,
                &pids,
                (&bearers, &sessionless),
                call.as_deref(),
                params.as_deref(),
                allow_remote,
            )?);
        }
        Ok(o)
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}
