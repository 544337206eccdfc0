//! The `everything` scenario: `@modelcontextprotocol/server-everything` over
//! stdio, bridged by the gateway, against the same server's own streamable
//! HTTP transport, in turns, at each concurrency: what a user gains by
//! serving a stdio server through the gateway rather than the server's own
//! HTTP transport.

use crate::procs::{self, Peers, Proc};
use crate::run::{Budget, Point};
use crate::{Upstream, compare, gateway, http, process};
use std::path::Path;

/// server-everything's streamable HTTP transport and the gateway in front of
/// its stdio transport, compared at each of `conc`.
pub async fn compare_transports(
    points: &mut Vec<Point>,
    peers: &Peers,
    overlays: &Path,
    logs: &Path,
    conc: &[usize],
    budget: &impl Fn(usize) -> Budget,
) -> Result<(), String> {
    let main = peers.everything.clone();
    if !peers.node.exists() || !main.exists() {
        return Err("server-everything is not installed (scripts/install-peers.sh)".into());
    }
    let node = peers.node.display().to_string();
    let script = main.display().to_string();
    let own: Proc = process::with_fresh_port(3, async |port| {
        // The preload binds it to 127.0.0.1 (it would take every interface).
        let args = vec![
            "--require".into(),
            peers.loopback.display().to_string(),
            script.clone(),
            "streamableHttp".into(),
        ];
        let port_env = port.to_string();
        procs::start(
            "everything-http",
            &peers.node,
            &args,
            &[("PORT", port_env.as_str())],
            port,
            logs,
        )
        .await
    })
    .await?;
    let cmd = [node, script, "stdio".into()];
    let gw = gateway(
        "gateway-everything",
        Upstream::Command(&cmd),
        overlays,
        logs,
    )
    .await;
    for &c in conc {
        let targets = [
            (
                "everything (streamable HTTP)",
                http(&own, "/mcp"),
                Some(&own),
            ),
            ("gateway (everything stdio)", http(&gw, "/mcp"), Some(&gw)),
        ];
        compare(points, SCENARIO, &targets, c, &budget(c)).await;
    }
    gw.stop().await;
    own.stop().await;
    Ok(())
}

/// The scenario's name in the report.
pub const SCENARIO: &str = "server-everything tools/call";
