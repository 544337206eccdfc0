//! The run's summary: one table of the ratios BENCHMARKS.md's summary
//! states, each read from this run's points, at concurrency 1 and 32 (the
//! two ends hosts see). A row whose points were not measured (a scenario
//! left out, a peer that did not install) is left out.

use std::fmt::Write as _;

use crate::report::find;
use crate::run::Point;
use crate::{revision, signed, tokens};

/// The `tools/call` sweep's scenario.
const SWEEP: &str = "tools/call";
/// The stdio bridges' scenario.
const STDIO: &str = "stdio tools/call";
/// The concurrencies of the summary.
const ENDS: [usize; 2] = [1, 32];

/// The summary table; `gateway_peers` are the sweep's MCP gateways other
/// than this one (their labels).
pub fn table(points: &[Point], gateway_peers: &[&str]) -> String {
    let mut rows: Vec<(String, [String; 2])> = Vec::new();
    let mut row = |label: String, cell: &dyn Fn(usize) -> Option<String>| {
        let cells = ENDS.map(|c| cell(c).unwrap_or_default());
        if cells.iter().any(|c| !c.is_empty()) {
            rows.push((
                label,
                cells.map(|c| if c.is_empty() { "–".into() } else { c }),
            ));
        }
    };
    let hops = ["bare relay", "nginx", "haproxy"];
    let added = |scenario: &str, base: &str, subject: &str, c: usize| {
        let (a, b) = (
            find(points, scenario, subject, c)?,
            find(points, scenario, base, c)?,
        );
        Some(a.p50_us - b.p50_us)
    };
    let ratio = |scenario: &str, base: &str, subject: &str, c: usize| {
        let (a, b) = (
            find(points, scenario, subject, c)?,
            find(points, scenario, base, c)?,
        );
        Some(a.per_sec / b.per_sec)
    };
    let joined = |parts: Vec<Option<String>>| {
        parts.iter().any(Option::is_some).then(|| {
            parts
                .into_iter()
                .map(|p| p.unwrap_or_else(|| "–".into()))
                .collect::<Vec<_>>()
                .join(" / ")
        })
    };
    let others: Vec<&str> = hops.iter().copied().chain(["gateway"]).collect();
    row(
        format!(
            "p50 added over direct, µs: {} / **gateway** / {}",
            hops.join(" / "),
            gateway_peers.join(" / ")
        ),
        &|c| {
            let all = others.iter().chain(gateway_peers);
            joined(
                all.map(|t| added(SWEEP, "direct", t, c).map(|v| format!("{v:+.0}")))
                    .collect(),
            )
        },
    );
    row("gateway throughput / direct".into(), &|c| {
        ratio(SWEEP, "direct", "gateway", c).map(|r| format!("{r:.2}"))
    });
    row(
        format!(
            "gateway throughput / {}",
            hops.iter()
                .chain(gateway_peers)
                .copied()
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        &|c| {
            let all = hops.iter().chain(gateway_peers);
            joined(
                all.map(|t| ratio(SWEEP, t, "gateway", c).map(|r| format!("{r:.2}")))
                    .collect(),
            )
        },
    );
    let cpu = |scenario: &str, t: &str, c: usize| {
        find(points, scenario, t, c)
            .and_then(|p| p.cpu_per_1k)
            .map(|v| format!("{v:.3}"))
    };
    let rss = |scenario: &str, t: &str, c: usize| {
        find(points, scenario, t, c)
            .and_then(|p| p.peak_rss_kib)
            .map(|k| format!("{:.1}", k as f64 / 1024.0))
    };
    let peers: Vec<&str> = ["nginx", "haproxy", "gateway"]
        .into_iter()
        .chain(gateway_peers.iter().copied())
        .collect();
    row(format!("CPU s per 1k calls: {}", peers.join(" / ")), &|c| {
        joined(peers.iter().map(|t| cpu(SWEEP, t, c)).collect())
    });
    row(format!("peak RSS MiB: {}", peers.join(" / ")), &|c| {
        joined(peers.iter().map(|t| rss(SWEEP, t, c)).collect())
    });
    let bridges = ["stdio", "supergateway", "mcp-proxy"];
    row(
        "stdio bridging, gateway throughput / the stdio server's own / supergateway / Python mcp-proxy"
            .into(),
        &|c| {
            joined(
                bridges
                    .iter()
                    .map(|b| ratio(STDIO, b, "gateway (stdio)", c).map(|r| format!("{r:.2}")))
                    .collect(),
            )
        },
    );
    for kind in ["RS256 JWT", "ES256 JWT", "introspected"] {
        row(
            format!("`[auth]` with {kind}: throughput / open; p50 added, µs"),
            &|c| {
                let r = ratio(signed::SCENARIO, signed::OPEN, kind, c)?;
                let a = added(signed::SCENARIO, signed::OPEN, kind, c)?;
                Some(format!("{r:.2}; {a:+.0}"))
            },
        );
    }
    row(
        "2026-07-28 sessionless / 2025 session: throughput; p50 added, µs".into(),
        &|c| {
            let (s, base) = (revision::SESSIONLESS, revision::SESSION);
            let r = ratio(revision::SCENARIO, base, s, c)?;
            let a = added(revision::SCENARIO, base, s, c)?;
            Some(format!("{r:.2}; {a:+.0}"))
        },
    );
    for (grant, what) in [
        (tokens::REFRESH, "refresh rotations"),
        (tokens::CODES, "code redemptions"),
    ] {
        row(
            format!("{what} / oidc-provider's: memory store; Redis store"),
            &|c| {
                let m = ratio(grant, "oidc-provider", "gateway (memory)", c);
                let r = ratio(grant, "oidc-provider", "gateway (Redis)", c);
                joined(vec![
                    m.map(|v| format!("{v:.1}×")),
                    r.map(|v| format!("{v:.1}×")),
                ])
            },
        );
    }
    let mut s = String::from("| `tools/call` | concurrency 1 | concurrency 32 |\n|---|--:|--:|\n");
    for (label, [one, many]) in rows {
        let _ = writeln!(s, "| {label} | {one} | {many} |");
    }
    s
}
