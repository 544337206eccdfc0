//! The conformance suite of the revision, check by check, for a 2025 build behind the
//! gateway against its 2026 build; and the Python client of the revision calling a 2025
//! build of mcp-server-time.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use super::{Front, stdio_upstream};
use crate::support::peers::*;
use crate::support::process::{Proc, Stream};

/// One conformance run: `"<scenario> <check-id>"` -> its status (SUCCESS, FAILURE,
/// WARNING, SKIPPED, INFO), as `conformance-2026.sh` writes them.
type Checks = BTreeMap<String, String>;

async fn conformance_2026(peers: &Peers, url: &str, label: &str) -> Result<Checks, String> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new(peers.script("conformance-2026.sh"));
    cmd.arg(url)
        .arg(out.path())
        .env("CONFORMANCE_TIMEOUT", CONFORMANCE_OWN_TIMEOUT_S)
        .current_dir(&peers.root);
    if let Ok(dir) = std::env::var("REVISION_CONFORMANCE_DIR") {
        cmd.env(
            "CONFORMANCE_RESULTS_DIR",
            format!("{dir}/{}", label.replace([' ', '(', ')', ','], "-")),
        );
    }
    let mut proc = Proc::spawn(format!("conformance-2026.sh against {label}"), &mut cmd);
    let (status, _, stderr) = proc.finish_async(CONFORMANCE_LIMIT).await?;
    if !status.success() {
        return Err(format!(
            "conformance-2026.sh against {label} ({url}) exited with {status}:\n{}",
            indent(&stderr)
        ));
    }
    eprintln!(
        "[conformance-2026] {label}: {}",
        stderr.lines().last().unwrap_or_default()
    );
    let text = std::fs::read_to_string(out.path()).map_err(|e| e.to_string())?;
    Ok(text
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(check, status)| (check.to_owned(), status.to_owned()))
        .collect())
}

fn successes(checks: &Checks) -> usize {
    checks.values().filter(|s| *s == "SUCCESS").count()
}

/// Compares the 2025 build's run with the 2026 build's: prints the figures and returns
/// the checks the 2026 build passes that the 2025 build fails (or never reported).
fn compare(pair: &str, new: &Checks, old: &Checks) -> Vec<String> {
    let all: BTreeSet<_> = new.keys().chain(old.keys()).collect();
    eprintln!(
        "[conformance-2026] {pair}: 2026 build: {}/{} checks pass; 2025 build through the \
         gateway: {}/{}",
        successes(new),
        all.len(),
        successes(old),
        all.len()
    );
    let mut lost = Vec::new();
    let mut weaker = Vec::new();
    for (check, status) in new.iter().filter(|(_, s)| *s == "SUCCESS") {
        match old.get(check).map(String::as_str) {
            Some("SUCCESS") => {}
            Some("FAILURE") | None => lost.push(format!(
                "  {check}: SUCCESS for the 2026 build, {} for the 2025 build",
                old.get(check).map_or("not reported", String::as_str)
            )),
            Some(other) => weaker.push(format!("  {check}: {status} -> {other}")),
        }
    }
    eprintln!(
        "[conformance-2026] {pair}: of the {} checks the 2026 build passes, the 2025 build \
         fails {} and passes {} only as WARNING/SKIPPED/INFO{}",
        successes(new),
        lost.len(),
        weaker.len(),
        if weaker.is_empty() {
            String::new()
        } else {
            format!(":\n{}", weaker.join("\n"))
        }
    );
    lost
}

/// The checks that show a run really spoke 2026-07-28 with a live server: without
/// them a baseline passes little more than the checks a dead URL passes
/// (`wire-schema-valid` with no message to validate).
const BASELINE_CHECKS: &[&str] = &[
    "server-stateless sep-2575-server-implements-discover",
    "tools-list tools-list",
    "tools-list wire-schema-valid",
    "caching sep-2549-tools-list-caching-hints",
];

fn check_baseline(label: &str, checks: &Checks) -> Result<(), String> {
    let missing: Vec<_> = BASELINE_CHECKS
        .iter()
        .filter(|c| checks.get(**c).map(String::as_str) != Some("SUCCESS"))
        .map(|c| format!("{c}: {}", checks.get(*c).map_or("absent", String::as_str)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the baseline ({label}) itself looks broken, so the comparison would mean nothing: \
         {missing:?}"
    ))
}

/// Every check of the conformance suite that the 2026 build of a server passes through
/// the gateway, its 2025 build (stood in for by the gateway) does not fail; and every
/// upstream passes `input-required-result-validate-input` (invalid `inputResponses`
/// refused) through the gateway, with no WARNING.
#[tokio::test]
async fn conformance_2026_for_a_2025_server_matches_its_2026_build() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    // legacy_server.py under mcp 1.30 over legacy HTTP+SSE, on a port it picks.
    let script = peers.script("legacy_server.py").display().to_string();
    let mut cmd = Command::new(&peers.legacy_python);
    cmd.args([&script, "--transport", "sse"])
        .current_dir(&peers.root);
    let mut sse_server = Proc::spawn("legacy_server.py (mcp 1.30, legacy SSE)", &mut cmd);
    let sse_url = sse_server
        .wait_for_async("the READY line on stdout", READY_LIMIT, |s, l| {
            (s == Stream::Stdout)
                .then(|| l.strip_prefix("READY ").map(str::to_owned))
                .flatten()
        })
        .await;

    let names = ["time2026", "time2025", "legacy2026", "legacy2025sse"];
    let upstreams = [
        stdio_upstream(names[0], &time_stdio_command(&peers)),
        stdio_upstream(names[1], &legacy_time_stdio_command(&peers)),
        stdio_upstream(names[2], &[peers.python.display().to_string(), script]),
        format!(
            "[[upstream]]\nname = \"{}\"\nsse_url = \"{sse_url}\"\n",
            names[3]
        ),
    ];
    let front = Front::start(
        &peers,
        "mcp-server-time and legacy_server.py, 2026 and 2025 builds",
        None,
        &upstreams.concat(),
    )
    .await;
    let urls: Vec<String> = names.iter().map(|n| front.url_of(n)).collect();

    let mut runs = Vec::new();
    for (url, label) in urls.iter().zip([
        "mcp-server-time 2026.10.19 (mcp 2.3, stdio)",
        "mcp-server-time 2026.6.4 (mcp 1.30, stdio)",
        "legacy_server.py (mcp 2.3, stdio)",
        "legacy_server.py (mcp 1.30, legacy SSE)",
    ]) {
        match conformance_2026(&peers, url, label).await {
            Ok(checks) => runs.push(checks),
            Err(e) => panic!("{e}\n{}", front.tail()),
        }
    }
    let mut failures = Vec::new();
    // Invalid `inputResponses` (a number, `null`) are a protocol error whatever the
    // upstream: the gateway answers them as the revision says, never a complete result.
    for (checks, label) in runs.iter().zip(&names) {
        let weak: Vec<String> = checks
            .iter()
            .filter(|(c, _)| c.starts_with("input-required-result-validate-input "))
            .filter(|(_, s)| *s != "SUCCESS")
            .map(|(c, s)| format!("  {c}: {s}"))
            .collect();
        let ran = checks
            .keys()
            .any(|c| c.starts_with("input-required-result-validate-input "));
        if !ran || !weak.is_empty() {
            failures.push(format!(
                "{label} through the gateway: input-required-result-validate-input {}:\n{}",
                if ran {
                    "is not a success"
                } else {
                    "did not run"
                },
                weak.join("\n")
            ));
        }
    }
    for (pair, new, old, new_label) in [
        (
            "mcp-server-time over stdio",
            &runs[0],
            &runs[1],
            "mcp-server-time 2026.10.19",
        ),
        (
            "legacy_server.py, stdio (2026) vs legacy SSE (2025)",
            &runs[2],
            &runs[3],
            "legacy_server.py under mcp 2.3",
        ),
    ] {
        if let Err(e) = check_baseline(new_label, new) {
            failures.push(e);
        }
        let lost = compare(pair, new, old);
        if !lost.is_empty() {
            failures.push(format!(
                "{pair}: {} checks the 2026 build passes through the gateway fail for the \
                 2025 build:\n{}",
                lost.len(),
                lost.join("\n")
            ));
        }
    }
    front.gateway.stop().await;
    drop(sse_server);
    assert!(
        failures.is_empty(),
        "a 2026-07-28 client gets less from a 2025 server through the gateway than from its \
         2026 build:\n{}",
        failures.join("\n")
    );
    eprintln!("[conformance-2026] done in {:.1?}", t0.elapsed());
}

/// The Python client pinned to 2026-07-28 calls the 2025 build of mcp-server-time
/// through the gateway as it calls its 2026 build, and sees the same tools.
#[tokio::test]
async fn python_client_2026_calls_a_2025_server() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let names = ["time2026", "time2025"];
    let upstreams = [
        stdio_upstream(names[0], &time_stdio_command(&peers)),
        stdio_upstream(names[1], &legacy_time_stdio_command(&peers)),
    ];
    let front = Front::start(
        &peers,
        "mcp-server-time, 2026 and 2025",
        None,
        &upstreams.concat(),
    )
    .await;
    let urls: Vec<String> = names.iter().map(|n| front.url_of(n)).collect();
    let args = [
        "--mode",
        "2026-07-28",
        "--call",
        "get_current_time",
        "--args",
        r#"{"timezone":"UTC"}"#,
    ];
    // The same client against the 2026 build first: the baseline the 2025 build must match.
    let mut summaries = Vec::new();
    for (url, build) in urls.iter().zip(["2026 build", "2025 build"]) {
        let summary = run_client(&peers, ClientKind::Python, Target::Streamable(url), &args)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "py_client --mode 2026-07-28 FAILED against the {build} of \
                     mcp-server-time through the gateway:\n{e}\n{}",
                    front.tail()
                )
            });
        // Both builds answer with the time as JSON text; only the 2026 build adds it as
        // structuredContent too.
        let call = &summary["call"];
        let time: Value = serde_json::from_str(call["text"].as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{build}: the result text is not JSON ({e}): {summary}"));
        eprintln!(
            "[py_client 2026-07-28] {build}: protocol {}, negotiation {}, tools {}, call {time}",
            summary["protocol_version"], summary["negotiation"], summary["tools"],
        );
        assert_eq!(
            summary["protocol_version"], "2026-07-28",
            "{build}: {summary}"
        );
        assert_eq!(call["is_error"], false, "{build}: {summary}");
        assert_eq!(time["timezone"], "UTC", "{build}: {summary}");
        summaries.push(summary);
    }
    front.gateway.stop().await;
    let diffs = fact_diffs(&["tools"], &summaries[0], &summaries[1]);
    assert!(
        diffs.is_empty(),
        "the 2025 build lists other tools than the 2026 build (first: 2026, second: 2025):\n{}",
        diffs.join("\n")
    );
}
