//! Shared integration-test harness: the fixture MCP server, ways to run it as an
//! upstream (streamable HTTP, legacy HTTP+SSE, stdio) and clients of both protocol eras.

pub mod browser_agent;
pub mod clients;
pub mod exercise;
pub mod fixture;
pub mod gateway;
pub mod idp;
pub mod markdown;
pub mod peers;
pub mod pki;
pub mod process;
pub mod upstreams;
