//! Overlay directories that go away, become unreadable or hold an oversize
//! widget asset: the last good overlays stay in force.

use super::*;

#[tokio::test]
async fn overlay_directory_deleted_and_restored_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    g.gateway.live.watch(stop).unwrap();
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let with_ui = || async {
        let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
        assert_eq!(status, StatusCode::OK);
        body_json(&body)["result"]["tools"]
            .as_array()
            .expect("a tools/list result")
            .iter()
            .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null())
    };
    assert!(with_ui().await, "overlays in force at start");
    let generation = g.gateway.live.generation();
    let (_, failed_before) = g.gateway.live.reload_counts();
    std::fs::remove_dir_all(&overlays).unwrap();
    // The removal is noticed as a failed reload: the last good overlays stay
    // in force and the session keeps its UI.
    let noticed = support::clients::wait_until(BOUND, || {
        (g.gateway.live.reload_counts().1 > failed_before).then_some(())
    })
    .await;
    assert!(noticed.is_some(), "the directory's removal was not noticed");
    assert_eq!(g.gateway.live.generation(), generation);
    assert!(with_ui().await, "the last good overlays stay in force");
    // The directory coming back, edited, is noticed and applies.
    copy_dir(&source, &overlays);
    let demo = overlays.join("demo.toml");
    let edited = std::fs::read_to_string(&demo)
        .unwrap()
        .replace("title = \"Add a task\"", "title = \"Add one task\"");
    std::fs::write(&demo, edited).unwrap();
    let deadline = Instant::now() + BOUND;
    let mut applied = false;
    while Instant::now() < deadline {
        let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        let (_, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
        if String::from_utf8_lossy(&body).contains("Add one task") {
            applied = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        applied,
        "overlays did not reload after the directory came back"
    );
    assert_good_serves_at(&url).await;
}

/// An overlay directory that can no longer be read (here: replaced by a
/// plain file, which `read_dir` refuses even to root) keeps the last good
/// overlays in force, and the failure is counted.
#[tokio::test]
async fn overlay_directory_unreadable_keeps_the_last_good_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let live = &g.gateway.live;
    let generation = live.generation();
    let (_, failed_before) = live.reload_counts();
    std::fs::remove_dir_all(&overlays).unwrap();
    std::fs::write(&overlays, "not a directory").unwrap();
    let outcome = live.reload();
    let errors = outcome.expect_err("an unreadable directory is a failed reload");
    assert!(errors.to_string().contains("overlays"), "{errors}");
    assert_eq!(live.generation(), generation);
    assert_eq!(live.reload_counts().1, failed_before + 1);
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK);
    let with_ui = body_json(&body)["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null());
    assert!(with_ui, "the last good overlays stay in force");
}

/// A copy of the bundled overlays whose widget stylesheet is now a 300 MB
/// sparse file (no disk space used), over the default 16 MiB
/// `limits.max_widget_bytes`.
fn poison_stylesheet(overlays: &std::path::Path) -> std::path::PathBuf {
    let css = overlays.join("widgets/task-board/style.css");
    std::fs::File::create(&css)
        .unwrap()
        .set_len(300_000_000)
        .unwrap();
    css
}

#[tokio::test]
async fn an_oversize_widget_asset_is_refused_and_the_last_good_overlays_stay() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    let mut config = gw::test_config();
    config.overlays = overlays.clone();
    config.upstreams = vec![gw::demo_stdio("demo")];
    let g = TestGateway::start_with(config).await;
    let live = &g.gateway.live;
    let generation = live.generation();
    poison_stylesheet(&overlays);
    let started = Instant::now();
    let errors = live
        .reload()
        .expect_err("an oversize asset fails the reload");
    let took = started.elapsed();
    let e = errors.to_string();
    assert!(
        e.contains("widgets/task-board/index.html")
            && e.contains("stylesheet href \"style.css\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)"),
        "{e}"
    );
    // Refused from its size: never read.
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(live.generation(), generation);
    let url = g.url();
    let (_, headers, _) = post_json(&url, &[], INIT).await;
    let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = post_json(&url, &[("mcp-session-id", &sid)], list).await;
    assert_eq!(status, StatusCode::OK);
    let with_ui = body_json(&body)["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .any(|t| !t["_meta"]["ui"]["resourceUri"].is_null());
    assert!(with_ui, "the last good overlays stay in force");
}

#[tokio::test]
async fn an_oversize_widget_asset_stops_the_start_naming_file_size_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays");
    copy_dir(&source, &overlays);
    poison_stylesheet(&overlays);
    let closed = support::process::ClosedPort::new();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--config", "/dev/null", "--listen", "127.0.0.1:0"])
        .args(["--name", "demo", "--upstream"])
        .arg(format!("http://127.0.0.1:{}/mcp", closed.port()))
        .arg("--overlays")
        .arg(&overlays)
        .current_dir(dir.path());
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let (status, _, stderr) = gateway
        .finish_async(BOUND)
        .await
        .unwrap_or_else(|e| panic!("the gateway did not stop: {e}"));
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("widgets/task-board/index.html")
            && stderr.contains("stylesheet href \"style.css\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)"),
        "{stderr}"
    );
}

async fn assert_good_serves_at(url: &str) {
    let (status, _, body) = post_json(url, &[], INIT).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
}
