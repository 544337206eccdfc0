//! Tests of loading: parse locations, and real directories read (errors
//! collected, located, and nothing read from outside the overlay directory).

use std::fs;
use std::path::Path;

use serde_json::json;

use super::parse::*;
use super::*;
use crate::overlay::*;

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

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_overlay_directory_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.js", "steal()");
    write(outside.path(), "other.toml", "[tools.x]\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/w/index.html",
        "<script src=\"link.js\"></script>",
    );
    std::os::unix::fs::symlink(
        outside.path().join("secret.js"),
        root.join("widgets/w/link.js"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("other.toml"), root.join("linked.toml"))
        .unwrap();
    // A symlink that stays inside is fine.
    write(root, "shared/lib.js", "ok()");
    write(
        root,
        "widgets/v/index.html",
        "<script src=\"lib.js\"></script>",
    );
    std::os::unix::fs::symlink(root.join("shared/lib.js"), root.join("widgets/v/lib.js")).unwrap();
    let got = errors(root);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with("linked.toml: resolves to ")
            && got[0].contains("outside the overlay directory"),
        "{}",
        got[0]
    );
    assert!(
        got[1].starts_with("widgets/w/index.html:1: script src \"link.js\": resolves to "),
        "{}",
        got[1]
    );
}

#[test]
fn a_missing_directory_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let got = load_dir(&dir.path().join("nope")).unwrap_err();
    assert_eq!(got.0.len(), 1);
    assert!(
        got.to_string()
            .starts_with("1 problem in the overlays:\n  ")
    );
}

#[test]
fn render_tools_load_with_their_schema_taken_from_the_data_tool() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "demo.toml",
        "[tools.list]\noutput_schema = { type = \"object\", required = [\"tasks\"] }\n\n[render.show]\nwidget = \"board\"\ndata_tools = [\"list\"]\n",
    );
    write(root, "widgets/board/index.html", "<p>board</p>");
    let set = load_dir(root).unwrap();
    let mount = set.mount("demo").unwrap();
    let render = mount.render_tool("show").unwrap();
    assert_eq!(
        mount.render_input_schema(render).unwrap()["required"],
        json!(["tasks"])
    );
    assert_eq!(set.widgets_for("demo").len(), 1);
    // A mount file with render tools only is a mount too.
    write(
        root,
        "other.json",
        r#"{"render": {"show": {"widget": "board", "data_tools": ["x"], "input_schema": {"type": "object"}}}}"#,
    );
    let set = load_dir(root).unwrap();
    assert!(set.mount("other").unwrap().render_tool("show").is_some());
}

#[test]
fn render_tool_problems_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "demo.toml",
        "[tools.list]\ntitle = \"List\"\n\n[render.list]\nwidget = \"board\"\ndata_tools = [\"list\"]\ninput_schema = { type = \"object\" }\n\n[render.show]\nwidget = \"nowhere\"\ndata_tools = []\ninvoking = \"\"\"\nline\ntwo\"\"\"\n",
    );
    write(root, "widgets/board/index.html", "<p>board</p>");
    let errors = errors(root);
    assert_eq!(
        errors,
        [
            "demo.toml:4: render.list: `list` is also overlaid as `[tools.list]`, an upstream tool; a render tool needs a name of its own",
            "demo.toml:4: render.list.data_tools: a render tool cannot be its own data tool",
            "demo.toml:9: render.show.widget: no widget folder `widgets/nowhere`",
            "demo.toml:9: render.show.data_tools: empty: name the upstream tool(s) whose results this tool renders",
            "demo.toml:9: render.show.invoking: a status text is one line",
            "demo.toml:9: render.show.input_schema: missing, and no data tool's overlay declares an output_schema to take it from",
        ],
    );
    // Unknown keys are errors, as for tools.
    write(
        root,
        "demo.toml",
        "[render.show]\nwidget = \"board\"\ndata_tools = [\"l\"]\nwidgt = 1\n",
    );
    let unknown = super::tests::errors(root);
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(
        unknown[0].ends_with("unknown key `widgt`; did you mean `widget`?"),
        "{unknown:?}"
    );
}

/// A file of `len` bytes that takes no disk space (a hole, read as zeros).
fn sparse(root: &Path, path: &str, len: u64) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(path).unwrap().set_len(len).unwrap();
}

#[test]
fn oversize_files_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "app.toml", "[tools.t]\nwidget = \"big\"\n");
    write(
        root,
        "widgets/big/index.html",
        "<p>x</p>\n<script src=\"huge.js\"></script>\n",
    );
    // 300 MB: reading it would cost gigabytes once inlined; its size alone
    // refuses it, under the default limit.
    sparse(root, "widgets/big/huge.js", 300_000_000);
    let errors = errors(root);
    assert_eq!(
        errors,
        [
            "widgets/big/index.html:2: script src \"huge.js\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)",
        ],
    );
    // The entry document and mount files are bounded the same way.
    sparse(root, "widgets/big/index.html", 2_000);
    let e = load_dir_within(root, 1_000).unwrap_err().to_string();
    assert!(
        e.contains("widgets/big/index.html: is 2000 bytes, over the 1000-byte limit (limits.max_widget_bytes)"),
        "{e}"
    );
    let e = inspect_dir_within(root, 10).errors;
    assert!(
        e.iter()
            .any(|e| e.file.ends_with("app.toml") && e.reason.contains("over the 10-byte limit")),
        "{e:?}"
    );
}

#[test]
fn a_widget_with_its_assets_inlined_stays_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let html = "<script src=\"a.js\"></script><script src=\"a.js\"></script>";
    write(root, "widgets/w/index.html", html);
    write(root, "widgets/w/a.js", &"x".repeat(500));
    // The document and one copy fit in 1,000 bytes; a second copy does not.
    let e = load_dir_within(root, 1_000).unwrap_err().to_string();
    let taken = html.len() + 500;
    assert!(
        e.contains(&format!(
            "script src \"a.js\": is 500 bytes; with the {taken} bytes of the widget's other files that is over the 1000-byte limit (limits.max_widget_bytes)"
        )),
        "{e}"
    );
    let set = load_dir_within(root, 2_000).unwrap();
    assert!(set.widgets().get("w").unwrap().html.len() > 1_000);
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

// === files naming an app ===

fn suite_options() -> LoadOptions {
    LoadOptions {
        apps: vec![AppScope {
            name: "suite".into(),
            members: vec![
                ("time".into(), String::new()),
                ("notes".into(), "notes_".into()),
            ],
        }],
        ..LoadOptions::default()
    }
}

#[test]
fn a_file_naming_an_app_gives_each_member_what_its_own_file_would() {
    let app_dir = tempfile::tempdir().unwrap();
    let own_dir = tempfile::tempdir().unwrap();
    for root in [app_dir.path(), own_dir.path()] {
        write(root, "widgets/clock/index.html", "<p>clock</p>");
        write(root, "widgets/board/index.html", "<p>board</p>");
    }
    write(
        app_dir.path(),
        "suite.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n\n[tools.notes_list]\noutput_schema = { type = \"object\" }\n\n[render.notes_show]\nwidget = \"board\"\ndata_tools = [\"notes_list\"]\n",
    );
    write(
        own_dir.path(),
        "time.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n",
    );
    write(
        own_dir.path(),
        "notes.toml",
        "[tools.list]\noutput_schema = { type = \"object\" }\n\n[render.show]\nwidget = \"board\"\ndata_tools = [\"list\"]\n",
    );
    let options = suite_options();
    let by_app = load_dir_with(app_dir.path(), &options).unwrap();
    let by_member = load_dir_with(own_dir.path(), &options).unwrap();
    assert!(by_app.mount("suite").is_none());
    for mount in ["time", "notes"] {
        let (a, m) = (
            by_app.mount(mount).unwrap(),
            by_member.mount(mount).unwrap(),
        );
        assert_eq!(a.tools().collect::<Vec<_>>(), m.tools().collect::<Vec<_>>());
        assert_eq!(
            a.render_tools().collect::<Vec<_>>(),
            m.render_tools().collect::<Vec<_>>()
        );
        assert_eq!(by_app.widgets_for(mount), by_member.widgets_for(mount));
    }
    assert_eq!(by_app.widgets(), by_member.widgets());
    // Served in the app, counted for the members, not an unknown upstream.
    let inspection = inspect_dir_with(app_dir.path(), &options);
    assert!(inspection.unconfigured(&["time", "notes"]).is_empty());
    assert!(
        inspection
            .mount_summary("notes")
            .starts_with("upstream 'notes': overlays from suite.toml (1 tool, 1 render tool"),
        "{}",
        inspection.mount_summary("notes")
    );
    // Without the app configured, the file names an unknown upstream.
    let plain = inspect_dir_with(app_dir.path(), &LoadOptions::default());
    assert_eq!(plain.unconfigured(&["time", "notes"]).len(), 1);
}

#[test]
fn names_no_single_member_owns_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "widgets/board/index.html", "<p>board</p>");
    write(
        root,
        "time.toml",
        "[tools.get_current_time]\ntitle = \"Now\"\n",
    );
    write(
        root,
        "suite.toml",
        "[tools.get_current_time]\ntitle = \"Again\"\n\n[render.notes_show]\nwidget = \"board\"\ndata_tools = [\"list\"]\ninput_schema = { type = \"object\" }\n",
    );
    write(
        root,
        "pair.json",
        "{\"upstream\": \"pair\", \"tools\": {\n  \"echo\": {\"title\": \"E\"}\n}}\n",
    );
    let mut options = suite_options();
    options.apps.push(AppScope {
        name: "pair".into(),
        members: vec![
            ("time".into(), String::new()),
            ("notes".into(), String::new()),
        ],
    });
    let errors = load_dir_with(root, &options).expect_err("should fail");
    let prefix = format!("{}/", root.display());
    let got: Vec<String> = errors
        .0
        .iter()
        .map(|e| e.to_string().replace(&prefix, ""))
        .collect();
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(
        got[0],
        "pair.json:2: tools.echo: app `pair` has several members without a prefix (`time`, `notes`), so `echo` could be a tool of any of them; write it in the member's own file (`time.toml`, `notes.toml`) or give the members a `prefix`"
    );
    assert!(
        got[1].starts_with(
            "suite.toml:4: render.notes_show.data_tools: `list` is not a tool of member `notes`"
        ),
        "{}",
        got[1]
    );
    // An entry of the app's file and one of the member's own collide as
    // two files of one mount do.
    assert!(
        got[2].starts_with(
            "time.toml:1: tools.get_current_time: mount `time` already has this tool in "
        ),
        "{}",
        got[2]
    );
    assert!(got[2].ends_with("suite.toml"), "{}", got[2]);
}

#[test]
fn a_mount_file_sets_the_freshness_of_its_tool_listing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        "tools_list = { ttl_ms = 60000, cache_scope = \"public\" }\n",
    );
    write(root, "notes.json", r#"{"tools_list": {"ttl_ms": 5}}"#);
    let set = load_dir(root).unwrap();
    let time = set.mount("time").expect("a file with only tools_list");
    assert_eq!(
        time.tools_list(),
        Some(ToolsList {
            ttl_ms: 60_000,
            cache_scope: CacheScope::Public
        })
    );
    let notes = set.mount("notes").unwrap().tools_list().unwrap();
    assert_eq!((notes.ttl_ms, notes.cache_scope), (5, CacheScope::Private));

    // Longer than a day, set twice for one mount, or misspelt: each named.
    write(root, "time.toml", "[tools_list]\nttl_ms = 86400001\n");
    write(
        root,
        "again.toml",
        "upstream = \"notes\"\ntools_list = { ttl_ms = 1, scope = \"public\" }\n",
    );
    write(
        root,
        "more.toml",
        "upstream = \"notes\"\ntools_list.ttl_ms = 1\n",
    );
    let found = errors(root);
    assert!(
        found.iter().any(|e| e.contains("time.toml:2")
            && e.contains("tools_list.ttl_ms")
            && e.contains("longer than a day")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|e| e.contains("again.toml:2")
                && e.contains("the keys are `ttl_ms`, `cache_scope`")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|e| e.contains("has its tools_list in") && e.contains("tools_list")),
        "{found:?}"
    );
}

/// A `sample` (what a widget is measured with): a tool's needs a widget
/// and the result's structuredContent, a render tool's takes arguments
/// only; each problem named at its file, line and key.
#[test]
fn samples_are_checked_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "widgets/board/index.html", "<p>board</p>");
    write(
        root,
        "demo.toml",
        "[tools.list]\nwidget = \"board\"\noutput_schema = { type = \"object\" }\n\n[tools.list.sample]\narguments = { all = true }\nstructured_content = { tasks = [] }\n\n[render.show]\nwidget = \"board\"\ndata_tools = [\"list\"]\nsample = { arguments = { tasks = [] } }\n",
    );
    let set = load_dir(root).expect("valid samples load");
    let sample = set
        .mount("demo")
        .unwrap()
        .tool("list")
        .unwrap()
        .sample
        .clone();
    assert_eq!(
        sample.unwrap().structured_content,
        Some(serde_json::Map::from_iter([("tasks".into(), json!([]))]))
    );
    write(
        root,
        "demo.toml",
        "[tools.list]\nwidget = \"board\"\nsample = { arguments = {} }\n\n[tools.add]\nsample = { structured_content = {} }\n\n[render.show]\nwidget = \"board\"\ndata_tools = [\"list\"]\ninput_schema = { type = \"object\" }\nsample = { structured_content = {} }\n\n[tools.odd]\nwidget = \"board\"\nsample = { result = {} }\n",
    );
    assert_eq!(
        errors(root),
        [
            "demo.toml:1: tools.list.sample.structured_content: missing: the result's structuredContent the widget renders (a sample is never sent to the upstream, so the result is written here)",
            "demo.toml:5: tools.add.sample: the tool has no widget: a sample is what its widget is shown with when measured; set `widget`, or remove the sample",
            "demo.toml:8: render.show.sample.structured_content: a render tool's result is its arguments: write the data as sample.arguments",
            "demo.toml:14: tools.odd.sample: unknown key `result`; the keys are `arguments`, `structured_content`",
        ],
    );
}
