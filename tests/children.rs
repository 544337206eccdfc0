//! Whole process trees of stdio children: each child leads a process group,
//! and the whole group ends (SIGTERM, then SIGKILL after the grace) on
//! DELETE, idle reaping, a crash, the gateway's shutdown, and a `kill -9` of
//! the gateway (through the guardian process `serve` starts). The children
//! are `sh -c` wrappers that start a grandchild in the background, as
//! wrappers such as `npx` and `uvx` do.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use support::clients::{open_session, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::{Proc, Stream, alive, cmdline, descendants, endpoint_url, wait_gone};

use crate::support;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"children-test","version":"1"}}}"#;
/// Bound on every wait.
const BOUND: Duration = Duration::from_secs(20);

/// The gateway's bundled demo server, behind `sh -c`: the shell writes its
/// pid and its background grandchild's (a `sleep` that ignores SIGTERM) to
/// `pids`, then becomes the server.
fn wrapper(pids: &Path) -> mcp_ui_model::config::UpstreamConfig {
    let script = format!(
        "echo $$ > {f}; (trap '' TERM; exec sleep 300) & echo $! >> {f}; exec {gw} demo-server",
        f = pids.display(),
        gw = env!("CARGO_BIN_EXE_mcp-ui-gateway"),
    );
    gw::stdio("kid", "sh", &["-c", &script])
}

/// The pids a wrapper wrote: itself and its grandchild, both running.
async fn read_pids(pids: &Path) -> Vec<u32> {
    let found = support::clients::wait_until(BOUND, || {
        let text = std::fs::read_to_string(pids).ok()?;
        let v: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        (v.len() == 2).then_some(v)
    })
    .await
    .expect("the wrapper wrote its pids");
    assert!(found.iter().all(|&p| alive(p)), "{found:?}");
    found
}

/// Waits for `pids` to be gone; how long it took.
async fn gone(pids: Vec<u32>, what: &str) -> Duration {
    let started = Instant::now();
    let left = tokio::task::spawn_blocking(move || wait_gone(pids, BOUND))
        .await
        .unwrap();
    if !left.is_empty() {
        support::process::signal("KILL", &left);
        panic!("{what}: {left:?} still running after {BOUND:?} (killed now)");
    }
    started.elapsed()
}

#[tokio::test]
async fn deleting_a_session_ends_its_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // A session that owns its child (`sessions = "client"`).
    let g = TestGateway::start(vec![gw::per_client(wrapper(&pids))]).await;
    let sid = open_session(&g.url(), "children-test").await;
    let kids = read_pids(&pids).await;
    let started = Instant::now();
    let (status, _, _) =
        request_raw(Method::DELETE, &g.url(), &[("mcp-session-id", &sid)], "").await;
    assert_eq!(status, StatusCode::OK);
    gone(kids, "after DELETE").await;
    let took = started.elapsed();
    eprintln!("group ignoring SIGTERM ended {took:?} after DELETE");
    // The grandchild ignores SIGTERM: it goes at the SIGKILL after the grace.
    assert!(took < Duration::from_secs(10), "{took:?}");
    let freed = support::clients::wait_until(BOUND, || {
        (g.gateway.upstreams.children.running() == 0).then_some(())
    })
    .await;
    assert!(freed.is_some(), "the child's place was not given back");
}

/// A connection idle beyond its time ends with its whole process group,
/// whether a session owns it or the sessions share it; the session goes on
/// on a new child at its next request (claude-code#46533: hosts never start
/// over by themselves).
#[tokio::test]
async fn an_idle_session_is_reaped_with_its_whole_process_group() {
    for per_client in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let mut config = gw::test_config();
        config.upstreams = vec![match per_client {
            true => gw::per_client(wrapper(&pids)),
            false => wrapper(&pids),
        }];
        config.limits.session_idle_secs = 1;
        config.limits.session_reap_interval_secs = 1;
        let g = TestGateway::start_with(config).await;
        let sid = open_session(&g.url(), "children-test").await;
        if !per_client {
            // A shared connection starts at the first need of one.
            let (status, _, _) = post_json(
                &g.url(),
                &[("mcp-session-id", &sid)],
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            )
            .await;
            assert_eq!(status, StatusCode::OK);
        }
        let kids = read_pids(&pids).await;
        std::fs::remove_file(&pids).unwrap();
        gone(kids, "after idle reaping").await;
        let (status, _, body) = post_json(
            &g.url(),
            &[("mcp-session-id", &sid)],
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let again = read_pids(&pids).await;
        assert_eq!(again.len(), 2, "a new child, per_client = {per_client}");
    }
}

#[tokio::test]
async fn a_crashing_child_leaves_no_grandchild_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // A grandchild that would stop at SIGTERM, and a child that exits 3 at
    // its first message.
    let script = format!(
        "echo $$ > {f}; sleep 300 & echo $! >> {f}; read l; exit 3",
        f = pids.display()
    );
    let g = TestGateway::start(vec![gw::stdio("kid", "sh", &["-c", &script])]).await;
    let (status, _, body) = post_json(&g.url(), &[], INIT).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("exit status: 3"), "{text}");
    let text = std::fs::read_to_string(&pids).unwrap();
    let kids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(kids.len(), 2, "{text}");
    let took = gone(kids, "after the crash").await;
    eprintln!("grandchild of a crashed child gone {took:?} after the error");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn shutdown_ends_every_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let g = TestGateway::start(vec![wrapper(&pids)]).await;
    open_session(&g.url(), "children-test").await;
    let kids = read_pids(&pids).await;
    g.shutdown().await;
    // Ended by the shutdown itself, not after it.
    let left: Vec<u32> = kids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "{left:?} outlived the shutdown");
}

/// The real binary, SIGKILLed with a session open on a child that does not
/// stop at the end of its input (the shell goes on to a `sleep`) and ignores
/// SIGTERM, and a grandchild: the guardian ends them all.
#[tokio::test]
async fn a_killed_gateway_leaves_no_children() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "echo $$ > {f}; trap '' TERM; sleep 300 & echo $! >> {f}; {gw} demo-server; sleep 300",
        f = pids.display(),
        gw = env!("CARGO_BIN_EXE_mcp-ui-gateway"),
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--name", "kid"])
        .args(["--", "sh", "-c", &script])
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("its endpoint", BOUND, |stream, line| {
        endpoint_url(line).filter(|_| stream == Stream::Stdout)
    });
    open_session(&url, "children-test").await;
    let kids = read_pids(&pids).await;
    let tree: Vec<u32> = descendants(gateway.pid)
        .into_iter()
        .filter(|&p| !cmdline(p).ends_with(" guard-children"))
        .collect();
    assert!(tree.len() >= 3, "wrapper, server and grandchild: {tree:?}");
    assert!(
        kids.iter().all(|k| tree.contains(k)),
        "{kids:?} in {tree:?}"
    );

    assert!(support::process::signal("KILL", &[gateway.pid]));
    let status = gateway.wait_exit(BOUND).expect("killed");
    assert!(!status.success());
    let took = gone(tree, "after kill -9 of the gateway").await;
    eprintln!(
        "{} processes gone {took:?} after kill -9 of the gateway",
        kids.len() + 1
    );
    // SIGTERM is ignored: they go at the guardian's SIGKILL after the grace.
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// The stdio child the startup probe starts (to compare the overlays with
/// the tools) is ended by the probe once it has listed them: the log says
/// so at info level, even when its group outlives SIGTERM, and never reads
/// like a crash.
#[tokio::test]
async fn the_startup_probe_says_it_ended_the_process_it_started() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("overlays")).unwrap();
    std::fs::write(
        dir.path().join("overlays/kid.toml"),
        "[tools.add_task]\ntitle = \"Add a task\"\n",
    )
    .unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "echo $$ > {f}; (trap '' TERM; exec sleep 300) & echo $! >> {f}; exec {gw} demo-server",
        f = pids.display(),
        gw = env!("CARGO_BIN_EXE_mcp-ui-gateway"),
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--name", "kid"])
        .args(["--", "sh", "-c", &script])
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let kids = read_pids(&pids).await;
    gateway.wait_for("the probe's end", BOUND, |_, line| {
        line.contains("the startup probe ended the stdio upstream it started")
            .then_some(())
    });
    gone(kids, "the probe's child").await;
    assert!(support::process::signal("TERM", &[gateway.pid]));
    let (_, out, err) = gateway.finish(BOUND).expect("the gateway exits");
    let log = format!("{out}{err}");
    let probe_line = log
        .lines()
        .find(|l| l.contains("the startup probe ended"))
        .unwrap();
    assert!(
        probe_line.contains("INFO") && probe_line.contains("outlived SIGTERM"),
        "{probe_line}"
    );
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("stdio upstream"))
        .collect();
    assert!(warned.is_empty(), "{warned:?}\n{log}");
}
