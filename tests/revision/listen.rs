//! `subscriptions/listen` for 2025 upstreams: the gateway acknowledges what it honors,
//! then delivers the upstream's list changes, the overlays' reloads and the updates of
//! subscribed resources, each tagged with the subscription's id, and nothing a
//! subscription did not ask for.

use std::path::Path;
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use super::{
    Findings, Front, Kind, META_SUBSCRIPTION, Servers, all_caps, ask, ask_method, post, request,
    revision_headers,
};
use crate::support::clients::{SseReader, open_sse};
use crate::support::peers::setup;

/// A notification the gateway must deliver within this.
const DELIVERY: Duration = Duration::from_secs(10);
/// How long a stream is watched for what must not arrive.
const QUIET: Duration = Duration::from_millis(1500);
const COUNTER: &str = "legacy://counter";

/// An open subscription: its stream and everything it delivered.
struct Listen {
    id: Value,
    reader: SseReader,
    seen: Vec<Value>,
}

impl Listen {
    /// Opens one asking for `notifications`; it and the acknowledgement's params.
    async fn open(url: &str, id: Value, notifications: Value) -> Result<(Listen, Value), String> {
        let body = request(
            id.clone(),
            "subscriptions/listen",
            json!({"notifications": notifications}),
            json!({}),
        );
        let mut headers = revision_headers(&body);
        headers.push(("content-type", "application/json".into()));
        headers.push(("accept", "application/json, text/event-stream".into()));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (status, response_headers, reader) =
            open_sse(Method::POST, url, &headers, body.to_string())
                .await
                .map_err(|e| format!("{e:#}"))?;
        let media = response_headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let mut listen = Listen {
            id,
            reader,
            seen: Vec::new(),
        };
        if status != StatusCode::OK || !media.starts_with("text/event-stream") {
            // The reader parses SSE only: the same request again, for the answer's text.
            let again = post(url, &headers, &body).await;
            let said = again.map_or_else(|e| e, |a| a.to_string());
            return Err(format!("not an SSE stream ({media:?}): {said}"));
        }
        let ack = listen.next(DELIVERY).await?;
        listen.seen.clear();
        if ack["method"] != "notifications/subscriptions/acknowledged" {
            return Err(format!(
                "the first message is not the acknowledgement: {ack}"
            ));
        }
        if ack["params"]["_meta"][META_SUBSCRIPTION] != listen.id {
            return Err(format!(
                "the acknowledgement is not tagged with the listen id {}: {ack}",
                listen.id
            ));
        }
        let honored = ack["params"]["notifications"].clone();
        Ok((listen, honored))
    }

    /// The next message, recorded.
    async fn next(&mut self, limit: Duration) -> Result<Value, String> {
        let event = self
            .reader
            .next_event(limit)
            .await
            .map_err(|e| format!("{e:#}"))?
            .ok_or("the stream ended")?;
        let message = event.json().map_err(|e| format!("{e:#}"))?;
        self.seen.push(message.clone());
        Ok(message)
    }

    /// Waits for the next `method` (other messages are recorded too).
    async fn wait_for(&mut self, method: &str) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + DELIVERY;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self.next(left).await.map_err(|e| {
                format!(
                    "no {method} ({e}); the stream delivered {:?}",
                    self.methods()
                )
            })?;
            if message["method"] == method {
                return Ok(message);
            }
        }
    }

    /// Records whatever arrives within `window`.
    async fn drain(&mut self, window: Duration) {
        let deadline = tokio::time::Instant::now() + window;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || self.next(left).await.is_err() {
                return;
            }
        }
    }

    fn methods(&self) -> Vec<String> {
        self.seen
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("(a response)").to_owned())
            .collect()
    }

    /// `Err` naming what it delivered that is not among `allowed`, or untagged.
    fn only(&self, allowed: &[&str]) -> Result<(), String> {
        let wrong: Vec<&Value> = self
            .seen
            .iter()
            .filter(|m| {
                !m["method"].as_str().is_some_and(|x| allowed.contains(&x))
                    || m["params"]["_meta"][META_SUBSCRIPTION] != self.id
            })
            .collect();
        match wrong.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "delivered what it did not ask for, or untagged with {}: {wrong:?}",
                self.id
            )),
        }
    }
}

/// Replaces `<mount>.toml` in `dir` atomically, as editors save.
fn write_overlay(dir: &Path, mount: &str, title: &str) {
    let file = dir.join(format!("{mount}.toml"));
    let temp = dir.join(format!(".{mount}.toml.saving"));
    std::fs::write(&temp, format!("[tools.get_time]\ntitle = \"{title}\"\n")).unwrap();
    std::fs::rename(&temp, &file).unwrap();
}

/// `subscriptions/listen` on legacy_server.py behind the gateway over stdio, legacy SSE
/// and streamable HTTP: the stream opens with `notifications/subscriptions/acknowledged`
/// tagged with the listen id and naming what is honored (the tools' changes and the
/// subscribed resource); a tool that adds a tool (`add_tool`, another request) brings
/// `notifications/tools/list_changed`, one that changes the resource (`touch_counter`)
/// `notifications/resources/updated` for it, and an overlay written into the gateway's
/// overlay directory `notifications/tools/list_changed` again, each tagged with the
/// subscription id. A subscription asking only for prompt changes (which the upstream
/// does not announce) gets none of them; none gets a type it did not ask for; a listen
/// without `params.notifications` is 400 `-32602`.
#[tokio::test]
async fn listen_delivers_list_changes_on_every_upstream_kind() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio, Kind::Sse, Kind::Http];
    let overlays = tempfile::tempdir().unwrap();
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::of(&peers, &servers, &kinds, Some(overlays.path()), "").await;
    let mut findings = Findings::default();
    // Per kind: the subscription to tools and the counter, and the one to prompts only.
    let mut open = Vec::new();
    for kind in kinds {
        let url = front.url(kind);
        let what = kind.label();
        let wanted = json!({"toolsListChanged": true, "resourceSubscriptions": [COUNTER]});
        let id = json!(format!("listen-{}", kind.mount()));
        let Some((mut all, honored)) = findings.note(
            format!("{what}: listen to tools and {COUNTER}"),
            Listen::open(&url, id, wanted.clone()).await,
        ) else {
            continue;
        };
        findings.check(honored == wanted, || {
            format!("{what}: the acknowledgement honors {honored}, not {wanted}")
        });
        let Some((prompts, honored)) = findings.note(
            format!("{what}: listen to prompts only"),
            Listen::open(&url, json!(77), json!({"promptsListChanged": true})).await,
        ) else {
            continue;
        };
        findings.check(
            honored
                .as_object()
                .is_some_and(|h| h.keys().all(|k| k == "promptsListChanged")),
            || format!("{what}: the prompts-only acknowledgement honors {honored}"),
        );
        let tool = format!("added_by_{}", kind.mount());
        // The same capabilities as the listing below: a shared pool keeps
        // one connection (here, one process with its own tools) per set of
        // capabilities its clients declare.
        let call = request(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": tool}}),
            all_caps(),
        );
        findings.note(
            format!("{what}: add_tool"),
            ask(&url, &call).await.and_then(|a| a.ok().map(|_| ())),
        );
        findings.note(
            format!("{what}: tools/list_changed after add_tool"),
            all.wait_for("notifications/tools/list_changed").await,
        );
        let listed = ask_method(&url, 2, "tools/list", json!({})).await;
        findings.note(
            format!("{what}: tools/list after add_tool"),
            listed.and_then(|a| {
                let tools = a.ok()?["tools"].as_array().cloned().unwrap_or_default();
                match tools.iter().any(|t| t["name"] == tool.as_str()) {
                    true => Ok(()),
                    false => Err(format!("{tool} is not listed: {a}")),
                }
            }),
        );
        let call = request(
            3,
            "tools/call",
            json!({"name": "touch_counter", "arguments": {}}),
            json!({}),
        );
        findings.note(
            format!("{what}: touch_counter"),
            ask(&url, &call).await.and_then(|a| a.ok().map(|_| ())),
        );
        let updated = all.wait_for("notifications/resources/updated").await;
        findings.note(
            format!("{what}: resources/updated after touch_counter"),
            updated.and_then(|m| match m["params"]["uri"] == COUNTER {
                true => Ok(()),
                false => Err(format!("for another resource: {m}")),
            }),
        );
        let refused = ask_method(&url, 4, "subscriptions/listen", json!({})).await;
        findings.note(
            format!("{what}: listen without params.notifications"),
            refused.and_then(|a| a.refused(400, -32602, &json!(4)).map(|_| ())),
        );
        open.push((kind, all, prompts));
    }
    // What the upstreams said has arrived; then the overlays change, for every mount.
    for (_, all, prompts) in &mut open {
        all.drain(Duration::from_millis(300)).await;
        prompts.drain(Duration::from_millis(300)).await;
    }
    for kind in kinds {
        write_overlay(overlays.path(), kind.mount(), "Time, overlaid");
    }
    for (kind, all, prompts) in &mut open {
        let what = kind.label();
        findings.note(
            format!("{what}: tools/list_changed after an overlay reload"),
            all.wait_for("notifications/tools/list_changed").await,
        );
        all.drain(QUIET).await;
        prompts.drain(QUIET).await;
        findings.note(
            format!("{what}: the subscription to tools and {COUNTER}"),
            all.only(&[
                "notifications/tools/list_changed",
                "notifications/resources/updated",
            ]),
        );
        findings.note(
            format!("{what}: the subscription to prompts only"),
            prompts.only(&["notifications/prompts/list_changed"]),
        );
    }
    findings.assert_none(&front, "subscriptions/listen for 2025 upstreams");
    drop(open);
    front.gateway.stop().await;
}

/// `legacy_server.py` on `mcp` 2.3 over streamable HTTP, an upstream that speaks
/// 2026-07-28 itself: its own `subscriptions/listen` stream, relayed, lasts past the
/// gateway's `request_timeout_secs` (a subscription is not a request that may hang),
/// and carries the overlays' reloads too, tagged with the subscription's id, since
/// the gateway's rewrite of the tool listing changes with them.
#[tokio::test]
async fn a_2026_upstreams_own_subscription_outlives_requests_and_hears_reloads() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let mut cmd = std::process::Command::new(&peers.python);
    cmd.arg(peers.script("legacy_server.py"))
        .args(["--transport", "streamable-http"])
        .current_dir(&peers.root);
    let mut upstream = super::Proc::spawn("legacy_server.py (mcp 2.3, streamable HTTP)", &mut cmd);
    let url = upstream
        .wait_for_async("the READY line on stdout", super::READY_LIMIT, |s, l| {
            (s == super::Stream::Stdout)
                .then(|| l.strip_prefix("READY ").map(str::to_owned))
                .flatten()
        })
        .await;
    let overlays = tempfile::tempdir().unwrap();
    let tables = format!(
        "[limits]\nrequest_timeout_secs = 2\n\n[[upstream]]\nname = \"native\"\nurl = {}\n\n[[upstream]]\nname = \"other\"\nurl = {}\n",
        Value::from(url.as_str()),
        Value::from(url.as_str())
    );
    let front = Front::start(
        &peers,
        "a 2026-07-28 upstream",
        Some(overlays.path()),
        &tables,
    )
    .await;
    let mut findings = Findings::default();
    let id = json!("native-listen");
    let opened = Listen::open(
        &front.url_of("native"),
        id,
        json!({"toolsListChanged": true}),
    )
    .await;
    if let Some((mut listen, honored)) = findings.note("listen on the 2026-07-28 upstream", opened)
    {
        findings.check(honored["toolsListChanged"] == true, || {
            format!("the upstream's acknowledgement honors {honored}")
        });
        // Longer than request_timeout_secs: the stream must still be open.
        listen.drain(Duration::from_secs(3)).await;
        write_overlay(overlays.path(), "native", "Time, once more");
        findings.note(
            "tools/list_changed after an overlay reload, past the request timeout",
            listen.wait_for("notifications/tools/list_changed").await,
        );
        findings.note(
            "everything tagged with the subscription id",
            listen.only(&["notifications/tools/list_changed"]),
        );
    }
    findings.assert_none(&front, "a 2026-07-28 upstream's own subscription");
    front.gateway.stop().await;
    drop(upstream);
}
