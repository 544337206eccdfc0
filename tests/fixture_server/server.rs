//! `mcp-fixture-server`: the integration tests' fixture MCP server over stdio.
//!
//! Usage: `mcp-fixture-server [--protocol all|2025]`; `2025` makes it behave like a
//! server that predates protocol `2026-07-28`.

#[path = "../support/fixture.rs"]
mod fixture;

use fixture::ProtocolMode;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut mode = ProtocolMode::All;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol" => {
                let value = args.next().unwrap_or_default();
                mode = ProtocolMode::parse(&value)
                    .ok_or_else(|| anyhow::anyhow!("unknown --protocol value {value:?}"))?;
            }
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    fixture::serve_stdio(mode).await
}
