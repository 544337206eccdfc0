//! What `serve` says at start and while it runs: a bad setting by file and
//! field, configuration errors at their lines, each mount's overlays, the
//! problems `check` finds against the live listing, the widget origins.

use super::*;

#[tokio::test]
async fn serve_names_the_file_and_field_of_a_bad_setting() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        "listen = \"127.0.0.1:0\"\n[limits]\nmax_body_bytez = 3\n",
    );
    let out = run(root, &["serve", "--config", "gw.toml"]).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("gw.toml") && err.contains("max_body_bytez"),
        "{err}"
    );
    write(
        root.join("gw.toml"),
        "listen = \"127.0.0.1:0\"\n[[upstream]]\nname = \"a\"\nurl = \"ftp://x\"\n",
    );
    let out = run(root, &["serve", "--config", "gw.toml"]).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("gw.toml") && err.contains("upstream[0].url"),
        "{err}"
    );
    let out = run(
        root,
        &["serve", "--config", "gw.toml", "--listen", "not-an-address"],
    )
    .await;
    assert!(!out.status.success());
}

/// `serve` says what its overlays do: one line per mount (the files that apply, how many
/// tools, render tools and widgets), and a warning naming the file of overlays for an
/// upstream that is not configured, which it would otherwise ignore in silence.
#[tokio::test]
async fn serve_names_the_overlays_of_each_mount_and_warns_of_files_it_ignores() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    std::fs::write(
        overlays.join("upstream.toml"),
        "[tools.list_tasks]\ntitle = \"Tasks\"\n\n[tools.add_task]\ntitle = \"Add\"\n",
    )
    .unwrap();
    std::fs::write(
        overlays.join("ghost.toml"),
        "# for an upstream nobody configured\n[tools.x]\ntitle = \"X\"\n",
    )
    .unwrap();
    let mut gateway = serve_demo_with_overlays(dir.path(), &overlays);
    let (mut summary, mut ghost) = (None, None);
    gateway.wait_for(
        "the overlay summary and the ghost.toml warning",
        RUN_TIMEOUT,
        |_: Stream, line| {
            if line.contains("upstream 'upstream': overlays from") {
                summary = Some(line.to_owned());
            }
            if line.contains("ghost.toml") {
                ghost = Some(line.to_owned());
            }
            (summary.is_some() && ghost.is_some()).then_some(())
        },
    );
    let summary = summary.unwrap();
    assert!(
        summary.contains("overlays from upstream.toml (2 tools, 0 render tools, 0 widgets)"),
        "{summary}"
    );
    let ghost = ghost.unwrap();
    assert!(ghost.contains("WARN"), "{ghost}");
    assert!(
        ghost.contains("upstream 'ghost', which is not configured (configured: 'upstream')"),
        "{ghost}"
    );
    let _ = gateway.terminate(Duration::from_secs(20));
}

/// `serve` warns of a `[tools.x]` its upstream does not list, naming file and line and the
/// name likely meant (as `check` does): on the first whole listing, and again after a
/// reload, each once.
#[tokio::test]
async fn serve_warns_of_overlaid_tools_the_upstream_does_not_list() {
    use support::clients::post_json;
    use support::process::{Stream, endpoint_url};
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    let file = overlays.join("upstream.toml");
    std::fs::write(&file, "[tools.list_task]\ntitle = \"Tasks\"\n").unwrap();
    let mut gateway = serve_demo_with_overlays(dir.path(), &overlays);
    let url = gateway.wait_for("the endpoint line", RUN_TIMEOUT, |s, line| {
        endpoint_url(line).filter(|_| s == Stream::Stdout)
    });
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (_, headers, _) = post_json(&url, &[], init).await;
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let h = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, _) = post_json(&url, &h, list).await;
    assert_eq!(status, 200);
    let first = gateway.wait_for("the warning for list_task", RUN_TIMEOUT, |_, line| {
        line.contains("tools.list_task:").then(|| line.to_owned())
    });
    assert!(
        first.contains("WARN")
            && first.contains("upstream.toml:1: tools.list_task: upstream 'upstream' has no tool `list_task`; did you mean `list_tasks`?"),
        "{first}"
    );

    // A reload: the typo fixed, another tool that is not there.
    std::fs::write(
        &file,
        "[tools.list_tasks]\ntitle = \"Tasks\"\n\n[tools.weather]\ntitle = \"Weather\"\n",
    )
    .unwrap();
    gateway.wait_for("the reload", RUN_TIMEOUT, |_, line| {
        line.contains("overlays from upstream.toml (2 tools")
            .then_some(())
    });
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let (status, _, _) = post_json(&url, &h, list).await;
    assert_eq!(status, 200);
    let second = gateway.wait_for("the warning for weather", RUN_TIMEOUT, |_, line| {
        line.contains("tools.weather:").then(|| line.to_owned())
    });
    assert!(
        second.contains("upstream.toml:4: tools.weather: upstream 'upstream' has no tool `weather` (its tools: `add_task`, `complete_task`, `list_tasks`, `refresh_tasks`"),
        "{second}"
    );
    assert!(
        !gateway.stderr().contains("tools.list_tasks: upstream"),
        "list_tasks is listed: no warning for it"
    );
    let _ = gateway.terminate(Duration::from_secs(20));
}

/// A stdio server in sh, just enough MCP for a listing: one tool,
/// `read_graph`, whose output schema has two arrays (as server-memory's).
const GRAPH_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"memory","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"read_graph","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"entityType":{"type":"string"}}}},"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"}}}}}}}]}}\n' "$id" ;;
  esac
done
"#;

/// The problems `check` prints for `root`'s configuration and overlays:
/// its lines naming an overlay file (warnings left out).
async fn check_problems(root: &Path) -> Vec<String> {
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    let problems: Vec<String> = both
        .lines()
        .filter(|l| l.starts_with("overlays/"))
        .map(str::to_owned)
        .collect();
    assert!(!problems.is_empty(), "{both}");
    problems
}

/// Waits until `gateway` has logged a warning holding each of `lines`.
fn wait_for_warnings(gateway: &mut support::process::Proc, lines: &[String]) {
    use support::process::Stream;
    let mut seen = vec![false; lines.len()];
    gateway.wait_for("check's problems", RUN_TIMEOUT, |s: Stream, line| {
        for (i, want) in lines.iter().enumerate() {
            if s == Stream::Stderr && line.contains("WARN") && line.contains(want.as_str()) {
                seen[i] = true;
            }
        }
        seen.iter().all(|s| *s).then_some(())
    });
}

/// `serve` says the problems `check` finds against an upstream's live
/// listing, in the same words, at start and after each reload, before any
/// client lists the tools: a `builtin:table` over a tool whose output has
/// two arrays and no `view.data` (server-memory's `read_graph`), then,
/// once that is fixed, a column the records do not have.
#[tokio::test]
async fn serve_says_the_live_problems_check_finds_at_start_and_after_each_reload() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!(
            "overlays = \"overlays\"\n[[upstream]]\nname = \"memory\"\ncommand = \"sh\"\nargs = [\"-c\", '''{GRAPH_SERVER}''']\n\n{LIMITS}"
        ),
    );
    let file = root.join("overlays/memory.toml");
    write(&file, "[tools.read_graph]\nwidget = \"builtin:table\"\n");
    let first = check_problems(root).await;
    assert!(
        first[0].contains("view.data: missing, and the output schema has several array properties: set it to one of `/entities`, `/relations`"),
        "{first:?}"
    );

    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--config", "gw.toml", "--listen", "127.0.0.1:0"])
        .current_dir(root)
        .env("RUST_LOG", "info");
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    wait_for_warnings(&mut gateway, &first);

    // Fixed, and another mistake: said after the reload, with no listing asked.
    write(
        &file,
        "[tools.read_graph]\nwidget = \"builtin:table\"\n\n[tools.read_graph.view]\ndata = \"/entities\"\ncolumns = [\"name\", \"entityTyp\"]\n",
    );
    let second = check_problems(root).await;
    assert!(
        second[0].contains("`entityTyp` is not in the output schema's records at `/entities`")
            && second[0].contains("did you mean `entityType`?"),
        "{second:?}"
    );
    wait_for_warnings(&mut gateway, &second);
    let stderr = gateway.stderr();
    assert_eq!(
        stderr.matches(first[0].as_str()).count(),
        1,
        "said once: {stderr}"
    );
    let _ = gateway.terminate(Duration::from_secs(20));
}

/// The origins the hosts render a mount's and an app's widgets at, from
/// `public_url`, as OpenAI's "widget origin migration" guide and Claude's
/// MCP Apps documentation derive them (their example: `https://example.com/mcp`
/// gives `c3d80a4ed901ee05b21755a88273b4a4`): said by `serve` at start and by
/// `check`, and listed by `/preview/mounts.json`.
#[tokio::test]
async fn serve_check_and_the_preview_say_the_widget_origins() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("overlays/.keep"), "");
    write(
        root.join("gw.toml"),
        &format!(
            "public_url = \"https://example.com\"\npreview = true\noverlays = \"overlays\"\n{LIMITS}{}{}[[app]]\nname = \"suite\"\nupstreams = [\"demo\", \"other\"]\n",
            demo_upstream("demo").replace(
                "[[upstream]]\nname = \"demo\"\n",
                "[[upstream]]\nname = \"demo\"\npath = \"/mcp\"\n"
            ),
            demo_upstream("other")
        ),
    );
    let expect = [
        "Widget origins of https://example.com/mcp: ChatGPT https://mcp-endpoint-c3d80a4ed901ee05b21755a88273b4a4.web-sandbox.oaiusercontent.com, Claude https://c3d80a4ed901ee05b21755a88273b4a4.claudemcpcontent.com",
        "Widget origins of https://example.com/other/mcp: ChatGPT https://mcp-endpoint-",
        "Widget origins of https://example.com/suite/mcp: ChatGPT https://mcp-endpoint-",
    ];
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (stdout, both) = streams(&out);
    for e in expect {
        assert!(stdout.contains(e), "check: {e}\n{both}");
    }
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--config", "gw.toml", "--listen", "127.0.0.1:0"])
        .current_dir(root);
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let mut said = Vec::new();
    let mut endpoint = None;
    let mut app_line = None;
    gateway.wait_for(
        "the widget origins at start",
        RUN_TIMEOUT,
        |s: Stream, line| {
            if s == Stream::Stdout && line.starts_with("Widget origins of ") {
                said.push(line.to_owned());
            }
            if s == Stream::Stdout && line.starts_with("App endpoint: ") {
                app_line = Some(line.to_owned());
            }
            if endpoint.is_none() {
                endpoint = support::process::endpoint_url(line);
            }
            (said.len() == 3).then_some(())
        },
    );
    for e in expect {
        assert!(
            said.iter().any(|l| l.starts_with(e)),
            "serve: {e}\n{said:?}"
        );
    }
    let base = endpoint.unwrap().trim_end_matches("/mcp").to_owned();
    // The app endpoint is announced like the mounts' (before: not at all).
    assert_eq!(
        app_line.as_deref(),
        Some(format!("App endpoint: {base}/suite/mcp -> demo, other").as_str())
    );
    let (status, _, body) = support::clients::request_raw(
        hyper::Method::GET,
        &format!("{base}/preview/mounts.json"),
        &[],
        "",
    )
    .await;
    assert_eq!(status, hyper::StatusCode::OK);
    let mounts: serde_json::Value = serde_json::from_slice(&body).unwrap();
    // The preview lists it beside the mounts, with its members.
    assert_eq!(mounts["mounts"][2]["path"], "/suite/mcp", "{mounts}");
    assert_eq!(
        mounts["mounts"][2]["app"],
        serde_json::json!(["demo", "other"]),
        "{mounts}"
    );
    assert_eq!(
        mounts["mounts"][0]["origins"],
        serde_json::json!({
            "endpoint": "https://example.com/mcp",
            "chatgpt": "https://mcp-endpoint-c3d80a4ed901ee05b21755a88273b4a4.web-sandbox.oaiusercontent.com",
            "claude": "https://c3d80a4ed901ee05b21755a88273b4a4.claudemcpcontent.com",
        })
    );
    let _ = gateway.terminate(Duration::from_secs(20));
}

/// A configuration file's problems are said all at once, each at its file
/// and line with the key meant; one from the environment names its
/// variable. (Before: figment's first error only, with no line: "unknown
/// field: found `listn`, expected `one of `listen`, …` for key
/// "default.listn" in gw.toml TOML file".)
#[tokio::test]
async fn configuration_errors_are_all_said_at_their_lines_with_the_key_meant() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("overlays/.keep"), "");
    write(
        root.join("gw.toml"),
        "listn = \"127.0.0.1:9\"\n\n[limits]\nmax_body = 5\nrequest_timeout_secs = \"x\"\n\n\
         [[upstream]]\nname = \"a\"\ncommand = \"true\"\n\n[[upstream]]\nname = \"b\"\ncomand = \"c\"\n",
    );
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert_eq!(
        text(&out.stderr),
        "mcp-ui-gateway: configuration error: gw.toml:1: listn: unknown key; did you mean `listen`?\n\
         gw.toml:4: limits.max_body: unknown key; did you mean `max_body_bytes`?\n\
         gw.toml:5: limits.request_timeout_secs: invalid type: found string \"x\", expected u64\n\
         gw.toml:13: upstream.1.comand: unknown key; did you mean `command`?\n",
        "{both}"
    );
    let mut command = tokio::process::Command::new(BIN);
    command
        .args(["check", "--offline"])
        .current_dir(root)
        .env("MCP_UI_GATEWAY_LISTN", "127.0.0.1:9")
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "mcp-ui-gateway: configuration error: environment variable MCP_UI_GATEWAY_LISTN: unknown key; did you mean `listen`?\n"
    );
}

/// `RUST_LOG` reaches every crate's log lines: each line names the module
/// that wrote it (`mcp_ui_proxy::live`), which a directive can name, and a
/// directive naming `mcp_ui_gateway` (the name every module logged under
/// before the crates) still reaches them. With `warn` alone the same INFO
/// line is not written.
#[tokio::test]
async fn rust_log_reaches_each_crate_by_its_name_and_the_gateways() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir(&overlays).unwrap();
    std::fs::write(
        overlays.join("upstream.toml"),
        "[tools.list_tasks]\ntitle = \"Tasks\"\n",
    )
    .unwrap();
    for spec in [
        "warn,mcp_ui_proxy::live=info",
        "warn,mcp_ui_gateway::live=info",
        "warn",
    ] {
        let mut gateway = serve_demo_logging(dir.path(), &overlays, spec);
        let (mut summary, mut endpoint) = (None, false);
        gateway.wait_for("the endpoint line", RUN_TIMEOUT, |stream: Stream, line| {
            if line.contains("upstream 'upstream': overlays from") {
                summary = Some(line.to_owned());
            }
            endpoint |= stream == Stream::Stdout && line.contains("MCP endpoint:");
            (endpoint && (summary.is_some() || spec == "warn")).then_some(())
        });
        let stderr = gateway.stderr();
        if spec == "warn" {
            assert!(
                summary.is_none(),
                "{spec}: an INFO line was written:\n{stderr}"
            );
        } else {
            let line = summary.unwrap();
            assert!(
                line.contains("INFO") && line.contains("mcp_ui_proxy::live"),
                "{spec}: {line}"
            );
        }
        // The gateway's own INFO lines stay off under `warn`.
        assert!(
            !stderr.contains("mcp-ui-gateway serving"),
            "{spec}:\n{stderr}"
        );
        gateway.terminate(RUN_TIMEOUT).unwrap();
    }
}

/// Who called is logged only where the operator asks: with `[auth] log_callers =
/// true` each verified caller's issuer and subject are logged with the request; without
/// it no log line names the caller. The banner says what each endpoint requires. (The
/// port is the system's choice, so the tokens' audience is named, not `public_url`.)
#[tokio::test]
async fn callers_are_logged_only_when_asked() {
    let Some((peers, _turn)) = support::peers::setup().await else {
        return;
    };
    let idp = support::idp::Idp::start(&peers).await;
    let audience = "http://127.0.0.1:9/mcp";
    for log in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "[auth]\nissuer = {}\naudience = \"{audience}\"\nlog_callers = {log}\n\n[[upstream]]\nname = \"fx\"\ncommand = {}\nargs = [\"--protocol\", \"2025\"]\n",
            serde_json::Value::from(idp.issuer()),
            serde_json::Value::from(support::upstreams::STDIO_COMMAND),
        );
        std::fs::write(dir.path().join("gw.toml"), config).unwrap();
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["serve", "--config", "gw.toml", "--listen", "127.0.0.1:0"])
            .current_dir(dir.path());
        let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
        let mut banner = String::new();
        let url = gateway.wait_for("the endpoint line", RUN_TIMEOUT, |_, line| {
            let url = support::process::endpoint_url(line)?;
            banner = line.to_owned();
            Some(url)
        });
        assert!(
            banner.ends_with(&format!("; requires a token of {}", idp.issuer())),
            "{banner}"
        );
        let token = idp.token(audience, &["tools:call"]).await;
        let (_, claims) = support::idp::decode_jwt(&token);
        let subject = claims["sub"].as_str().unwrap().to_owned();
        let auth = format!("Bearer {token}");
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        let headers = [
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", auth.as_str()),
        ];
        let (status, _, _) = support::clients::post_json(&url, &headers, body.to_owned()).await;
        assert_eq!(status, hyper::StatusCode::OK);
        let needle = format!("subject={subject}");
        if log {
            gateway.wait_for("the caller's log line", RUN_TIMEOUT, |_, line| {
                (line.contains("caller verified") && line.contains(&needle)).then_some(())
            });
        } else {
            // The request is answered: had it been logged, the line would be there.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            let said = gateway.stderr();
            assert!(
                !said.contains(&needle) && !said.contains("caller verified"),
                "{said}"
            );
        }
        drop(gateway);
    }
}
