//! The `app` scenario: the cost of an app endpoint (`[[app]]`) against a
//! single mount. One gateway serves the in-tree HTTP upstream both at its
//! own path (`/mcp`) and as a member of a two-member app (`/suite/mcp`, the
//! second member the same upstream under a prefix), so the two targets
//! differ only by the app's hop: its session of sealed member sessions, the
//! routing of `tools/call` by name, and the answer passed back.

use std::path::Path;

use crate::client::Target;
use crate::procs::{self, Proc};
use crate::run::{Budget, Call, Point};
use crate::{GATEWAY, http, run};

/// The scenario's name in reports.
pub const SCENARIO: &str = "tools/call app";

/// The gateway with the single mount and the app over `up`.
pub async fn gateway(up: &Proc, overlays: &Path, logs: &Path) -> Proc {
    let file = logs.join("gateway-app.toml");
    let toml = format!(
        r#"[[upstream]]
name = "bench"
path = "/mcp"
url = "http://{addr}/mcp"

[[upstream]]
name = "other"
url = "http://{addr}/mcp"

[[app]]
name = "suite"
upstreams = ["bench", {{ upstream = "other", prefix = "o_" }}]
"#,
        addr = up.addr
    );
    std::fs::write(&file, toml).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--overlays",
        &overlays.display().to_string(),
        "--config",
        &file.display().to_string(),
    ]
    .map(str::to_owned);
    procs::gateway(
        "gateway-app",
        Path::new(GATEWAY),
        &args,
        &[("RUST_LOG", "info")],
        logs,
    )
    .await
    .unwrap_or_else(|e| panic!("gateway-app: {e}"))
}

/// The two targets: the upstream's own mount, then the app.
pub fn targets(gw: &Proc) -> [(&'static str, Target, Option<&Proc>); 2] {
    [
        ("gateway (mount)", http(gw, "/mcp"), Some(gw)),
        ("gateway (app)", http(gw, "/suite/mcp"), Some(gw)),
    ]
}

/// `tools/call` through the mount and the app in turns, `rounds` each.
pub async fn compare(gw: &Proc, concurrency: usize, budget: &Budget, rounds: usize) -> Vec<Point> {
    run::interleaved(
        SCENARIO,
        &targets(gw),
        concurrency,
        Call::Small,
        budget,
        rounds,
    )
    .await
}

/// One line per concurrency: the app's median latency and throughput
/// against the mount's, from points of one run.
pub fn summary(points: &[Point]) -> String {
    let mut s = String::new();
    let ours: Vec<&Point> = points.iter().filter(|p| p.scenario == SCENARIO).collect();
    for mount in ours.iter().filter(|p| p.target == "gateway (mount)") {
        let Some(app) = ours
            .iter()
            .find(|p| p.target == "gateway (app)" && p.concurrency == mount.concurrency)
        else {
            continue;
        };
        s.push_str(&format!(
            "- c={}: p50 {:.0} µs through the app against {:.0} µs on the mount (×{:.2}); {:.0} against {:.0} calls/s (×{:.2})\n",
            mount.concurrency,
            app.p50_us,
            mount.p50_us,
            app.p50_us / mount.p50_us.max(1.0),
            app.per_sec,
            mount.per_sec,
            app.per_sec / mount.per_sec.max(1.0),
        ));
    }
    s
}
