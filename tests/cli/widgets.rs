//! Widgets as `check` and `init` see them: which bridge each gets, every
//! reference resolved, a nested copy of the example named, and `init
//! --widget`.

use super::*;

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
