//! Overlay reloads under load: every period `demo.toml` is rewritten,
//! alternately a good edit (a new title, which `tools/list` must then show
//! within [`RELOAD_VISIBLE`]) and a broken one (which must change nothing).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp::{HttpClient, Session, call, show_tasks_uri, tool_title};
use crate::stats::{Stats, kind_of};

/// How long a good overlay edit may take to show in `tools/list`.
const RELOAD_VISIBLE: Duration = Duration::from_secs(4);

#[allow(clippy::too_many_arguments)]
pub async fn reload_loop(
    client: &HttpClient,
    session: &Session,
    stats: &Stats,
    stop: tokio_util::sync::CancellationToken,
    uri: &Mutex<String>,
    path: &Path,
    original: &str,
    period: Duration,
) {
    const TITLE: &str = "title = \"List tasks\"";
    let mut revision = 0u64;
    let mut good = true;
    let mut expected = "List tasks".to_owned();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        revision += 1;
        let text = if good {
            expected = format!("List tasks (revision {revision})");
            original.replacen(TITLE, &format!("title = \"{expected}\""), 1)
        } else {
            // A broken edit: an unterminated table header.
            format!("{original}\n[tools.list_tasks\n")
        };
        if let Err(e) = std::fs::write(path, text) {
            stats.error("reload:write".into(), e.to_string());
            return;
        }
        if good {
            stats.reloads_good.fetch_add(1, Ordering::Relaxed);
        } else {
            stats.reloads_bad.fetch_add(1, Ordering::Relaxed);
        }
        // Watch tools/list: a good edit must show, a broken one must not
        // change what is served.
        let deadline = Instant::now() + RELOAD_VISIBLE;
        let mut seen = None;
        loop {
            match call(client, session, "tools/list", json!({})).await {
                Ok(tools) => {
                    seen = tool_title(&tools, "list_tasks");
                    if let Ok(u) = show_tasks_uri(&tools) {
                        *uri.lock().unwrap() = u;
                    }
                }
                Err(e) => stats.error(kind_of("reload:tools/list", &e), format!("{e:#}")),
            }
            if (good && seen.as_deref() == Some(expected.as_str())) || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let shown = seen.as_deref() == Some(expected.as_str());
        match (good, shown) {
            (true, true) => {
                stats.reloads_seen.fetch_add(1, Ordering::Relaxed);
            }
            (false, true) => {
                stats.reloads_kept.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => stats.error(
                "reload:not-applied".into(),
                format!("revision {revision}: saw {seen:?}"),
            ),
            (false, false) => stats.error(
                "reload:broken-applied".into(),
                format!("revision {revision}: saw {seen:?}"),
            ),
        }
        good = !good;
    }
}
