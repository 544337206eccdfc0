//! The same exercise for every client and upstream: list the fixture's tools,
//! call each (both directions of JSON-RPC: progress, logging, sampling,
//! elicitation, roots) and read its resources, asserting on every answer.

#![allow(deprecated)] // rmcp marks logging (asserted on here) deprecated by SEP-2577

use std::time::Duration;

use rmcp::model::{ProtocolVersion, ReadResourceRequestParams};
use serde_json::{Value, json};

use super::clients::{
    self, Client, Era, ROOT_NAME, ROOT_URI, SAMPLING_REPLY, call, call_text, negotiated_version,
};
use super::fixture::{LOGGER, RESOURCES};

pub const NOTIFY_WAIT: Duration = Duration::from_secs(5);
pub const EVENT_WAIT: Duration = Duration::from_secs(10);

pub const FIXTURE_TOOLS: [&str; 8] = [
    "add", "echo", "elicit", "log", "progress", "roots", "sample", "slow",
];

pub fn expected_version(era: &Era) -> ProtocolVersion {
    match era {
        Era::Modern => ProtocolVersion::V_2026_07_28,
        Era::Initialize(version) => version.clone(),
        // Against a full fixture, Auto's discover succeeds.
        Era::Auto => ProtocolVersion::V_2026_07_28,
    }
}

/// Calls every fixture tool and reads both resources.
pub async fn exercise_fixture(client: &Client, label: &str) -> anyhow::Result<()> {
    let recorder = client.service().recorder.clone();

    let mut tools: Vec<String> = client
        .list_all_tools()
        .await?
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    tools.sort();
    assert_eq!(tools, FIXTURE_TOOLS, "{label}: tools/list");

    assert_eq!(
        call_text(client, "echo", json!({ "text": "hi ✓" })).await?,
        "hi ✓",
        "{label}: echo"
    );

    let sum = call(client, "add", json!({ "a": 2, "b": 3 })).await?;
    assert_eq!(
        sum.structured_content,
        Some(json!({ "sum": 5 })),
        "{label}: add"
    );

    assert_eq!(
        call_text(client, "progress", json!({ "steps": 3 })).await?,
        "completed 3 steps",
        "{label}: progress"
    );
    let progress = recorder.wait_for_progress(3, NOTIFY_WAIT).await;
    let steps: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0], "{label}: progress notifications");
    assert!(
        progress
            .windows(2)
            .all(|w| w[0].progress_token == w[1].progress_token),
        "{label}: one progress token per call"
    );

    assert_eq!(
        call_text(client, "sample", json!({ "prompt": "Say something" })).await?,
        SAMPLING_REPLY,
        "{label}: sample"
    );
    let elicited: Value = serde_json::from_str(
        &call_text(client, "elicit", json!({ "message": "Continue?" })).await?,
    )?;
    assert_eq!(
        elicited,
        json!({ "action": "accept", "content": clients::elicitation_content() }),
        "{label}: elicit"
    );
    let roots: Value = serde_json::from_str(&call_text(client, "roots", json!({})).await?)?;
    assert_eq!(
        roots,
        json!({ "roots": [{ "uri": ROOT_URI, "name": ROOT_NAME }] }),
        "{label}: roots"
    );
    assert_eq!(
        recorder.requests(),
        ["sampling/createMessage", "elicitation/create", "roots/list"],
        "{label}: client handler saw each request once"
    );

    assert_eq!(
        call_text(client, "log", json!({ "message": "hello log" })).await?,
        "logged",
        "{label}: log"
    );
    let logs = recorder.wait_for_logs(1, NOTIFY_WAIT).await;
    assert_eq!(logs.len(), 1, "{label}: logging notifications {logs:?}");
    assert_eq!(logs[0].data, json!("hello log"), "{label}: log data");
    assert_eq!(logs[0].logger.as_deref(), Some(LOGGER), "{label}: logger");

    assert_eq!(
        call_text(client, "slow", json!({ "ms": 20 })).await?,
        "slept 20 ms",
        "{label}: slow"
    );

    let resources = client.list_all_resources().await?;
    assert_eq!(resources.len(), RESOURCES.len(), "{label}: resources/list");
    let (uri, _, text) = RESOURCES[0];
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    let read = serde_json::to_value(&read.contents)?;
    assert_eq!(read[0]["text"], text, "{label}: resources/read");
    Ok(())
}

pub async fn check_client(client: Client, era: &Era, label: &str) -> anyhow::Result<()> {
    assert_eq!(
        negotiated_version(&client),
        Some(expected_version(era)),
        "{label}: negotiated version"
    );
    exercise_fixture(&client, label).await?;
    client.cancel().await?;
    Ok(())
}
