//! Tests of loading: parse locations, and real directories read (errors
//! collected, located, and nothing read from outside the overlay directory).
//!
//! - `reading`: what is read: never outside the directory, never past the
//!   size limits;
//! - `mount_files`: render tools, files naming an app, tool listings and
//!   samples.

use std::fs;
use std::path::Path;

use serde_json::json;

use super::parse::*;
use super::*;
use crate::overlay::*;

mod mount_files;
mod reading;

#[test]
fn lines_and_key_lines() {
    let text = "a = 1\n[csp]\nframe_domains = [\"x\"]\n";
    assert_eq!(line_of(text, 0), 1);
    assert_eq!(line_of(text, 6), 2);
    assert_eq!(key_line(text, "csp.frame_domains[0]"), Some(3));
    assert_eq!(key_line("{\n  \"domain\": \"x\"\n}", "domain"), Some(2));
    assert_eq!(key_line(text, "entry"), None);
    let inline = "title = \"t\"\ndomain = { claude = \"https://x\" }\n";
    assert_eq!(key_line(inline, "domain.claude"), Some(2));
    let table = "[domain]\nchatgpt = \"a\"\nclaude = \"b\"\n";
    assert_eq!(key_line(table, "domain.claude"), Some(3));
}

#[test]
fn json_position_is_reported_apart() {
    let e = serde_json::from_str::<ToolOverlay>("{\n \"widgt\": 1}").unwrap_err();
    let located = Located::json(&e, 10);
    assert_eq!(located.line, Some(11));
    assert!(
        located.reason == "unknown key `widgt`; did you mean `widget`?",
        "{}",
        located.reason
    );
    assert!(!located.reason.contains("at line"));
}

#[test]
fn toml_errors_always_have_a_reason() {
    // Found by fuzzing (overlay_load): a control character in a comment
    // gave an error with an empty message.
    let source = "#:schema x\x0fy\nentry = \"index.html\"\n";
    let e = toml::from_str::<WidgetManifest>(source).unwrap_err();
    let located = Located::toml(&e, source);
    assert!(!located.reason.is_empty(), "{e:?}");
    assert_eq!(located.line, Some(1));
}

#[test]
fn implied_and_dotted_tool_tables_parse() {
    let text = "# x\n[tools.add_task.result]\nstructured_from_text = true\n\n[tools]\nlist_tasks.title = \"List\"\n";
    let (_, tools, _, _) = parse_toml(text).unwrap();
    let by_name = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
    let add = by_name("add_task");
    assert!(add.tool.as_ref().unwrap().result.structured_from_text);
    assert_eq!(add.line, Some(2));
    let list = by_name("list_tasks");
    assert_eq!(list.tool.as_ref().unwrap().title.as_deref(), Some("List"));
    assert_eq!(
        tool_line("[tools.add]\n[tools.add_task]\n", "add_task"),
        Some(2)
    );
}

// === directories ===

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn errors(root: &Path) -> Vec<String> {
    let errors = load_dir(root).expect_err("should fail");
    // Paths relative to the temporary directory, for stable assertions.
    let prefix = format!("{}/", root.display());
    errors
        .0
        .iter()
        .map(|e| e.to_string().replace(&prefix, ""))
        .collect()
}

#[test]
fn loads_the_common_case() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n",
    );
    write(root, "widgets/clock/index.html", "<p>clock</p>");
    write(root, "README.md", "ignored");
    write(root, "schema/overlay.schema.json", "{ \"ignored\": true }");
    write(root, ".time.toml.swp", "ignored");
    let set = load_dir(root).unwrap();
    let mount = set.mount("time").expect("mount named after the file");
    assert_eq!(
        mount.tool("get_current_time").unwrap().widget.as_deref(),
        Some("clock")
    );
    let clock = set.widgets().get("clock").unwrap();
    assert_eq!(clock.html, "<p>clock</p>");
    assert!(clock.meta.is_empty());
    assert_eq!(set.widgets().by_uri(&clock.uri), Some(clock));
    assert_eq!(set.widgets_for("time").len(), 1);
    assert!(set.widgets_for("other").is_empty());
}

#[test]
fn json_files_upstream_override_and_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let overlay = json!({
        "$schema": "./schema/overlay.schema.json",
        "upstream": "everything",
        "tools": { "echo": { "widget": "board", "invoking": "Echoing…", "visibility": ["app"] } }
    });
    write(root, "any-name.json", &overlay.to_string());
    write(
        root,
        "widgets/board/widget.toml",
        "entry = \"web/main.html\"\nprefers_border = true\n[csp]\nconnect_domains = [\"https://api.example.com\"]\nresource_domains = [\"https://cdn.example.com\"]\n",
    );
    write(
        root,
        "widgets/board/web/main.html",
        "<link rel=\"stylesheet\" href=\"main.css\"><script src=\"https://cdn.example.com/lib.js\"></script><script src=\"../app.js\"></script>",
    );
    write(root, "widgets/board/web/main.css", "p{}");
    write(root, "widgets/board/app.js", "go()");
    let set = load_dir(root).unwrap();
    assert!(set.mount("any-name").is_none());
    let echo = set.mount("everything").unwrap().tool("echo").unwrap();
    assert_eq!(echo.visibility, Some(vec![Audience::App]));
    let board = set.widgets().get("board").unwrap();
    assert_eq!(
        board.html,
        "<style>p{}</style><script src=\"https://cdn.example.com/lib.js\"></script><script>go()</script>"
    );
    assert_eq!(board.meta["ui"]["prefersBorder"], true);
}

#[test]
fn every_problem_is_reported_with_file_line_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        concat!(
            "[tools.get_current_time]\n",
            "widget = \"clock\"\n",
            "invoking = \"This status text is far too long to be shown by ChatGPT, which stops at 64\"\n",
            "\n",
            "[tools.convert_time]\n",
            "widgt = \"clock\"\n",
            "\n",
            "[tools.third]\n",
            "widget = \"nowhere\"\n",
            "security_schemes = [{ type = \"noauth\", extra = 1 }]\n",
        ),
    );
    write(root, "broken.toml", "[tools.a\nwidget = 1\n");
    write(root, "top.json", "{\n  \"tools\": {},\n  \"typo\": 1\n}");
    write(
        root,
        "nested.json",
        "{\"tools\": {\n  \"t\": {\n    \"visibility\": [\"everyone\"]\n  }\n}}",
    );
    write(root, "widgets/clock/index.html", "<p></p>");
    write(root, "widgets/Bad Name/index.html", "<p></p>");
    write(
        root,
        "widgets/csp/widget.toml",
        "[csp]\nconnect_domains = [\"https://ok.example.com\", \"*\"]\nframe_domains = [\"https://x.com/path\"]\nextra = 1\n",
    );
    write(root, "widgets/csp/index.html", "");
    write(
        root,
        "widgets/assets/widget.toml",
        "[csp]\nresource_domains = [\"https://allowed.example.com\"]\n",
    );
    write(
        root,
        "widgets/assets/index.html",
        "<html>\n<script src=\"../escape.js\"></script>\n<script src=\"https://blocked.example.com/x.js\"></script>\n<link rel=\"stylesheet\" href=\"missing.css\">\n",
    );
    let got = errors(root);
    let expected = [
        "broken.toml:1: invalid table header; expected `.`, `]`",
        "nested.json:3: tools.t: unknown variant `everyone`, expected `model` or `app`",
        "time.toml:1: tools.get_current_time.invoking: 74 characters; ChatGPT allows at most 64",
        "time.toml:6: tools.convert_time: unknown key `widgt`; did you mean `widget`?",
        "time.toml:8: tools.third.security_schemes: unknown key `extra`: this table takes none",
        "top.json:3: unknown key `typo`; the keys are `$schema`, `upstream`, `tools`, `render`, `tools_list`",
        "widgets/Bad Name: widget folder `Bad Name`: names are 1 to 63 of a-z, 0-9, `-` and `_`, starting with a letter or digit (the name is the host of its ui:// URI)",
        "widgets/assets/index.html:2: script src \"../escape.js\": leaves the widget folder",
        "widgets/assets/index.html:4: stylesheet href \"missing.css\": cannot open: No such file or directory (os error 2)",
        "widgets/csp/widget.toml:4: unknown key `extra`; the keys are `connect_domains`, `resource_domains`, `frame_domains`, `base_uri_domains`, `redirect_domains`",
    ];
    assert_eq!(got, expected, "\n{}", got.join("\n"));
}

#[test]
fn manifest_rules_and_remote_assets_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/csp/widget.toml",
        "[csp]\nconnect_domains = [\"https://ok.example.com\", \"*\"]\nframe_domains = [\"https://x.com/path\"]\n",
    );
    write(root, "widgets/csp/index.html", "");
    write(
        root,
        "widgets/cdn/index.html",
        "<p>\n<script src=\"https://cdn.example.com/x.js\"></script>",
    );
    write(
        root,
        "app.toml",
        "[tools.t]\nwidget = \"csp\"\n[tools.u]\nwidget = \"absent\"\n",
    );
    let got = errors(root);
    let expected = [
        "app.toml:3: tools.u.widget: no widget folder `widgets/absent`",
        "widgets/cdn/index.html:2: \"https://cdn.example.com/x.js\" is remote, and its origin https://cdn.example.com is not in csp.resource_domains of the manifest, so hosts would block it",
        "widgets/csp/widget.toml:2: csp.connect_domains[1]: a bare `*` allows every origin (and ChatGPT rejects it); list the origins",
        "widgets/csp/widget.toml:3: csp.frame_domains[0]: `https://x.com/path` has a path; an origin is scheme://host[:port] only (try `https://x.com`)",
    ];
    assert_eq!(got, expected, "\n{}", got.join("\n"));
}

#[test]
fn a_widget_folder_one_level_down_is_pointed_at() {
    // `cp -r examples/time/overlays my-overlays` into an existing directory
    // nests the copy: my-overlays/overlays/widgets/clock.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n",
    );
    write(root, "overlays/widgets/clock/index.html", "<p>clock</p>");
    write(
        root,
        "overlays/time.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n",
    );
    let got = load_dir(root).expect_err("should fail").0;
    assert_eq!(got.len(), 1, "{got:?}");
    let r = root.display();
    assert_eq!(
        got[0].to_string(),
        format!(
            "{r}/time.toml:1: tools.get_current_time.widget: no widget folder `widgets/clock`; but {r}/overlays/widgets/clock exists, one level down: was a folder copied into {r} instead of its content? Move its files up (`cp -r SRC/. {r}/` copies a folder's content)"
        )
    );
    // Nothing one level down: the plain reason.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "time.toml", "[tools.t]\nwidget = \"clock\"\n");
    write(dir.path(), "other/widgets/dial/index.html", "");
    assert_eq!(
        errors(dir.path()),
        ["time.toml:1: tools.t.widget: no widget folder `widgets/clock`"]
    );
}

/// A widget name one or two letters off a folder's is a typo: said with the
/// name meant, for a tool and a render tool alike.
#[test]
fn a_misspelt_widget_name_gets_the_folder_meant() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "widgets/task-board/index.html", "<p>board</p>");
    write(root, "widgets/clock/index.html", "<p>clock</p>");
    write(
        root,
        "demo.toml",
        "[tools.t]\nwidget = \"task-bord\"\n\n[render.r]\nwidget = \"clok\"\ndata_tools = [\"t\"]\ninput_schema = { type = \"object\" }\n\n[tools.u]\nwidget = \"calendar\"\n",
    );
    assert_eq!(
        errors(root),
        [
            "demo.toml:1: tools.t.widget: no widget folder `widgets/task-bord`; did you mean `task-board`?",
            "demo.toml:4: render.r.widget: no widget folder `widgets/clok`; did you mean `clock`?",
            "demo.toml:9: tools.u.widget: no widget folder `widgets/calendar`",
        ]
    );
}

#[test]
fn per_host_domains_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/inline/widget.toml",
        "title = \"t\"\ndomain = { chatgpt = \"w.example.com\" }\n",
    );
    write(root, "widgets/inline/index.html", "");
    write(
        root,
        "widgets/table/widget.toml",
        "[domain]\nchatgpt = \"https://w.example.com\"\nclaude = \"https://w.example.com\"\n",
    );
    write(root, "widgets/table/index.html", "");
    write(
        root,
        "widgets/typo/widget.json",
        "{\n \"domain\": {\"claud\": \"x\"}\n}",
    );
    write(root, "widgets/typo/index.html", "");
    let got = errors(root);
    let expected = [
        "widgets/inline/widget.toml:2: domain.chatgpt: `w.example.com` is a bare host name; ChatGPT's widget domain is an origin (try `https://w.example.com`)",
        "widgets/table/widget.toml:3: domain.claude: `https://w.example.com` is an origin; Claude's widget domain is a bare host name such as `w.example.com`, and the one Claude accepts is hashed from the endpoint URL: leave `claude` out and set public_url to have the gateway derive it",
        "widgets/typo/widget.json:2: unknown key `claud`; did you mean `claude`?",
    ];
    assert_eq!(got, expected, "\n{}", got.join("\n"));
}

#[test]
fn a_tool_defined_twice_for_one_mount_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "time.toml", "[tools.a]\ntitle = \"A\"\n");
    write(
        root,
        "team-b.toml",
        "upstream = \"time\"\n[tools.a]\ntitle = \"B\"\n[tools.b]\ntitle = \"B\"\n",
    );
    let got = errors(root);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("time.toml:1: tools.a: mount `time` already has this tool in "),
        "{}",
        got[0]
    );
    assert!(got[0].ends_with("team-b.toml"), "{}", got[0]);
}

#[test]
fn widgets_name_each_other_by_their_current_uris_even_in_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let list = "<a data-template=\"{{widget:detail}}\">open</a>";
    let detail = "<script>const back = \"{{widget:list}}\";</script>";
    write(root, "widgets/list/index.html", list);
    write(root, "widgets/detail/index.html", detail);
    write(root, "widgets/alone/index.html", "<p>alone</p>");
    let set = load_dir(root).unwrap();
    let uri = |set: &OverlaySet, name: &str| set.widgets().get(name).unwrap().uri.clone();
    let html = |set: &OverlaySet, name: &str| set.widgets().get(name).unwrap().html.clone();
    let (list_uri, detail_uri) = (uri(&set, "list"), uri(&set, "detail"));
    assert!(list_uri.starts_with("ui://list/") && detail_uri.starts_with("ui://detail/"));
    assert_eq!(
        html(&set, "list"),
        format!("<a data-template=\"{detail_uri}\">open</a>")
    );
    assert_eq!(
        html(&set, "detail"),
        format!("<script>const back = \"{list_uri}\";</script>")
    );
    assert!(set.widgets().by_uri(&list_uri).is_some());
    // A change to one widget of the cycle gives both a new URI, and each
    // names the other's new one; a widget outside it keeps its URI.
    write(
        root,
        "widgets/detail/index.html",
        &detail.replace("back", "previous"),
    );
    let next = load_dir(root).unwrap();
    assert_ne!(uri(&next, "list"), list_uri);
    assert_ne!(uri(&next, "detail"), detail_uri);
    assert!(html(&next, "list").contains(&uri(&next, "detail")));
    assert!(html(&next, "detail").contains(&uri(&next, "list")));
    assert_eq!(uri(&next, "alone"), uri(&set, "alone"));
    // Loading twice gives the same URIs.
    assert_eq!(uri(&load_dir(root).unwrap(), "list"), uri(&next, "list"));

    write(root, "widgets/alone/index.html", "<p>{{widget:nobody}}</p>");
    let e = load_dir(root).unwrap_err().to_string();
    assert!(e.contains("{{widget:nobody}} names no widget"), "{e}");
}
