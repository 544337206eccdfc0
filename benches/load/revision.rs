//! The `revision` scenario: what the 2026-07-28 revision costs a call. A
//! `tools/call` as ChatGPT now sends it (no `initialize` and no session id;
//! the `_meta` envelope on every request, `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name`) through the gateway's bridge to the 2025-era
//! in-tree upstream, against a 2025 `tools/call` on a reused session to the
//! same gateway, in turns.

use crate::client::Target;
use crate::procs::Proc;
use crate::run::{self, Budget, Call, Point};
use crate::{http, report};

/// The scenario's name in reports.
pub const SCENARIO: &str = "tools/call 2026-07-28";
/// The reference: a 2025 call on a session opened once.
pub const SESSION: &str = "2025 session";
/// The subject: a call of the revision, no session.
pub const SESSIONLESS: &str = "2026-07-28 sessionless";

/// Both kinds of call against `gw`'s `/mcp`, `rounds` turns each.
pub async fn compare(gw: &Proc, concurrency: usize, budget: &Budget, rounds: usize) -> Vec<Point> {
    let session = http(gw, "/mcp");
    let mut sessionless = http(gw, "/mcp");
    if let Target::Http { sessionless: s, .. } = &mut sessionless {
        *s = true;
    }
    let targets = [
        (SESSION, session, Some(gw)),
        (SESSIONLESS, sessionless, Some(gw)),
    ];
    run::interleaved(SCENARIO, &targets, concurrency, Call::Small, budget, rounds).await
}

/// The ratios of the revision's calls against the session's, per concurrency.
pub fn summary(points: &[Point]) -> String {
    format!(
        "\n## The 2026-07-28 revision against a 2025 session\n\nThe same gateway and upstream; a call of the revision (no session, `_meta` on every request) bridged to the 2025 upstream, against a 2025 call on a reused session.\n{}",
        report::ratios(points, SCENARIO, SESSIONLESS, &[SESSION])
    ) + "\n"
}
