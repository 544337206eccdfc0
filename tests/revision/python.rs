//! The official Python client of the revision (`mcp` 2.3, pinned to 2026-07-28) answers
//! the rounds the gateway gives for a 2025 server's requests, with its own callbacks.

use serde_json::Value;

use super::{Findings, Front, Kind, REVISION, Servers};
use crate::support::peers::*;

/// What `py_client.py` answers (its fixed elicitation content, sampling reply and root).
const ELICITED: &str = "Gateway Tester";
const SAMPLED: &str = "py-client fixed sampling reply";
const ROOT: &str = "file:///tmp/py-client-root";

/// What one run of the client did wrong.
fn judge(summary: &Value) -> Result<(), String> {
    let mut wrong = Vec::new();
    if summary["protocol_version"] != REVISION {
        wrong.push(format!("protocol {}", summary["protocol_version"]));
    }
    let mut calls = vec![summary["call"].clone()];
    calls.extend(summary["then"].as_array().cloned().unwrap_or_default());
    let expected = [
        ("ask_name", format!("Hello, {ELICITED}")),
        ("ask_model", SAMPLED.to_owned()),
        ("list_roots", ROOT.to_owned()),
        ("ask_twice", format!("first={ELICITED} second={ELICITED}")),
    ];
    for (tool, text) in &expected {
        match calls.iter().find(|c| c["tool"] == *tool) {
            Some(c) if c["is_error"] == false && c["text"] == text.as_str() => {}
            other => wrong.push(format!("{tool}: {other:?}, not {text:?}")),
        }
    }
    for (counter, n) in [
        ("elicitation_requests", 3),
        ("sampling_requests", 1),
        ("roots_requests", 1),
    ] {
        if summary[counter] != n {
            wrong.push(format!("{counter} = {}, not {n}", summary[counter]));
        }
    }
    // Pinned: no `initialize`, every request under the revision's header.
    let log = summary["http_log"].as_array().cloned().unwrap_or_default();
    if let Some(e) = log
        .iter()
        .find(|e| e["rpc"] == "initialize" || e["mcp-protocol-version"] != REVISION)
    {
        wrong.push(format!("a request outside the revision: {e}"));
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}\n    summary: {summary}", wrong.join("; "))),
    }
}

/// The Python `mcp` 2.3 client pinned to 2026-07-28 (`py_client.py --mode 2026-07-28`,
/// whose callbacks answer elicitations, sampling and roots with fixed content) calls
/// ask_name, ask_model, list_roots and ask_twice on legacy_server.py (mcp 1.30) through
/// the gateway, over stdio and legacy SSE: each call succeeds with the text its answers
/// make ("Hello, Gateway Tester", the sampled reply, the root, both names), each callback
/// ran as often as the server asked, and every request was of the revision.
#[tokio::test]
async fn python_client_2026_answers_rounds() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio, Kind::Sse];
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::of(&peers, &servers, &kinds, None, "").await;
    let args = [
        "--mode",
        REVISION,
        "--roots",
        "--call",
        "ask_name",
        "--then",
        "ask_model",
        "--then",
        "list_roots",
        "--then",
        "ask_twice",
    ];
    let mut findings = Findings::default();
    for kind in kinds {
        let url = front.url(kind);
        let run = run_client(&peers, ClientKind::Python, Target::Streamable(&url), &args).await;
        findings.note(kind.label(), run.and_then(|s| judge(&s)));
    }
    findings.assert_none(&front, "the Python client of the revision answering rounds");
    front.gateway.stop().await;
}
