//! The built-in widgets' scripts run: each compiled document's script under
//! Node (`harness.js`, a document just large enough for it), driven as a
//! host drives it, its content and its messages to the host read back.
//! Node is one of the test suite's peers: missing, these tests fail unless
//! `MCP_UI_SKIP_PEERS=1`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::*;

const HARNESS: &str = include_str!("harness.js");

/// `kind` compiled with the options `view` (TOML), for a tool whose actions
/// never ask first.
fn compiled(kind: Kind, view: &str) -> String {
    let view: View = toml::from_str(view).unwrap();
    let cx = Context {
        tool: Some("list_things"),
        output_schema: None,
        asks: &|_| false,
    };
    compile("demo", "list_things", kind, &view, cx).html
}

/// The widget's content (HTML) and the messages it posted, after `steps`;
/// `None` when Node is missing and the peers may be skipped.
fn run(html: &str, steps: Value) -> Option<(String, Vec<Value>)> {
    let spawned = Command::new("node")
        .args(["-e", HARNESS])
        .env("TZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if std::env::var("MCP_UI_SKIP_PEERS").as_deref() == Ok("1") => {
            eprintln!("SKIPPED: node cannot be started ({e}); MCP_UI_SKIP_PEERS=1");
            return None;
        }
        Err(e) => panic!(
            "node cannot be started ({e}): install the peers (scripts/install-peers.sh) \
             or set MCP_UI_SKIP_PEERS=1"
        ),
    };
    let input = json!({ "html": html, "steps": steps }).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = result["root"].as_str().unwrap_or_default().to_owned();
    let posted = result["posted"].as_array_mut().map(std::mem::take);
    Some((root, posted.unwrap_or_default()))
}

/// The step delivering a tool result with `structured` content.
fn result(structured: Value) -> Value {
    json!({ "message": {
        "method": "ui/notifications/tool-result",
        "params": { "structuredContent": structured }
    } })
}

/// The arguments of the widget's `tools/call` requests, in order.
fn calls(posted: &[Value]) -> Vec<(String, Value)> {
    posted
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| {
            let name = m["params"]["name"].as_str().unwrap_or_default().to_owned();
            (name, m["params"]["arguments"].clone())
        })
        .collect()
}

#[test]
fn action_arguments_resolve_pointers_inside_arrays_and_tables() {
    let html = compiled(
        Kind::List,
        r#"
primary = "name"
refresh = "list_things"
[[actions]]
label = "Forget"
tool = "delete_entities"
arguments = { entityNames = ["/name", "/owner/name"], scope = { id = "/id", tags = ["/tags/0", "fixed"] }, force = true, note = "as written", path = "~/x" }
"#,
    );
    let record = json!({ "id": 7, "name": "Ada", "owner": { "name": "Grace" }, "tags": ["t1"] });
    let steps = json!([
        result(json!({ "things": [record] })),
        { "click": "Forget" },
        { "answer": { "content": [] } },
        // The refresh after it.
        { "answer": { "structuredContent": { "things": [record] } } },
    ]);
    let Some((root, posted)) = run(&html, steps) else {
        return;
    };
    assert_eq!(
        calls(&posted).first(),
        Some(&(
            "delete_entities".to_owned(),
            json!({
                "entityNames": ["Ada", "Grace"],
                "scope": { "id": 7, "tags": ["t1", "fixed"] },
                "force": true,
                "note": "as written",
                "path": "~/x"
            })
        )),
        "{posted:#?}"
    );
    assert_eq!(
        calls(&posted).get(1).map(|c| c.0.as_str()),
        Some("list_things")
    );
    assert!(root.contains("Forget: done."), "{root}");
}

#[test]
fn a_key_value_date_time_follows_the_locale_and_keeps_its_iso_text() {
    let html = compiled(Kind::Kv, "");
    let steps = json!([result(json!({
        "created": "2026-03-04T05:06:07Z",
        "due": "2026-05-01",
        "code": "2026-05-01-x",
        "count": 3
    }))]);
    let Some((root, _)) = run(&html, steps) else {
        return;
    };
    assert!(
        root.contains(
            r#"<time datetime="2026-03-04T05:06:07Z" title="2026-03-04T05:06:07Z">Mar 4, 2026, 5:06"#
        ),
        "{root}"
    );
    assert!(
        root.contains(r#"<time datetime="2026-05-01" title="2026-05-01">May 1, 2026</time>"#),
        "{root}"
    );
    // Not a date: as written.
    assert!(root.contains("<dd>2026-05-01-x</dd>"), "{root}");
}
