//! The `check` and `init` commands, run as the built binary in temporary
//! directories: `check` finds every problem class in one run and passes clean
//! overlays (the repository's own included); `init` writes stubs that `check`
//! accepts, over every transport, and never replaces a file unasked.
//!
//! Every server listens on 127.0.0.1, and every run of the binary is bounded.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use support::upstreams::{self, HttpFlavor};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-ui-gateway");
/// Generous: a run starts stdio servers and waits for their handshakes.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Keeps a hung upstream from using up `RUN_TIMEOUT`.
const LIMITS: &str = "[limits]\nrequest_timeout_secs = 20\nconnect_timeout_secs = 5\n";

/// Runs the binary in `dir`; environment that could change its
/// configuration or log output is removed.
async fn run(dir: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(BIN);
    command.args(args).current_dir(dir).kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("`mcp-ui-gateway {}` took too long", args.join(" ")))
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// stdout, and both streams for assertion messages.
fn streams(out: &Output) -> (String, String) {
    let stdout = text(&out.stdout);
    let both = format!("--- stdout\n{stdout}--- stderr\n{}", text(&out.stderr));
    (stdout, both)
}

fn write(path: impl AsRef<Path>, contents: &str) {
    let path = path.as_ref();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// A TOML `[[upstream]]` running the bundled demo over stdio.
fn demo_upstream(name: &str) -> String {
    format!("[[upstream]]\nname = \"{name}\"\ncommand = {BIN:?}\nargs = [\"demo-server\"]\n\n")
}

/// A stdio server in sh, just enough MCP for a listing: its first page has
/// a tool whose file parameter breaks the file-object rules (no mime_type or
/// file_name, file_id not required); its second page has another tool.
const FILES_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"files","version":"1"}}}\n' "$id" ;;
    *'"cursor":"2"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"later","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"upload","inputSchema":{"type":"object","properties":{"attachment":{"type":"object","properties":{"download_url":{"type":"string"},"file_id":{"type":"string"}},"required":["download_url"]}}}}],"nextCursor":"2"}}\n' "$id" ;;
  esac
done
"#;

#[tokio::test]
async fn check_reports_every_problem_class_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = format!(
        "{}[[upstream]]\nname = \"files\"\ncommand = \"sh\"\nargs = [\"-c\", '''{FILES_SERVER}''']\n\n{LIMITS}",
        demo_upstream("demo")
    );
    write(root.join("gw.toml"), &config);
    write(
        root.join("overlays/demo.toml"),
        r#"[tools.list_task]
title = "A typo in the tool name"

[tools.add_task]
widget = "nowhere"

[tools.complete_task]
invoking = "Completing the task you asked for, which takes quite a while now…"
"#,
    );
    write(
        root.join("overlays/files.toml"),
        "[tools.upload]\nfile_params = [\"attachment\"]\n\n[tools.later]\ntitle = \"On page two\"\n",
    );
    write(
        root.join("overlays/ghost.toml"),
        "[tools.x]\ntitle = \"X\"\n",
    );
    write(
        root.join("overlays/extra.toml"),
        "upstream = \"phantom\"\n\n[tools.y]\ntitle = \"Y\"\n",
    );
    write(
        root.join("overlays/widgets/card/index.html"),
        "<p>card</p>\n",
    );
    write(
        root.join("overlays/widgets/card/widget.toml"),
        "[csp]\nconnect_domains = [\"https://api.example.com\", \"https://cdn.example.com/lib\"]\n",
    );

    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    let expected = [
        // Unknown tool, with the likely intended one.
        "overlays/demo.toml:1: tools.list_task: upstream 'demo' has no tool `list_task`; did you mean `list_tasks`?",
        // Missing widget.
        "overlays/demo.toml:4: tools.add_task.widget: no widget folder `widgets/nowhere`",
        // Over-long status text.
        "overlays/demo.toml:7: tools.complete_task.invoking: 65 characters; ChatGPT allows at most 64",
        // Unknown upstream, by an explicit key and by the file name.
        "overlays/extra.toml:1: upstream: no upstream named 'phantom' is configured (configured: 'demo', 'files')",
        "overlays/ghost.toml: the file name makes these the tools of upstream 'ghost', which is not configured",
        // File parameter whose live schema breaks the rules.
        "overlays/files.toml:1: tools.upload.file_params[0]: `attachment`: the file object must declare `mime_type`, `file_name`; the file object must require `file_id`",
        // Malformed CSP origin.
        "overlays/widgets/card/widget.toml:2: csp.connect_domains[1]: `https://cdn.example.com/lib` has a path",
    ];
    for line in expected {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "missing {line:?}\n{both}"
        );
    }
    // Warnings (the app directory rules, with their indented fixes) aside.
    let problems: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("warning: ") && !l.starts_with("    "))
        .collect();
    // `later` is on the second page: pages were followed, so it is known.
    assert!(
        !problems.iter().any(|l| l.contains("tools.later")),
        "{both}"
    );
    assert!(
        problems
            .last()
            .is_some_and(|l| l.starts_with("7 problems in overlays")),
        "{both}"
    );
    assert_eq!(problems.len(), 8, "{both}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("checking upstream 'demo' (stdio `"),
        "{both}"
    );
    assert!(
        stderr.contains("checking upstream 'files' (stdio `sh"),
        "{both}"
    );
}

#[tokio::test]
async fn check_passes_a_clean_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    write(
        root.join("overlays/demo.toml"),
        r#"#:schema ./schema/overlay.schema.json
[tools.list_tasks]
widget = "board"
invoking = "Loading tasks…"
invoked = "Tasks loaded"
annotations = { readOnlyHint = true, destructiveHint = false, openWorldHint = false }
result = { structured_from_text = true }
output_schema = { type = "object" }
"#,
    );
    write(
        root.join("overlays/widgets/board/index.html"),
        "<p>board</p>\n",
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert_eq!(
        stdout,
        "overlays OK: 1 overlay file, 1 tool overlaid, 1 widget; checked against upstream 'demo' (4 tools)\n",
        "{both}"
    );
    // Offline, the upstream is not contacted.
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.ends_with("not checked against the upstreams (--offline)\n"),
        "{both}"
    );
    assert!(!text(&out.stderr).contains("checking upstream"), "{both}");
}

#[tokio::test]
async fn check_reports_a_render_tool_whose_name_an_upstream_tool_takes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    // `add_task` is an upstream tool: the render tool of that name collides.
    write(
        root.join("overlays/demo.toml"),
        r#"[tools.list_tasks]
result = { structured_from_text = true }
output_schema = { type = "object", required = ["tasks"] }

[render.show_tasks]
widget = "board"
data_tools = ["list_tasks"]

[render.add_task]
widget = "board"
data_tools = ["list_task"]
input_schema = { type = "object" }
"#,
    );
    write(
        root.join("overlays/widgets/board/index.html"),
        "<p>board</p>\n",
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains(
            "overlays/demo.toml:9: render.add_task: name collision: upstream 'demo' has a tool named `add_task`; the upstream's tool wins"
        ),
        "{both}"
    );
    assert!(
        stdout.contains(
            "overlays/demo.toml:9: render.add_task.data_tools[0]: upstream 'demo' has no tool `list_task`; did you mean `list_tasks`?"
        ),
        "{both}"
    );
    assert!(!stdout.contains("render.show_tasks"), "{both}");
    // Offline, the collision cannot be seen, and the overlay is valid.
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
}

/// A stdio server in sh whose one tool is already an MCP Apps tool: it lists
/// `_meta.ui.resourceUri`, an outputSchema and the three hints ChatGPT's
/// review requires.
const NATIVE_UI_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"clocks","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"clock","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"destructiveHint":false,"openWorldHint":false},"_meta":{"ui":{"resourceUri":"ui://clock/native.html"}}}]}}\n' "$id" ;;
  esac
done
"#;

/// The app directories' rules, each broken once, in front of the demo and a
/// server with a native MCP Apps tool: warnings naming rule, file, line and
/// fix, with exit status 0; `--strict` reports the same as problems and
/// fails; `--offline` applies the rules that need no listing.
#[tokio::test]
async fn check_warns_of_the_app_directory_rules_and_strict_fails_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = format!(
        "public_url = \"https://gw.example.com\"\n\n{}[[upstream]]\nname = \"clocks\"\ncommand = \"sh\"\nargs = [\"-c\", '''{NATIVE_UI_SERVER}''']\n\n{LIMITS}",
        demo_upstream("demo")
    );
    write(root.join("gw.toml"), &config);
    // No hints, shaped results without a schema, oauth2 with HTTP challenges.
    write(
        root.join("overlays/demo.toml"),
        r#"[tools.list_tasks]
widget = "board"
result = { structured_from_text = true }
security_schemes = [{ type = "noauth" }, { type = "oauth2", scopes = ["tasks.read"] }]
"#,
    );
    // Replaces the upstream's own UI.
    write(
        root.join("overlays/clocks.toml"),
        "[tools.clock]\nwidget = \"board\"\n",
    );
    // No manifest, so no domain, while public_url is known.
    write(
        root.join("overlays/widgets/board/index.html"),
        "<p>board</p>\n",
    );
    let findings = [
        "overlays/clocks.toml:1: tools.clock.widget: [app-directory/native-ui] the upstream already lists this tool as an MCP App (resourceUri ui://clock/native.html); the overlay's `widget` replaces that resourceUri",
        "overlays/demo.toml:1: tools.list_tasks.annotations: [app-directory/annotations] readOnlyHint, destructiveHint, openWorldHint missing from its annotations",
        "overlays/demo.toml:1: tools.list_tasks: [app-directory/output-schema] its results carry structuredContent (result.structured_from_text makes it from the text), but tools/list shows no outputSchema for it",
        "overlays/demo.toml:1: tools.list_tasks.security_schemes: [app-directory/oauth-in-band] an oauth2 security scheme, but upstream 'demo' relays its authorization challenges as HTTP 401/403",
        "overlays/widgets/board/widget.toml: domain: [app-directory/widget-domain] ChatGPT requires a unique widget domain for app submission",
    ];
    // The lines that would set the missing hints, under the warning.
    let fix = "\n    [tools.list_tasks.annotations]\n    readOnlyHint = false  # true if it changes nothing\n    destructiveHint = true  # false if it never deletes nor overwrites\n    openWorldHint = true  # false if it reaches nothing beyond its own data\n";

    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    for finding in findings {
        let line = format!("warning: {finding}");
        assert!(
            stdout.lines().any(|l| l.starts_with(&line)),
            "missing {line:?}\n{both}"
        );
    }
    assert!(stdout.contains(fix), "{both}");
    assert_eq!(
        stdout.lines().last(),
        Some(
            "overlays OK: 2 overlay files, 2 tools overlaid, 1 widget; checked against upstream 'demo' (4 tools), 'clocks' (1 tool), 5 warnings"
        ),
        "{both}"
    );

    let out = run(root, &["check", "--config", "gw.toml", "--strict"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    for finding in findings {
        assert!(
            stdout.lines().any(|l| l.starts_with(finding)),
            "missing {finding:?}\n{both}"
        );
    }
    assert!(!stdout.contains("warning: "), "{both}");
    assert_eq!(
        stdout.lines().last(),
        Some("5 problems in overlays"),
        "{both}"
    );

    // Offline: the rules that need the listings (hints, native UI) wait.
    let out = run(
        root,
        &["check", "--config", "gw.toml", "--offline", "--strict"],
    )
    .await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    for (i, finding) in findings.iter().enumerate() {
        let shown = stdout.lines().any(|l| l.starts_with(finding));
        assert_eq!(shown, (2..5).contains(&i), "{finding:?}\n{both}");
    }
    assert_eq!(
        stdout.lines().last(),
        Some("3 problems in overlays"),
        "{both}"
    );
}

#[tokio::test]
async fn check_passes_on_the_repository_overlays() {
    // The default configuration: the bundled demo, and `overlays/`.
    let out = run(Path::new(env!("CARGO_MANIFEST_DIR")), &["check"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.starts_with("overlays OK: "), "{both}");
    assert!(stdout.contains("checked against upstream 'demo'"), "{both}");
}

#[tokio::test]
async fn check_names_an_unreachable_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A port nothing listens on (held to the end, so nothing can).
    let closed = support::process::ClosedPort::new();
    let addr = closed.addr;
    write(
        root.join("gw.toml"),
        &format!("[[upstream]]\nname = \"down\"\nurl = \"http://{addr}/mcp\"\n\n{LIMITS}"),
    );
    write(
        root.join("overlays/down.toml"),
        "[tools.t]\ntitle = \"T\"\n",
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.starts_with(
            "overlays/down.toml: cannot check against the live tools/list: upstream 'down' is unreachable"
        ),
        "{both}"
    );
}

#[tokio::test]
async fn usage_and_configuration_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let out = run(root, &["check", "--config", "missing.toml"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    write(root.join("bad.toml"), "[[upstream]]\nname = \"x\"\n");
    let out = run(root, &["check", "--config", "bad.toml"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    assert!(text(&out.stderr).contains("set exactly one of"));
    // No overlay directory to check.
    let out = run(root, &["check", "--overlays", "none"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    write(root.join("gw.toml"), &demo_upstream("demo"));
    let out = run(root, &["init", "--config", "gw.toml", "--name", "nope"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    assert!(text(&out.stderr).contains("no upstream named 'nope' is configured"));
    let out = run(root, &["check", "--bogus"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
}

#[tokio::test]
async fn init_writes_a_stub_for_the_demo_that_check_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.starts_with(
            "wrote overlays/demo.toml: 4 tool stubs of upstream 'demo' (task-list-demo "
        ),
        "{both}"
    );
    assert!(
        stdout.contains("wrote overlays/schema/overlay.schema.json"),
        "{both}"
    );
    let stub = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(
        stub.starts_with("#:schema ./schema/overlay.schema.json\n"),
        "{stub}"
    );
    for tool in ["list_tasks", "add_task", "complete_task", "refresh_tasks"] {
        assert!(stub.contains(&format!("\n[tools.{tool}]\n")), "{stub}");
    }
    assert!(
        stub.contains("\n# List all tasks with their id, title and completion state.\n"),
        "{stub}"
    );
    // The stubs set no annotations yet: the app directory rule warns.
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("overlays OK: 1 overlay file, 4 tools overlaid")),
        "{both}"
    );
}

#[tokio::test]
async fn init_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let mine = "# my own overlays\n";
    write(root.join("overlays/demo.toml"), mine);
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert_eq!(stdout, "", "{both}");
    assert!(
        text(&out.stderr).contains("overlays/demo.toml exists; not overwritten (use --force"),
        "{both}"
    );
    let kept = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert_eq!(kept, mine);
    assert!(
        !root.join("overlays/schema").exists(),
        "a refusal writes nothing"
    );

    let out = run(root, &["init", "--config", "gw.toml", "--force"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let replaced = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(replaced.contains("[tools.list_tasks]"), "{replaced}");
}

#[tokio::test]
async fn init_leaves_out_tools_another_file_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    write(
        root.join("overlays/tasks.toml"),
        "upstream = \"demo\"\n\n[tools.list_tasks]\ntitle = \"Tasks\"\n",
    );
    let out = run(root, &["init", "--config", "gw.toml", "--name", "demo"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("3 tool stubs"), "{both}");
    let stub = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(!stub.contains("[tools.list_tasks]"), "{stub}");
    assert!(
        stub.contains("# list_tasks: overlaid in overlays/tasks.toml"),
        "{stub}"
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", streams(&out).1);
}

/// `init` then `check` through every transport: the fixture server over
/// streamable HTTP (SSE and JSON responses), legacy HTTP+SSE and stdio.
#[tokio::test(flavor = "multi_thread")]
async fn init_and_check_over_every_transport() {
    let stateful = upstreams::start_http(HttpFlavor::StatefulSse)
        .await
        .unwrap();
    let json = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .unwrap();
    let legacy = upstreams::start_sse().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = format!(
        "[[upstream]]\nname = \"stateful\"\nurl = \"{}\"\n\n\
         [[upstream]]\nname = \"json\"\nurl = \"{}\"\n\n\
         [[upstream]]\nname = \"legacy\"\nsse_url = \"{}\"\n\n\
         [[upstream]]\nname = \"stdio\"\ncommand = {:?}\n\n{LIMITS}",
        stateful.url,
        json.url,
        legacy.url,
        upstreams::STDIO_COMMAND
    );
    write(root.join("gw.toml"), &config);
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    for name in ["stateful", "json", "legacy", "stdio"] {
        assert!(
            stdout.contains(&format!("wrote overlays/{name}.toml: ")),
            "{name}\n{both}"
        );
        let stub = std::fs::read_to_string(root.join(format!("overlays/{name}.toml"))).unwrap();
        assert!(stub.contains("\n[tools.echo]\n"), "{name}: {stub}");
    }
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("overlays OK: 4 overlay files"),
        "{both}"
    );
    for name in ["stateful", "json", "legacy", "stdio"] {
        assert!(summary.contains(&format!("'{name}' (")), "{name}\n{both}");
    }
}

#[tokio::test]
async fn both_commands_are_in_the_help() {
    let out = run(Path::new("."), &["--help"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("\n  check "), "{both}");
    assert!(stdout.contains("\n  init "), "{both}");
    let out = run(Path::new("."), &["check", "--help"]).await;
    let (stdout, both) = streams(&out);
    assert!(stdout.contains("--offline"), "{both}");
    assert!(stdout.contains("--strict"), "{both}");
    assert!(stdout.contains("Exit status"), "{both}");
    let out = run(Path::new("."), &["init", "--help"]).await;
    let (stdout, both) = streams(&out);
    assert!(
        stdout.contains("--force") && stdout.contains("--upstream"),
        "{both}"
    );
}

#[tokio::test]
async fn warnings_do_not_fail_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    // The demo sends no structuredContent, so a schema without shaping
    // advertises results the tool never returns; and no tool uses `spare`.
    write(
        root.join("overlays/demo.toml"),
        "[tools.add_task]\nannotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }\n\n[tools.add_task.output_schema]\ntype = \"object\"\n",
    );
    write(
        root.join("overlays/widgets/spare/index.html"),
        "<p>spare</p>\n",
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{both}");
    assert!(
        lines[0].starts_with("warning: overlays/demo.toml:1: tools.add_task.output_schema: the upstream declares no outputSchema"),
        "{both}"
    );
    assert_eq!(
        lines[1],
        "warning: overlays/widgets/spare: no tool names this widget, so no host will see it"
    );
    assert!(
        lines[2].starts_with("overlays OK: ") && lines[2].ends_with(", 2 warnings"),
        "{both}"
    );
}

/// `check` says which bridge each widget got: a widget that only reads
/// `window.openai` is served with the script implementing it on `ui/*`
/// (detected), one that sends `ui/initialize` as written, and the manifest's
/// `bridge` overrides the detection.
#[tokio::test]
async fn check_says_which_bridge_each_widget_got() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("overlays/demo.toml"),
        "[tools.add_task]\nwidget = \"chatgpt\"\n\n[tools.list_tasks]\nwidget = \"apps\"\n\n[tools.complete_task]\nwidget = \"forced\"\n",
    );
    let openai_only = "<script>addEventListener('openai:set_globals', () => show(window.openai.toolOutput));</script>\n";
    write(
        root.join("overlays/widgets/chatgpt/index.html"),
        openai_only,
    );
    write(
        root.join("overlays/widgets/apps/index.html"),
        "<script>parent.postMessage({jsonrpc: '2.0', id: 1, method: 'ui/initialize'}, '*');</script>\n",
    );
    write(root.join("overlays/widgets/forced/index.html"), openai_only);
    write(
        root.join("overlays/widgets/forced/widget.toml"),
        "bridge = \"mcp-apps\"\n",
    );
    let out = run(root, &["check", "--offline", "--overlays", "overlays"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "widget chatgpt: window.openai, served with the script that implements it on the MCP Apps ui/* messages (detected; bridge = \"mcp-apps\" serves it as written)",
        "widget apps: MCP Apps ui/*, served as written (detected)",
        "widget forced: MCP Apps ui/*, served as written (set by bridge in the manifest)",
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{both}");
    }
}

/// Without a configuration file, `check` and `init` take one upstream from
/// the same flags as `serve`: `--name NAME -- COMMAND`.
#[tokio::test]
async fn a_command_line_upstream_needs_no_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let upstream = ["--name", "tasks", "--", BIN, "demo-server"];
    let init: Vec<&str> = ["init", "--overlays", "mine"]
        .into_iter()
        .chain(upstream)
        .collect();
    let out = run(root, &init).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.starts_with("wrote mine/tasks.toml: 4 tool stubs"),
        "{both}"
    );
    let check: Vec<&str> = ["check", "--overlays", "mine"]
        .into_iter()
        .chain(upstream)
        .collect();
    let out = run(root, &check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'tasks' (4 tools)"),
        "{both}"
    );
}

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

/// `serve` in `dir` in front of the demo server (mounted as `upstream`) with `overlays`,
/// logging at info, with no `MCP_UI_GATEWAY_*` variable of this process.
fn serve_demo_with_overlays(dir: &Path, overlays: &Path) -> support::process::Proc {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--config", "/dev/null", "--listen", "127.0.0.1:0"])
        .arg("--overlays")
        .arg(overlays)
        .args(["--", BIN, "demo-server"])
        .current_dir(dir)
        .env("RUST_LOG", "info");
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    support::process::Proc::spawn("gateway", &mut cmd)
}

// Commands run as a user runs them, with the binary on the PATH.

/// The line of `text` that starts with `prefix` (after indentation).
fn line_starting(text: &str, prefix: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .map(str::to_owned)
}

/// Runs `line` with `sh -c` in `dir`, with the binary on the PATH as
/// `mcp-ui-gateway`, as a user who ran `cargo install --path .` would.
async fn shell(dir: &Path, line: &str) -> Output {
    let bin_dir = dir.join(".bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("mcp-ui-gateway");
    if !link.exists() {
        std::os::unix::fs::symlink(BIN, &link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = tokio::process::Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("`{line}` took too long"))
        .expect("sh runs")
}

/// A copy of the example that nests its folder (`cp -r SRC DEST` into a
/// directory that exists) gets a missing-widget error naming the nested
/// folder and the command that copies the content.
#[tokio::test]
async fn a_nested_copy_of_the_example_is_named_in_the_error() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // From the checkout's root: `examples/` is there.
    std::os::unix::fs::symlink(repo.join("examples"), root.join("examples")).unwrap();
    let overlay = "[tools.get_current_time]\nwidget = \"clock\"\n";
    // The copy that nests the folder: the error points at it.
    write(root.join("nested/time.toml"), overlay);
    let out = shell(root, "cp -r examples/time/overlays nested").await;
    assert!(out.status.success(), "{}", streams(&out).1);
    let out = shell(
        root,
        "mcp-ui-gateway check --offline --overlays nested --name time",
    )
    .await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.starts_with(
            "nested/time.toml:1: tools.get_current_time.widget: no widget folder `widgets/clock`; but nested/overlays/widgets/clock exists, one level down: was a folder copied into nested instead of its content? Move its files up (`cp -r SRC/. nested/` copies a folder's content)"
        ),
        "{both}"
    );
}

/// `--name NAME` alone: `check --offline` takes any name (no upstream is
/// needed to check files); online, and for `init`, it names a configured
/// upstream, and a name that is not one is a usage error saying what to give.
#[tokio::test]
async fn a_name_alone_is_enough_offline_and_names_a_configured_upstream_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("overlays/time.toml"),
        "[tools.get_current_time]\ntitle = \"Now\"\n",
    );
    let out = run(root, &["check", "--offline", "--name", "time"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.starts_with("overlays OK: 1 overlay file"), "{both}");
    // Online, a name nothing configures cannot be checked against.
    let out = run(root, &["check", "--name", "time"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert!(
        text(&out.stderr).contains(
            "no upstream named 'time' is configured (configured: 'demo'); give its --upstream URL, --upstream-sse URL or `-- COMMAND`, or check its files alone with --offline"
        ),
        "{both}"
    );
    // A configured name is the configured upstream.
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("time")),
    );
    let out = run(root, &["check", "--config", "gw.toml", "--name", "time"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.starts_with("overlays/time.toml:1: tools.get_current_time: upstream 'time' has no tool `get_current_time`"),
        "{both}"
    );
}

/// `init --upstream URL` is the upstream at that URL, as for `serve` and
/// `check` (no longer a name: that is `--name`), and the command `init` ends
/// with, copied as it is, checks what it wrote: stdio and HTTP upstreams.
#[tokio::test(flavor = "multi_thread")]
async fn init_takes_the_upstream_as_serve_does_and_its_hint_runs_as_printed() {
    let web = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("quick.toml"), LIMITS);

    let init = format!(
        "mcp-ui-gateway init --config quick.toml --overlays 'my stubs' --upstream {} --name web",
        web.url
    );
    let out = shell(root, &init).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.starts_with("wrote my stubs/web.toml: "), "{both}");
    let hint = line_starting(&text(&out.stderr), "next: edit the stubs, then run `")
        .expect("a closing hint");
    let check = hint
        .trim_start_matches("next: edit the stubs, then run `")
        .trim_end_matches('`');
    assert_eq!(
        check,
        format!(
            "mcp-ui-gateway check --config quick.toml --overlays 'my stubs' --name web --upstream {}",
            web.url
        )
    );
    let out = shell(root, check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'web' ("),
        "{both}"
    );

    // A stdio server: the hint repeats its command line.
    let out = run(
        root,
        &[
            "init",
            "--overlays",
            "tasks",
            "--name",
            "tasks",
            "--",
            BIN,
            "demo-server",
        ],
    )
    .await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let hint = line_starting(&text(&out.stderr), "next: ").expect("a closing hint");
    let check = hint
        .trim_start_matches("next: edit the stubs, then run `")
        .trim_end_matches('`');
    assert!(
        check.starts_with("mcp-ui-gateway check --overlays tasks --name tasks -- ")
            && check.ends_with(" demo-server"),
        "{check}"
    );
    let out = shell(root, check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'tasks' (4 tools)"),
        "{both}"
    );

    // A name where the URL belongs: a usage error that says which flag.
    let old_init = ["init", "--upstream", "demo", "--", BIN, "demo-server"];
    for args in [
        &["init", "--upstream", "demo"][..],
        &["check", "--upstream", "demo"],
        &["serve", "--upstream", "demo"],
        &old_init,
    ] {
        let command = args.join(" ");
        let out = run(root, args).await;
        let (_, both) = streams(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {both}");
        assert!(
            text(&out.stderr).contains(
                "--upstream takes the URL of an upstream (e.g. http://127.0.0.1:3001/mcp), not \"demo\"; to name the upstream, or to pick a configured one, use --name demo"
            ),
            "{command}: {both}"
        );
    }
}

/// `check` has no `--path`: a mount path changes nothing it checks.
#[tokio::test]
async fn check_has_no_path_flag() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("overlays")).unwrap();
    let out = run(root, &["check", "--offline", "--path", "/time/mcp"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert!(
        text(&out.stderr).contains("unexpected argument '--path'"),
        "{both}"
    );
    let out = run(root, &["check", "--help"]).await;
    assert!(!text(&out.stdout).contains("--path"), "{}", streams(&out).1);
}

/// A built widget (Vite's shape, absolute base) whose every reference must
/// resolve: a lazy chunk naming a file that is not there fails `check` with
/// the file and the reference; once it is there, the same widget passes, but
/// only with `public_url` set (its chunks are served by the gateway).
#[tokio::test]
async fn check_fails_on_a_widget_reference_that_resolves_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = |public_url: &str| format!("{public_url}{}{LIMITS}", demo_upstream("demo"));
    write(
        root.join("gw.toml"),
        &config("public_url = \"https://gw.example.com\"\n"),
    );
    write(
        root.join("overlays/demo.toml"),
        "[tools.list_tasks]\nwidget = \"app\"\n",
    );
    write(
        root.join("overlays/widgets/app/widget.toml"),
        "entry = \"dist/index.html\"\n",
    );
    write(
        root.join("overlays/widgets/app/dist/index.html"),
        "<!doctype html>\n<script type=\"module\" src=\"/assets/index.js\"></script>\n<img src=\"/assets/logo.svg\">\n",
    );
    write(
        root.join("overlays/widgets/app/dist/assets/index.js"),
        "const Lazy = () => import(\"./Lazy.js\");\nexport { Lazy };\n",
    );
    write(
        root.join("overlays/widgets/app/dist/assets/logo.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    );
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains(
            "overlays/widgets/app/dist/assets/index.js:1: import() \"./Lazy.js\": dist/assets/Lazy.js: cannot open"
        ),
        "{both}"
    );

    write(
        root.join("overlays/widgets/app/dist/assets/Lazy.js"),
        "import { Lazy } from \"./index.js\";\nexport default Lazy;\n",
    );
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");

    write(root.join("gw.toml"), &config(""));
    let out = run(root, &["check", "--config", "gw.toml", "--offline"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains("public_url is not set") && stdout.contains("widgets/app/dist/index.html"),
        "{both}"
    );
}

/// `init --widget NAME` scaffolds a widget that speaks both bridges and
/// passes `check`; it does not overwrite one without `--force`.
#[tokio::test]
async fn init_widget_scaffolds_a_widget_that_check_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let out = run(root, &["init", "--overlays", "ov", "--widget", "hello"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("ov/widgets/hello/index.html"), "{both}");
    let html = std::fs::read_to_string(root.join("ov/widgets/hello/index.html")).unwrap();
    for wanted in [
        "ui/initialize",
        "ui/notifications/tool-result",
        "window.openai",
        "tools/call",
    ] {
        assert!(html.contains(wanted), "{wanted}: {html}");
    }
    write(
        root.join("ov/demo.toml"),
        "[tools.list_tasks]\nwidget = \"hello\"\n",
    );
    let out = run(root, &["check", "--overlays", "ov", "--offline"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("1 widget"), "{both}");
    let out = run(root, &["init", "--overlays", "ov", "--widget", "hello"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert!(both.contains("exists; pass --force"), "{both}");
    let out = run(root, &["init", "--overlays", "ov", "--widget", "../x"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
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

/// A port already taken: `serve` says so in words, and names the flag (and
/// the setting) that chooses another address, instead of only the OS error.
#[tokio::test]
async fn a_port_in_use_is_said_with_the_flag_that_moves_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["serve", "--listen", &addr, "--", "true"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "mcp-ui-gateway: cannot listen on {addr}: the port is already in use"
        )) && stderr.contains(
            "choose another with --listen (or `listen` in the configuration, MCP_UI_GATEWAY_LISTEN)"
        ),
        "{both}"
    );
}

/// Typos in an overlay file are said where they are, with what was meant:
/// an unknown key at its own line ("did you mean `visibility`?"), and a
/// file that does not parse is not followed by a warning that its widget is
/// named by no tool (the broken file may be what names it). (Before: the
/// key at the tool's line with all 14 keys listed, and the false warning.)
#[tokio::test]
async fn check_points_at_a_misspelt_key_and_adds_no_false_warning() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("overlays/widgets/board/index.html"), "<p>b</p>\n");
    write(
        root.join("overlays/demo.toml"),
        "[tools.add_task]\nwidget = \"board\"\nvisiblity = [\"app\"]\n",
    );
    let out = run(root, &["check", "--offline", "--overlays", "overlays"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert_eq!(
        stdout,
        "overlays/demo.toml:3: tools.add_task: unknown key `visiblity`; did you mean `visibility`?\n\
         1 problem in overlays\n",
        "{both}"
    );
    write(
        root.join("overlays/demo.toml"),
        "[tools.add_task]\nwidget = \"board\"\ntitle = \"unclosed\n",
    );
    let out = run(root, &["check", "--offline", "--overlays", "overlays"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(!stdout.contains("no tool names this widget"), "{both}");
}

/// `check` lists every upstream it is given, overlaid or not: one whose
/// command exits fails the check, named, even with no overlay file at all;
/// and with no overlay directory (not named on the command line) the
/// upstreams and an app over them are checked all the same. (Before: "OK: 0
/// overlay files … no upstream to check against", exit 0, and exit 2 without
/// the directory.)
#[tokio::test]
async fn check_lists_upstreams_nothing_overlays_and_works_without_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("overlays/.keep"), "");
    write(
        root.join("gw.toml"),
        &format!(
            "{}[[upstream]]\nname = \"broken\"\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'No module named mcp_server_tim' >&2; exit 1\"]\n\n{LIMITS}",
            demo_upstream("demo")
        ),
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains("overlays: upstream 'broken': cannot check against the live tools/list")
            && stdout.contains("No module named mcp_server_tim"),
        "{both}"
    );
    // No overlay directory: a warning, and the upstreams and the app checked.
    std::fs::remove_dir_all(root.join("overlays")).unwrap();
    write(
        root.join("gw.toml"),
        &format!(
            "{}{}[[app]]\nname = \"suite\"\nupstreams = [\"demo\", \"again\"]\n\n{LIMITS}",
            demo_upstream("demo"),
            demo_upstream("again")
        ),
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains("warning: overlays: does not exist: nothing is overlaid"),
        "{both}"
    );
    assert!(
        stdout.contains("app `suite`: tool `add_task` is offered by both `demo` and `again`"),
        "{both}"
    );
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

/// `scripts/install-peers.sh --only GROUPS` installs a part of the peers
/// (`--only deploy` for `scripts/check-deploy.sh`, without browsers and
/// proxies); a group it does not know is a usage error naming the groups.
/// Nothing is installed here: the installs themselves run in `.ci/run`.
#[test]
fn install_peers_installs_groups_by_name() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-peers.sh");
    let out = std::process::Command::new("bash")
        .args([script, "--only", "deploy,nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "install-peers.sh: no group 'nope'; the groups are: node widgets browser proxies python deploy\n"
    );
    let out = std::process::Command::new("bash")
        .args([script, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("scripts/install-peers.sh --only deploy"),
        "{}",
        text(&out.stdout)
    );
}

/// The binary run where there is no `overlays/` (outside a checkout) serves
/// the bundled demo with its widgets, from overlays built into it, and
/// leaves nothing behind. (Before: a bare demo, and one INFO line.)
#[tokio::test]
async fn the_binary_outside_a_checkout_serves_the_demo_with_its_widgets() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("RUST_LOG", "info");
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let url = gateway.wait_for("the endpoint", RUN_TIMEOUT, |s: Stream, line| {
        support::process::endpoint_url(line).filter(|_| s == Stream::Stdout)
    });
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}"#;
    let (status, headers, _) = support::clients::post_json(&url, &[], init).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, body) = support::clients::post_json(
        &url,
        &[
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        list,
    )
    .await;
    assert_eq!(status, 200);
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("\"resourceUri\":\"ui://task-board/"),
        "the demo's widget is on its tools: {body}\n{}",
        gateway.tail(20)
    );
    let written = std::env::temp_dir().join(format!("mcp-ui-gateway-demo-{}", gateway.pid));
    assert!(written.join("demo.toml").exists(), "{}", written.display());
    let status = gateway.terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success());
    assert!(
        !written.exists(),
        "{} is removed at exit",
        written.display()
    );
}

/// The bare binary decides on `/preview` by the rule `serve` follows: on for
/// a loopback address unless `preview = false` says otherwise (before, it
/// forced the preview on, on any address and against the setting).
#[tokio::test]
async fn the_bare_binary_follows_the_preview_setting_as_serve_does() {
    use support::process::Stream;
    let dir = tempfile::tempdir().unwrap();
    for (setting, shown) in [(None, true), (Some("false"), false)] {
        let mut cmd = std::process::Command::new(BIN);
        cmd.current_dir(dir.path());
        for (key, _) in std::env::vars() {
            if key.starts_with("MCP_UI_GATEWAY_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("MCP_UI_GATEWAY_LISTEN", "127.0.0.1:0");
        if let Some(value) = setting {
            cmd.env("MCP_UI_GATEWAY_PREVIEW", value);
        }
        let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
        let url = gateway.wait_for("the endpoint", RUN_TIMEOUT, |s: Stream, line| {
            support::process::endpoint_url(line).filter(|_| s == Stream::Stdout)
        });
        let base = url.trim_end_matches("/mcp");
        let (status, _, _) =
            support::clients::request_raw(hyper::Method::GET, &format!("{base}/preview"), &[], "")
                .await;
        assert_eq!(status == 200, shown, "preview {setting:?}: {status}");
        let _ = gateway.terminate(Duration::from_secs(20));
    }
}

/// The probe `check` is built on, against the bundled demo over streamable
/// HTTP: it opens a session, lists every page, and names the tools.
#[tokio::test]
async fn the_probe_lists_a_streamable_http_server_with_a_session() {
    use mcp_ui_gateway::config::{Limits, Mount, Transport};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(mcp_ui_gateway::demo::serve_http(listener, stop.clone()));
    let mount = Mount {
        name: "demo".into(),
        path: "/mcp".into(),
        transport: Transport::Http {
            url: url.parse().unwrap(),
        },
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
    };
    let limits = Limits {
        request_timeout_secs: 10,
        connect_timeout_secs: 5,
        ..Limits::default()
    };
    let listing = mcp_ui_gateway::probe::list_tools(&mount, &limits)
        .await
        .unwrap();
    let mut names: Vec<&str> = listing.names().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["add_task", "complete_task", "list_tasks", "refresh_tasks"]
    );
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
}
