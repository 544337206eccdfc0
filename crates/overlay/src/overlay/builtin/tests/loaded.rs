//! Built-in widgets in a loaded overlay directory, and in the rules that
//! check a tool and a render tool: their documents, widget domains,
//! located problems, actions, charts and arguments.

use super::*;

#[test]
fn a_builtin_widget_loads_as_a_widget_of_its_tool() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("demo.toml"),
        r#"
[tools.list_tasks]
widget = "builtin:table"
result = { structured_from_text = true }
[tools.list_tasks.view]
columns = ["title", { key = "done", format = "boolean" }]

[tools.get_task]
widget = "builtin:kv"
"#,
    )
    .unwrap();
    fs::write(
        dir.path().join("other.toml"),
        "[tools.list_tasks]\nwidget = \"builtin:table\"\n",
    )
    .unwrap();
    let set = load_dir(dir.path()).unwrap();
    let demo = set.mount("demo").unwrap();
    let name = demo.tool("list_tasks").unwrap().widget.clone().unwrap();
    assert_eq!(name, widget_name("demo", "list_tasks", Kind::Table));
    let widget = set.widgets().get(&name).unwrap();
    assert!(widget.uri.starts_with(&format!("ui://{name}/")) && widget.uri.ends_with(".html"));
    assert!(
        widget.html.contains(
            "\"columns\":[{\"key\":\"title\"},{\"key\":\"done\",\"format\":\"boolean\"}]"
        )
    );
    assert_eq!(
        widget.meta["ui"]["csp"],
        json!({"connectDomains": [], "resourceDomains": []})
    );
    assert_eq!(
        widget.meta["openai/widgetCSP"],
        json!({"connect_domains": [], "resource_domains": []})
    );
    // One widget per tool, in every mount; listed for its mount only.
    let other = set
        .mount("other")
        .unwrap()
        .tool("list_tasks")
        .unwrap()
        .widget
        .clone()
        .unwrap();
    assert_ne!(other, name);
    assert_eq!(set.widgets_for("demo").len(), 2);
    assert_eq!(set.widgets_for("other").len(), 1);
}

/// A built-in widget takes a widget domain as a widget folder's manifest
/// does: ChatGPT's origin reaches `_meta.ui.domain` and
/// `openai/widgetDomain`, Claude's its `_meta.ui.domain`; a value in the
/// wrong form is refused where it is written.
#[test]
fn a_builtin_widget_gets_the_widget_domain_its_view_sets() {
    use crate::host::{HostKind, Target};
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("demo.toml"),
        r#"
[tools.list_tasks]
widget = "builtin:table"
view = { domain = { chatgpt = "https://tasks.example.com", claude = "c0ffee.claudemcpcontent.com" } }

[tools.get_task]
widget = "builtin:kv"
view = { domain = "https://task.example.com" }
"#,
    )
    .unwrap();
    let set = load_dir(dir.path()).unwrap();
    let demo = set.mount("demo").unwrap();
    let widget = |tool: &str| {
        let name = demo.tool(tool).unwrap().widget.clone().unwrap();
        set.widgets().get(&name).unwrap().clone()
    };
    let table = widget("list_tasks");
    let chatgpt = table.meta_for(&Target::new(HostKind::ChatGpt, None));
    assert_eq!(chatgpt["openai/widgetDomain"], "https://tasks.example.com");
    assert_eq!(chatgpt["ui"]["domain"], "https://tasks.example.com");
    let claude = table.meta_for(&Target::new(HostKind::Claude, None));
    assert_eq!(claude["ui"]["domain"], "c0ffee.claudemcpcontent.com");
    assert!(!claude.contains_key("openai/widgetDomain"));
    let kv = widget("get_task");
    let chatgpt = kv.meta_for(&Target::new(HostKind::ChatGpt, None));
    assert_eq!(chatgpt["openai/widgetDomain"], "https://task.example.com");
    // The domain is part of the resource, not of the document's options.
    assert!(!kv.html.contains("task.example.com"));

    let view: View = toml::from_str("domain = { chatgpt = \"tasks.example.com\" }").unwrap();
    assert_eq!(
        view.domain,
        Some(WidgetDomain::PerHost(HostDomains {
            chatgpt: Some("tasks.example.com".into()),
            ..HostDomains::default()
        }))
    );
    let mut problems = Vec::new();
    check_view(Some("builtin:list"), Some(&view), &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].place, "view.domain.chatgpt");
}

#[test]
fn builtin_problems_are_located_like_other_overlay_errors() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("demo.toml"),
        r#"# tasks
[tools.list_tasks]
widget = "builtin:table"
[tools.list_tasks.view]
columns = ["titel"]
[tools.list_tasks.output_schema]
type = "object"
properties.tasks = { type = "array", items = { type = "object", properties = { title = { type = "string" } } } }

[tools.show]
widget = "builtin:tabel"
"#,
    )
    .unwrap();
    let errors = load_dir(dir.path()).unwrap_err();
    let lines: Vec<String> = errors
        .0
        .iter()
        .map(|e| {
            e.to_string()
                .replace(&dir.path().display().to_string(), "DIR")
        })
        .collect();
    assert_eq!(
        lines,
        [
            "DIR/demo.toml:2: tools.list_tasks.view.columns[0]: `titel` is not in the output schema's records at `/tasks`: `/` has no property `titel`; did you mean `title`?",
            "DIR/demo.toml:10: tools.show.widget: `builtin:tabel` is no built-in widget; the built-in widgets are `builtin:table`, `builtin:card`, `builtin:list`, `builtin:kv`, `builtin:markdown`, `builtin:chart`",
        ]
    );
}

#[test]
fn actions_ask_first_unless_the_tool_is_known_safe_and_refresh_their_data() {
    let view: View = toml::from_str(
        r#"
actions = [
  { label = "Complete", tool = "complete_task", arguments = { id = "/id" } },
  { label = "Delete", tool = "delete_task", arguments = { id = "/id", hard = true } },
  { label = "Archive", tool = "archive_task", confirm = "Archive it?" },
  { label = "Star", tool = "star_task", confirm = false },
]
"#,
    )
    .unwrap();
    let safe = |tool: &str| tool != "complete_task";
    let own = Context {
        tool: Some("list_tasks"),
        output_schema: None,
        asks: &safe,
    };
    let options = options_json(Kind::Table, &view, own);
    let confirms: Vec<&Value> = options["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["confirm"])
        .collect();
    assert_eq!(
        confirms,
        [
            &json!(false),
            &json!("Delete?"),
            &json!("Archive it?"),
            &json!(false)
        ]
    );
    assert_eq!(
        options["actions"][1]["arguments"],
        json!({ "id": "/id", "hard": true })
    );
    // A tool's widget refreshes by calling its tool again with the same input.
    assert_eq!(
        options["refresh"],
        json!({ "tool": "list_tasks", "input": true })
    );
    let render = Context { tool: None, ..own };
    assert_eq!(
        options_json(Kind::Table, &view, render)["refresh"],
        Value::Null
    );
    let with_refresh = View {
        refresh: Some(view::Refresh {
            tool: "refresh_tasks".into(),
            arguments: None,
        }),
        ..view.clone()
    };
    assert_eq!(
        options_json(Kind::Table, &with_refresh, render)["refresh"],
        json!({ "tool": "refresh_tasks", "arguments": {} })
    );
    // The actions' script is in the document only when there are actions.
    let with = document(Kind::Table, &options_json(Kind::Table, &view, own));
    let without = document(
        Kind::Table,
        &options_json(Kind::Table, &View::default(), own),
    );
    assert!(with.contains("function kitActions") && !without.contains("function kitActions"));
}

#[test]
fn actions_and_charts_are_checked_like_the_other_options() {
    let mut problems = Vec::new();
    let view: View = toml::from_str(
        r#"
actions = [{ label = "", tool = "" }, { label = "Go", tool = "go", confirm = " " }, { label = "Go", tool = "go2" }]
"#,
    )
    .unwrap();
    check_view(Some("builtin:table"), Some(&view), &mut problems);
    let places: Vec<&str> = problems.iter().map(|p| p.place.as_str()).collect();
    assert_eq!(
        places,
        [
            "view.actions[0].label",
            "view.actions[0].tool",
            "view.actions[1].confirm",
            "view.actions[2].label"
        ]
    );
    let mut problems = Vec::new();
    let refresh_alone: View = toml::from_str(r#"refresh = "list_tasks""#).unwrap();
    check_view(Some("builtin:list"), Some(&refresh_alone), &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].reason.contains("after an action"));
    let mut problems = Vec::new();
    check_view(Some("builtin:kv"), Some(&view), &mut problems);
    assert!(
        problems.iter().any(|p| p.place == "view.actions"),
        "{problems:?}"
    );

    // Against the schema: argument pointers, the chart's keys and numbers.
    let schema = tasks_schema();
    let view: View = toml::from_str(
        r#"actions = [{ label = "Done", tool = "complete_task", arguments = { id = "/idd", note = "plain" } }]"#,
    )
    .unwrap();
    let problems = against_schema(Kind::Table, &view, &schema);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].place, "view.actions[0].arguments.id");
    assert!(
        problems[0].reason.contains("did you mean `id`?"),
        "{problems:?}"
    );
    let chart: View = toml::from_str(
        r#"x = "titel"
y = ["id", "title"]"#,
    )
    .unwrap();
    let problems = against_schema(Kind::Chart, &chart, &schema);
    let places: Vec<&str> = problems.iter().map(|p| p.place.as_str()).collect();
    assert_eq!(places, ["view.y[1]", "view.x"], "{problems:?}");
    assert!(problems[0].reason.contains("a chart draws numbers"));
}

#[test]
fn a_chart_defaults_to_its_first_text_and_every_number() {
    let schema = json!({
        "type": "object",
        "properties": { "months": { "type": "array", "items": { "type": "object", "properties": {
            "revenue": { "type": "number" },
            "month": { "type": "string" },
            "note": { "type": "string" },
            "orders": { "type": "integer" },
            "open": { "type": "boolean" }
        } } } }
    });
    let options = options_json(Kind::Chart, &View::default(), cx(schema.as_object()));
    assert_eq!(options["x"], "month");
    assert_eq!(
        options["y"],
        json!([{ "key": "revenue" }, { "key": "orders" }])
    );
    let html = document(Kind::Chart, &options);
    assert!(html.contains("createElementNS"));
}

#[test]
fn a_render_tool_can_show_its_arguments_in_a_builtin_widget_and_act_on_them() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("demo.toml"),
        r#"
[tools.list_tasks.output_schema]
type = "object"
properties.tasks = { type = "array", items = { type = "object", properties = { id = { type = "integer" }, title = { type = "string" } } } }

[tools.complete_task]
annotations = { destructiveHint = false }

[render.task_table]
widget = "builtin:table"
data_tools = ["list_tasks"]
view = { columns = ["title"], actions = [{ label = "Complete", tool = "complete_task", arguments = { id = "/id" } }], refresh = "refresh_tasks" }
"#,
    )
    .unwrap();
    let set = load_dir(dir.path()).unwrap();
    let mount = set.mount("demo").unwrap();
    let render = mount.render_tool("task_table").unwrap();
    assert!(
        render.widget.starts_with("builtin.table."),
        "{}",
        render.widget
    );
    let widget = set.widgets().get(&render.widget).unwrap();
    assert!(
        widget
            .html
            .contains(r#""refresh":{"arguments":{},"tool":"refresh_tasks"}"#)
            || widget
                .html
                .contains(r#""refresh":{"tool":"refresh_tasks","arguments":{}}"#),
        "{}",
        widget.html
    );
    assert!(widget.html.contains(r#""confirm":false"#));
    // The tools the widget calls become callable from a widget; the others
    // are left alone.
    assert!(mount.tool("complete_task").unwrap().app_callable);
    assert!(mount.tool("refresh_tasks").unwrap().app_callable);
    assert!(!mount.tool("list_tasks").unwrap().app_callable);

    // A called tool whose overlay keeps widgets out is refused, at the
    // widget's key.
    fs::write(
        dir.path().join("demo.toml"),
        r#"
[tools.list_tasks]
widget = "builtin:list"
view = { actions = [{ label = "Complete", tool = "complete_task" }] }

[tools.complete_task]
visibility = ["model"]
"#,
    )
    .unwrap();
    let errors = load_dir(dir.path()).unwrap_err();
    let text = errors.to_string();
    assert!(
        text.contains("tools.list_tasks.view.actions[0].tool")
            && text.contains("leaves out \"app\""),
        "{text}"
    );
}
