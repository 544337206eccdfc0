//! The load: calls started at a fixed rate round-robin over the sessions,
//! at most [`MAX_IN_FLIGHT`] at once and one per session, cycling through
//! every kind of call (`tools/list`, `ping`, short GET streams, small and
//! large `tools/call`s, `resources/read` of the widget), each checked.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::mcp::{
    CALL_TIMEOUT, HttpClient, Mount, Session, call, open_session, show_tasks_uri, tool_title,
};
use crate::stats::{Stats, kind_of};
use crate::streams::short_stream;

/// One op of each kind but the short GET stream (see `one_op`): tools/list,
/// ping, a small call, a large call, and a widget read (demo) or a second
/// large call (stdio).
const PRIMING_OPS: [u64; 5] = [0, 5, 8, 13, 16];
/// In-flight calls at most.
pub const MAX_IN_FLIGHT: usize = 128;
/// Sessions opened concurrently at start.
const OPEN_CONCURRENCY: usize = 16;

/// Opens `count` sessions on the gateway at `gateway_addr`, `stdio` of them
/// (spread evenly) on the `echo` mount, the rest on `demo`; those that fail
/// count as errors.
pub async fn open_sessions(
    client: &HttpClient,
    gateway_addr: SocketAddr,
    count: usize,
    stdio: usize,
    stats: &Stats,
) -> anyhow::Result<Vec<Arc<Session>>> {
    let started = Instant::now();
    let demo_url = format!("http://{gateway_addr}/demo/mcp");
    let echo_url = format!("http://{gateway_addr}/echo/mcp");
    let gate = Arc::new(Semaphore::new(OPEN_CONCURRENCY));
    let mut opening = Vec::with_capacity(count);
    for i in 0..count {
        // Spread the stdio sessions evenly.
        let echo = count
            .checked_div(stdio)
            .is_some_and(|every| i.is_multiple_of(every.max(1)));
        let (mount, url) = if echo {
            (Mount::Echo, echo_url.clone())
        } else {
            (Mount::Demo, demo_url.clone())
        };
        let client = client.clone();
        let gate = gate.clone();
        opening.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            open_session(&client, mount, url).await
        }));
    }
    let mut sessions = Vec::with_capacity(count);
    for task in opening {
        match task.await? {
            Ok(session) => sessions.push(Arc::new(session)),
            Err(e) => stats.error("open".into(), format!("{e:#}")),
        }
    }
    let echo_count = sessions.iter().filter(|s| s.mount == Mount::Echo).count();
    println!(
        "soak: {} sessions open ({} demo over HTTP, {} echo over stdio) in {:.1} s",
        sessions.len(),
        sessions.len() - echo_count,
        echo_count,
        started.elapsed().as_secs_f64()
    );
    Ok(sessions)
}

/// Every session does every kind of call once before the clock starts,
/// so the buffers a kind of call grows per session (a 32 KB line through
/// a stdio child, say) are in the starting RSS: what the run then measures
/// is growth over time, not the first use of a call kind.
pub async fn prime(
    client: &HttpClient,
    sessions: &[Arc<Session>],
    stats: &Arc<Stats>,
    widget_uri: &Arc<Mutex<String>>,
) {
    let primed = Instant::now();
    {
        let gate = Arc::new(tokio::sync::Semaphore::new(64));
        let mut tasks = tokio::task::JoinSet::new();
        for session in sessions {
            for op in PRIMING_OPS {
                let Ok(permit) = gate.clone().acquire_owned().await else {
                    break;
                };
                let (client, session, stats, uri) = (
                    client.clone(),
                    session.clone(),
                    stats.clone(),
                    widget_uri.clone(),
                );
                tasks.spawn(async move {
                    let _permit = permit;
                    let (name, result) = one_op(&client, &session, op, &uri).await;
                    stats.op(name);
                    if let Err(e) = result {
                        stats.error(kind_of(name, &e), format!("{e:#}"));
                    }
                });
            }
        }
        while tasks.join_next().await.is_some() {}
    }
    println!(
        "soak: every session made each kind of call once in {:.1} s",
        primed.elapsed().as_secs_f64()
    );
}

pub async fn drive(
    client: HttpClient,
    sessions: Vec<Arc<Session>>,
    stats: Arc<Stats>,
    stop: tokio_util::sync::CancellationToken,
    uri: Arc<Mutex<String>>,
    rate: u64,
    stream_every: usize,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        while tasks.try_join_next().is_some() {}
        let index = (n as usize) % sessions.len();
        let session = sessions[index].clone();
        // A session holding its long-lived GET stream gets no second one.
        let holds_stream = index.is_multiple_of(stream_every);
        // The op cycles independently of the session, so every session sees
        // every kind of call over time.
        let op = (n / sessions.len() as u64 + n) % 20;
        n += 1;
        let Ok(busy) = session.busy.clone().try_lock_owned() else {
            stats.skipped_busy.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        let (client, stats, uri) = (client.clone(), stats.clone(), uri.clone());
        tasks.spawn(async move {
            let _permit = permit;
            let _busy = busy;
            let op = if holds_stream && op == 7 { 5 } else { op };
            let (name, result) = one_op(&client, &session, op, &uri).await;
            stats.op(name);
            if let Err(e) = result {
                stats.error(kind_of(name, &e), format!("{e:#}"));
            }
        });
    }
    while tokio::time::timeout(CALL_TIMEOUT * 2, tasks.join_next())
        .await
        .ok()
        .flatten()
        .is_some()
    {}
}

pub async fn one_op(
    client: &HttpClient,
    session: &Session,
    op: u64,
    uri: &Mutex<String>,
) -> (&'static str, anyhow::Result<()>) {
    match (session.mount, op) {
        (_, 0..=4) => ("tools/list", tools_list(client, session).await),
        (_, 5..=6) => (
            "ping",
            call(client, session, "ping", json!({})).await.map(drop),
        ),
        (_, 7) => ("get-stream", short_stream(client, session).await),
        (Mount::Demo, 8..=12) => ("call-small", demo_small(client, session).await),
        (Mount::Demo, 13..=15) => ("call-large", demo_large(client, session).await),
        (Mount::Demo, _) => {
            let uri = uri.lock().unwrap().clone();
            ("resources/read", read_widget(client, session, &uri).await)
        }
        (Mount::Echo, 8..=12) => ("call-small", echo_add(client, session).await),
        (Mount::Echo, _) => ("call-large", echo_large(client, session).await),
    }
}

async fn tools_list(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let result = call(client, session, "tools/list", json!({})).await?;
    match session.mount {
        Mount::Demo => show_tasks_uri(&result).map(drop),
        Mount::Echo => {
            if tool_title(&result, "echo").is_none()
                && !result["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["name"] == "echo"))
            {
                bail!("check: the echo upstream lists no echo tool");
            }
            Ok(())
        }
    }
}

async fn demo_small(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let params = json!({ "name": "list_tasks", "arguments": {} });
    let result = call(client, session, "tools/call", params).await?;
    if !result
        .pointer("/structuredContent/tasks")
        .is_some_and(Value::is_array)
    {
        bail!("check: list_tasks has no structuredContent.tasks: {result}");
    }
    Ok(())
}

/// A gateway-answered render call with a 200-task argument (~12 KB).
async fn demo_large(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let tasks: Vec<Value> = (1..=200)
        .map(|i| json!({ "id": i, "title": format!("Soak task number {i} with a longer title"), "done": i % 3 == 0 }))
        .collect();
    let params = json!({ "name": "show_tasks", "arguments": { "tasks": tasks } });
    let result = call(client, session, "tools/call", params).await?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        bail!("check: show_tasks answered isError: {result}");
    }
    if result
        .pointer("/structuredContent/tasks")
        .and_then(Value::as_array)
        .map(Vec::len)
        != Some(200)
    {
        bail!("check: show_tasks did not return the 200 tasks");
    }
    Ok(())
}

async fn read_widget(client: &HttpClient, session: &Session, uri: &str) -> anyhow::Result<()> {
    let result = call(client, session, "resources/read", json!({ "uri": uri })).await?;
    let content = &result["contents"][0];
    if !content["text"]
        .as_str()
        .is_some_and(|t| t.contains("<html") || t.contains("<!doctype") || t.contains("<!DOCTYPE"))
    {
        bail!("check: resources/read of {uri} returned no HTML");
    }
    Ok(())
}

async fn echo_add(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let params = json!({ "name": "add", "arguments": { "a": 20, "b": 22 } });
    let result = call(client, session, "tools/call", params).await?;
    if !result.to_string().contains("42") {
        bail!("check: add(20, 22) did not answer 42: {result}");
    }
    Ok(())
}

/// A 32 KB echo through a stdio child.
async fn echo_large(client: &HttpClient, session: &Session) -> anyhow::Result<()> {
    let text: String = "soak-0123456789abcdef-".repeat(32 * 1024 / 22);
    let params = json!({ "name": "echo", "arguments": { "text": text } });
    let result = call(client, session, "tools/call", params).await?;
    if result.pointer("/content/0/text").and_then(Value::as_str) != Some(text.as_str()) {
        bail!("check: echo did not return its 32 KB text");
    }
    Ok(())
}
