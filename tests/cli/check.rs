//! `check`: every problem class in one run, clean overlays passed (the
//! repository's own included), the app directory rules, unreachable and
//! unoverlaid upstreams, misspelt keys, and the probe it is built on.

use super::*;

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

[tools.add_task]
annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }

[tools.complete_task]
annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }

[tools.refresh_tasks]
annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }
"#,
    );
    write(
        root.join("overlays/widgets/board/index.html"),
        "<p>board</p>\n",
    );
    // ChatGPT's rules: every listed tool has its hints (Claude's would also
    // want titles and the widget's height).
    let chatgpt = ["check", "--config", "gw.toml", "--host", "chatgpt"];
    let out = run(root, &chatgpt).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert_eq!(
        stdout,
        "overlays OK: 1 overlay file, 4 tools overlaid, 1 widget; checked against upstream 'demo' (4 tools)\n",
        "{both}"
    );
    // Offline, the upstream is not contacted.
    let out = run(
        root,
        &[
            "check",
            "--config",
            "gw.toml",
            "--offline",
            "--host",
            "chatgpt",
        ],
    )
    .await;
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
    // Nothing is wrong with show_tasks (the directories' rules aside).
    let problems = stdout.lines().filter(|l| !l.starts_with("warning: "));
    assert!(
        !problems.clone().any(|l| l.contains("render.show_tasks")),
        "{both}"
    );
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
        "overlays/clocks.toml:1: tools.clock.widget: [app-directory/native-ui: ChatGPT, Claude] the upstream already lists this tool as an MCP App (resourceUri ui://clock/native.html); the overlay's `widget` replaces that resourceUri",
        "overlays/demo.toml:1: tools.list_tasks.annotations: [app-directory/annotations: ChatGPT, Claude] readOnlyHint, destructiveHint, openWorldHint missing from its annotations",
        "overlays/demo.toml:1: tools.list_tasks: [app-directory/output-schema: ChatGPT] its results carry structuredContent (result.structured_from_text makes it from the text), but tools/list shows no outputSchema for it",
        "overlays/demo.toml:1: tools.list_tasks.security_schemes: [app-directory/oauth-in-band: ChatGPT] an oauth2 security scheme, but upstream 'demo' relays its authorization challenges as HTTP 401/403",
        "overlays/widgets/board/widget.toml: domain: [app-directory/widget-domain: ChatGPT] ChatGPT requires a unique widget domain for app submission",
        // The demo's tools no overlay names need their hints too, in a table
        // of their own in the mount's file.
        "overlays/demo.toml: tools.add_task.annotations: [app-directory/annotations: ChatGPT, Claude] readOnlyHint, destructiveHint, openWorldHint missing",
        "overlays/demo.toml: tools.complete_task.annotations: [app-directory/annotations: ChatGPT, Claude]",
        "overlays/demo.toml: tools.refresh_tasks.annotations: [app-directory/annotations: ChatGPT, Claude]",
    ];
    // The lines that would set the missing hints, under the warning.
    let fix = "\n    [tools.list_tasks.annotations]\n    readOnlyHint = false  # true if it changes nothing\n    destructiveHint = true  # false if it never deletes nor overwrites\n    openWorldHint = true  # false if it reaches nothing beyond its own data\n";

    // ChatGPT's rules (Claude's are tested below).
    let out = run(root, &["check", "--config", "gw.toml", "--host", "chatgpt"]).await;
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
            "overlays OK: 2 overlay files, 2 tools overlaid, 1 widget; checked against upstream 'demo' (4 tools), 'clocks' (1 tool), 8 warnings"
        ),
        "{both}"
    );

    let strict = [
        "check", "--config", "gw.toml", "--strict", "--host", "chatgpt",
    ];
    let out = run(root, &strict).await;
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
        Some("8 problems in overlays"),
        "{both}"
    );

    // Offline: the rules that need the listings (hints, native UI) wait.
    let out = run(
        root,
        &[
            "check",
            "--config",
            "gw.toml",
            "--offline",
            "--strict",
            "--host",
            "chatgpt",
        ],
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
    // After the directories' warnings (the widgets' heights are not
    // measured), the verdict.
    let verdict = stdout.lines().last().unwrap_or_default();
    assert!(verdict.starts_with("overlays OK: "), "{both}");
    assert!(
        verdict.contains("checked against upstream 'demo'"),
        "{both}"
    );
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
        "[tools.add_task]\nannotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }\n\n[tools.add_task.output_schema]\ntype = \"object\"\n\n[tools.list_tasks]\nannotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }\n\n[tools.complete_task]\nannotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }\n\n[tools.refresh_tasks]\nannotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }\n",
    );
    write(
        root.join("overlays/widgets/spare/index.html"),
        "<p>spare</p>\n",
    );
    let out = run(root, &["check", "--config", "gw.toml", "--host", "chatgpt"]).await;
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

/// The probe `check` is built on, against the bundled demo over streamable
/// HTTP: it opens a session, lists every page, and names the tools.
#[tokio::test]
async fn the_probe_lists_a_streamable_http_server_with_a_session() {
    use mcp_ui_model::config::{Limits, Mount, Transport};
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
        cache: Default::default(),
        auth: None,
    };
    let limits = Limits {
        request_timeout_secs: 10,
        connect_timeout_secs: 5,
        ..Limits::default()
    };
    let listing = mcp_ui_upstream::probe::list_tools(
        &mount,
        &limits,
        mcp_ui_upstream::probe::Prober::Command,
    )
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

/// Claude's directory rules in front of the demo, each found with the
/// overlay lines that fix it, then fixed by writing them: titles and hints
/// on every listed tool (a table of its own for one no overlay names), a
/// render tool's title, the helper a built-in widget calls made app-only;
/// a widget with no sample is reported as not measured, which is no pass;
/// with one, it is measured in Chromium and passes.
#[tokio::test]
async fn check_applies_claudes_rules_and_each_is_fixed_by_the_lines_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let broken = r#"[tools.list_tasks]
annotations = { readOnlyHint = true, destructiveHint = false, openWorldHint = false }
result = { structured_from_text = true }
output_schema = { type = "object", properties = { tasks = { type = "array" } } }

[render.task_table]
widget = "builtin:table"
data_tools = ["list_tasks"]
view = { actions = [{ label = "Done", tool = "complete_task", arguments = { id = "/id" } }] }
"#;
    write(root.join("overlays/demo.toml"), broken);
    let claude = ["check", "--config", "gw.toml", "--host", "claude"];
    let out = run(root, &claude).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let expected = [
        "warning: overlays/demo.toml: tools.add_task: [app-directory/title: Claude] no title: Claude's directory requires a title on every tool, and neither the upstream nor the overlay gives this one; add, in words a user reads:",
        "warning: overlays/demo.toml: tools.add_task.annotations: [app-directory/annotations: ChatGPT, Claude] readOnlyHint, destructiveHint, openWorldHint missing",
        "warning: overlays/demo.toml: tools.complete_task.visibility: [app-directory/app-only-helper: Claude] the widget of render.task_table calls `complete_task` (render.task_table.view.actions[0].tool), and nothing says whether the model calls it too",
        "warning: overlays/demo.toml:1: tools.list_tasks.title: [app-directory/title: Claude] no title",
        "warning: overlays/demo.toml:6: render.task_table.title: [app-directory/title: Claude] no title",
        "warning: overlays/demo.toml:6: render.task_table: [app-directory/widget-height: Claude] its widget `builtin:table` was not measured: Claude's directory allows inline widgets at most 500 px high, and nothing to render it with is written; add [render.task_table.sample]",
    ];
    for line in expected {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "missing {line:?}\n{both}"
        );
    }
    assert!(
        stdout.contains("\n    [tools.add_task]\n    title = \"Add task\"\n")
            && stdout.contains("\n    [tools.complete_task]\n    visibility = [\"app\"]\n")
            && stdout.contains("add to [render.task_table]:\n    title = \"Task table\"\n"),
        "{both}"
    );
    // ChatGPT's rules say nothing of titles, helpers or heights.
    let out = run(root, &["check", "--config", "gw.toml", "--host", "chatgpt"]).await;
    let (stdout, both) = streams(&out);
    assert!(
        !stdout.contains("[app-directory/title")
            && !stdout.contains("app-only-helper")
            && !stdout.contains("widget-height")
            && stdout.contains("[app-directory/annotations: ChatGPT, Claude]"),
        "{both}"
    );

    // Written as the findings say, with a sample of the table: its height
    // is measured (one short row) and passes.
    if !super::heights::chromium_ready("the measured part of check_applies_claudes_rules") {
        return;
    }
    let _turn = super::heights::turn().await;
    let hints =
        "annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }";
    let fixed = format!(
        "[tools.list_tasks]\ntitle = \"List tasks\"\nannotations = {{ readOnlyHint = true, destructiveHint = false, openWorldHint = false }}\nresult = {{ structured_from_text = true }}\noutput_schema = {{ type = \"object\", properties = {{ tasks = {{ type = \"array\" }} }} }}\n\n[render.task_table]\ntitle = \"Task table\"\nwidget = \"builtin:table\"\ndata_tools = [\"list_tasks\"]\nview = {{ actions = [{{ label = \"Done\", tool = \"complete_task\", arguments = {{ id = \"/id\" }} }}] }}\nsample = {{ arguments = {{ tasks = [{{ id = 1, title = \"Write\", done = false }}] }} }}\n\n[tools.add_task]\ntitle = \"Add task\"\n{hints}\n\n[tools.complete_task]\ntitle = \"Complete task\"\nvisibility = [\"app\"]\n{hints}\n\n[tools.refresh_tasks]\ntitle = \"Refresh tasks\"\n{hints}\n"
    );
    write(root.join("overlays/demo.toml"), &fixed);
    let out = run(root, &claude).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let warnings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings, Vec::<&str>::new(), "{both}");
    assert!(
        text(&out.stderr).contains("measuring 1 widget's height in "),
        "{both}"
    );
    let mut strict = claude.to_vec();
    strict.push("--strict");
    let out = run(root, &strict).await;
    assert_eq!(out.status.code(), Some(0), "{}", streams(&out).1);
    // Not measured is no pass: without a browser, --strict fails on it.
    strict.extend(["--browser", "/nonexistent/chromium"]);
    let out = run(root, &strict).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.contains(
            "overlays/demo.toml:7: render.task_table.sample: [app-directory/widget-height: Claude] its widget `builtin:table` was not measured: --browser /nonexistent/chromium: no such file"
        ),
        "{both}"
    );
}

/// `--host` chooses whose rules apply, and `--strict` fails only on those:
/// every demo tool hinted but untitled passes ChatGPT's rules and fails
/// Claude's (and both). An endpoint that takes a header from its clients is
/// reported against the configuration, offline too.
#[tokio::test]
async fn host_chooses_the_rules_and_strict_fails_only_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let hints =
        "annotations = { readOnlyHint = false, destructiveHint = false, openWorldHint = false }";
    let overlay: String = ["list_tasks", "add_task", "complete_task", "refresh_tasks"]
        .iter()
        .map(|t| format!("[tools.{t}]\n{hints}\n\n"))
        .collect();
    write(root.join("overlays/demo.toml"), &overlay);
    for (host, status) in [("chatgpt", 0), ("claude", 1), ("both", 1)] {
        let args = ["check", "--config", "gw.toml", "--strict", "--host", host];
        let out = run(root, &args).await;
        let (stdout, both) = streams(&out);
        assert_eq!(out.status.code(), Some(status), "--host {host}\n{both}");
        let titles = stdout.matches("[app-directory/title: Claude]").count();
        assert_eq!(titles, if host == "chatgpt" { 0 } else { 4 }, "{both}");
    }
    // The default is both.
    let out = run(root, &["check", "--config", "gw.toml", "--strict"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", streams(&out).1);

    // A static header the host would have to send: no sign-in Claude knows.
    write(
        root.join("gw.toml"),
        &format!(
            "[[upstream]]\nname = \"notes\"\nurl = \"http://127.0.0.1:9/mcp\"\nforward_headers = [\"x-api-key\"]\n\n{LIMITS}"
        ),
    );
    std::fs::remove_file(root.join("overlays/demo.toml")).unwrap();
    write(root.join("overlays/notes.toml"), "");
    let args = [
        "check",
        "--config",
        "gw.toml",
        "--offline",
        "--host",
        "claude",
    ];
    let out = run(root, &args).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains(
            "warning: gw.toml: upstream[0].forward_headers: [app-directory/sign-in: Claude] endpoint 'notes' asks no sign-in but forwards the client's x-api-key to its upstream"
        ),
        "{both}"
    );
    let out = run(
        root,
        &[
            "check",
            "--config",
            "gw.toml",
            "--offline",
            "--host",
            "chatgpt",
        ],
    )
    .await;
    assert!(!streams(&out).0.contains("sign-in"), "{}", streams(&out).1);
}
