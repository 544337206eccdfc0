//! Mount files beyond their tools: render tools, files naming an app,
//! the freshness of a tool listing, and samples.

use super::*;

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
