//! Tests of the built-in widgets: options, documents, budget, schema rules,
//! and a directory that uses one loaded like any other.
//!
//! - `loaded`: built-in widgets in a loaded overlay directory: their tools,
//!   domains, problems, actions, charts and render tools.

use std::fs;

use serde_json::{Value, json};

use super::*;
use crate::overlay::validate::builtin::{against_schema, view as check_view};
use crate::overlay::validate::tool as check_tool;
use crate::overlay::{HostDomains, ToolOverlay, WidgetDomain, load_dir};

mod loaded;

/// The budget of one compiled built-in document, its options included
/// (uncompressed): hosts fetch it on every new template URI.
const SIZE_BUDGET: usize = 20 * 1024;

fn tool(toml_text: &str) -> ToolOverlay {
    toml::from_str(toml_text).unwrap()
}

fn tasks_schema() -> Value {
    json!({
        "type": "object",
        "required": ["tasks"],
        "properties": {
            "tasks": { "type": "array", "items": { "$ref": "#/$defs/task" } },
            "count": { "type": "integer" }
        },
        "$defs": { "task": { "type": "object", "properties": {
            "id": { "type": "integer" },
            "title": { "type": "string" },
            "done": { "type": "boolean" },
            "due": { "type": ["string", "null"] },
            "owner": { "type": "object", "properties": { "name": { "type": "string" } } }
        } } }
    })
}

/// Every option a kind takes, set, with long texts: the largest document.
fn maximal(kind: Kind) -> View {
    let field = |k: &str| Field {
        key: k.into(),
        title: Some(format!("{k} title")),
        format: Some(Format::Currency),
        currency: Some("EUR".into()),
    };
    let fields: Vec<Field> = (0..12).map(|i| field(&format!("field_{i}"))).collect();
    let all = View {
        data: Some("/items".into()),
        heading: Some("A heading of some length".into()),
        columns: Some(fields.clone()),
        sort: Some("-field_1".into()),
        empty: Some("Nothing here yet.".into()),
        primary: Some("title".into()),
        secondary: Some("description".into()),
        title: Some("name".into()),
        subtitle: Some("kind".into()),
        image: Some("picture".into()),
        image_domains: Some(vec!["https://img.example.com".into()]),
        fields: Some(fields.clone()),
        actions: Some(
            ["Complete", "Reopen", "Delete"]
                .iter()
                .map(|label| view::Action {
                    label: (*label).into(),
                    tool: format!("{}_task", label.to_lowercase()),
                    arguments: Some(
                        json!({ "id": "/id", "force": true })
                            .as_object()
                            .unwrap()
                            .clone(),
                    ),
                    confirm: Some(view::Confirm::Question(format!(
                        "{label} this task for good?"
                    ))),
                })
                .collect(),
        ),
        refresh: Some(view::Refresh {
            tool: "list_tasks".into(),
            arguments: Some(json!({ "status": "open" }).as_object().unwrap().clone()),
        }),
        chart: Some(view::ChartType::Line),
        x: Some("month".into()),
        y: Some(fields.into_iter().take(6).collect()),
        domain: Some(WidgetDomain::One("https://widgets.example.com".into())),
    };
    let allowed = kind.options();
    let keep = |name: &str| allowed.contains(&name);
    View {
        data: all.data.filter(|_| keep("data")),
        heading: all.heading.filter(|_| keep("heading")),
        columns: all.columns.filter(|_| keep("columns")),
        sort: all.sort.filter(|_| keep("sort")),
        empty: all.empty.filter(|_| keep("empty")),
        primary: all.primary.filter(|_| keep("primary")),
        secondary: all.secondary.filter(|_| keep("secondary")),
        title: all.title.filter(|_| keep("title")),
        subtitle: all.subtitle.filter(|_| keep("subtitle")),
        image: all.image.filter(|_| keep("image")),
        image_domains: all.image_domains.filter(|_| keep("image_domains")),
        fields: all.fields.filter(|_| keep("fields")),
        actions: all.actions.filter(|_| keep("actions")),
        refresh: all.refresh.filter(|_| keep("refresh")),
        chart: all.chart.filter(|_| keep("type")),
        x: all.x.filter(|_| keep("x")),
        y: all.y.filter(|_| keep("y")),
        domain: all.domain.filter(|_| keep("domain")),
    }
}

/// The context of a tool `list_tasks` whose actions always ask first.
fn cx(schema: Option<&serde_json::Map<String, Value>>) -> Context<'_> {
    Context {
        tool: Some("list_tasks"),
        output_schema: schema,
        asks: &|_| true,
    }
}

#[test]
fn every_kind_document_fits_the_size_budget() {
    for kind in Kind::ALL {
        let view = maximal(kind);
        let mut problems = Vec::new();
        check_view(
            Some(&format!("builtin:{}", kind.as_str())),
            Some(&view),
            &mut problems,
        );
        assert!(problems.is_empty(), "{kind:?}: {problems:?}");
        let widget = compile("demo", "list_tasks", kind, &view, cx(None));
        assert!(
            widget.html.len() <= SIZE_BUDGET,
            "builtin:{} is {} bytes, over the {SIZE_BUDGET}-byte budget",
            kind.as_str(),
            widget.html.len()
        );
        eprintln!("builtin:{}: {} bytes", kind.as_str(), widget.html.len());
    }
}

#[test]
fn scripts_cannot_end_their_element() {
    let sources = [
        include_str!("core.js"),
        include_str!("table.js"),
        include_str!("card.js"),
        include_str!("list.js"),
        include_str!("kv.js"),
        include_str!("markdown.js"),
        include_str!("chart.js"),
        include_str!("actions.js"),
        include_str!("kit.css"),
    ];
    for source in sources {
        let lower = source.to_ascii_lowercase();
        assert!(
            !lower.contains("</script") && !lower.contains("</style") && !lower.contains("<!--")
        );
        // No network: nothing the document could fetch.
        assert!(
            !lower.contains("fetch(")
                && !lower.contains("xmlhttprequest")
                && !lower.contains("@import")
        );
        // Text only ever goes in as text.
        assert!(
            !source.contains("innerHTML")
                && !source.contains("insertAdjacentHTML")
                && !source.contains("document.write")
        );
    }
}

#[test]
fn options_are_injected_as_inert_json() {
    let view = View {
        heading: Some("</script><script>alert(1)</script> & <!-- \u{2028}".into()),
        ..View::default()
    };
    let html = document(Kind::Kv, &options_json(Kind::Kv, &view, cx(None)));
    assert_eq!(html.matches("</script>").count(), 2, "{html}");
    let start = html.find("id=\"view-options\">").unwrap() + "id=\"view-options\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let json_text = &html[start..end];
    assert!(
        !json_text.contains(['<', '>', '&', '\u{2028}']),
        "{json_text}"
    );
    let parsed: Value = serde_json::from_str(json_text).unwrap();
    assert_eq!(parsed["heading"], json!(view.heading.unwrap()));
    assert_eq!(parsed["kind"], "kv");
}

#[test]
fn fields_are_keys_or_tables() {
    let t = tool(
        r#"
widget = "builtin:table"
[view]
columns = ["title", { key = "price", title = "Price", format = "currency", currency = "EUR" }]
"#,
    );
    let columns = t.view.unwrap().columns.unwrap();
    assert_eq!(columns[0].key, "title");
    assert_eq!(columns[1].format, Some(Format::Currency));
    let e = toml::from_str::<ToolOverlay>("[view]\ncolumns = [{ key = \"a\", titel = \"A\" }]\n")
        .unwrap_err();
    assert!(e.to_string().contains("unknown field `titel`"), "{e}");
    let e = toml::from_str::<ToolOverlay>("[view]\ncolums = [\"a\"]\n").unwrap_err();
    assert!(e.to_string().contains("unknown field `colums`"), "{e}");
}

#[test]
fn references_and_per_kind_options() {
    assert_eq!(reference("clock"), None);
    assert_eq!(reference("builtin:table"), Some(Ok(Kind::Table)));
    let reason = reference("builtin:grid").unwrap().unwrap_err();
    assert!(
        reason.contains("`builtin:table`") && reason.contains("`builtin:markdown`"),
        "{reason}"
    );

    let places = |t: &ToolOverlay| -> Vec<String> {
        check_tool(t, &|_| false)
            .into_iter()
            .map(|p| format!("{}: {}", p.place, p.reason))
            .collect()
    };
    let bad = tool(
        r#"
widget = "builtin:card"
[view]
columns = ["a"]
data = "items"
fields = [{ key = "price", format = "currency" }, "price", { key = "x", currency = "EUR" }]
image_domains = ["https://img.example.com/"]
"#,
    );
    let found = places(&bad);
    for wanted in [
        "view.columns: not an option of `builtin:card`",
        "view.data: `items` is not a JSON pointer; write `/items`",
        "view.fields[0].currency: format = \"currency\" needs",
        "view.fields[1]: `price` is listed twice",
        "view.fields[2].currency: only applies",
        "view.image_domains[0]:",
    ] {
        assert!(
            found.iter().any(|f| f.starts_with(wanted)),
            "{wanted}\n{found:#?}"
        );
    }
    assert!(!found.iter().any(|f| f.starts_with("widget")), "{found:?}");

    let unknown = places(&tool("widget = \"builtin:grid\"\n"));
    assert!(
        unknown[0].starts_with("widget: `builtin:grid` is no built-in widget"),
        "{unknown:?}"
    );
    let orphan = places(&tool("widget = \"clock\"\n[view]\nheading = \"x\"\n"));
    assert!(
        orphan
            .iter()
            .any(|p| p.starts_with("view: options of a built-in widget")),
        "{orphan:?}"
    );
    let sort = places(&tool(
        "widget = \"builtin:table\"\n[view]\ncolumns = [\"a\"]\nsort = \"-b\"\n",
    ));
    assert_eq!(sort, ["view.sort: `b` is none of the columns"]);
}

#[test]
fn keys_and_pointers_are_checked_against_the_output_schema() {
    let schema = tasks_schema();
    let check = |kind: Kind, toml_view: &str| -> Vec<String> {
        let view: View = toml::from_str(toml_view).unwrap();
        against_schema(kind, &view, &schema)
            .into_iter()
            .map(|p| format!("{}: {}", p.place, p.reason))
            .collect()
    };
    // Defaults: the only array; every key exists (a pointer into a nested record too).
    assert!(
        check(
            Kind::Table,
            "columns = [\"title\", \"/owner/name\", \"due\"]\nsort = \"-due\""
        )
        .is_empty()
    );
    assert!(check(Kind::List, "primary = \"title\"").is_empty());
    assert!(check(Kind::Kv, "fields = [\"count\"]").is_empty());
    assert!(check(Kind::Card, "data = \"/tasks\"\ntitle = \"title\"").is_empty());

    let typo = check(Kind::Table, "columns = [\"titel\", \"done\"]");
    assert_eq!(
        typo,
        [
            "view.columns[0]: `titel` is not in the output schema's records at `/tasks`: `/` has no property `titel`; did you mean `title`?"
        ]
    );
    let nested = check(Kind::Table, "columns = [\"/owner/nmae\"]");
    assert!(
        nested[0].contains("`/owner` has no property `nmae`; did you mean `name`?"),
        "{nested:?}"
    );
    let nowhere = check(Kind::Table, "data = \"/taskz\"");
    assert_eq!(
        nowhere,
        [
            "view.data: `/taskz` points nowhere in the output schema: `/` has no property `taskz`; did you mean `tasks`?"
        ]
    );
    let not_list = check(Kind::Table, "data = \"/count\"");
    assert!(not_list[0].contains("is not an array"), "{not_list:?}");
    let not_text = check(Kind::Markdown, "data = \"/count\"");
    assert!(not_text[0].contains("is not a string"), "{not_text:?}");
    let kv_list = check(Kind::Kv, "data = \"/tasks\"");
    assert!(kv_list[0].contains("is an array"), "{kv_list:?}");
}

#[test]
fn default_data_is_found_as_the_widget_finds_it() {
    // Markdown's default, as the widget reads it: the root's only string
    // property (an output schema of one `content` string passes `check`
    // without `data`; before: "`` is not a string in the output schema"),
    // else the result's text, which the schema does not describe.
    let text = |schema: Value| against_schema(Kind::Markdown, &View::default(), &schema);
    let one = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
    assert!(text(one).is_empty());
    let nullable = json!({"type": "object", "properties": {"n": {"type": "integer"}, "body": {"type": ["string", "null"]}}});
    assert!(text(nullable).is_empty());
    let no_string = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    assert!(text(no_string).is_empty());
    let two_strings =
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
    assert!(text(two_strings).is_empty());
    let wrong = View {
        data: Some("/n".into()),
        ..View::default()
    };
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "content": {"type": "string"}}});
    assert_eq!(
        against_schema(Kind::Markdown, &wrong, &schema)[0].reason,
        "`/n` is not a string in the output schema; `builtin:markdown` renders a text: set it to `/content`"
    );

    // No array, or several: the table needs data.
    let none = against_schema(
        Kind::Table,
        &View::default(),
        &json!({"type": "object", "properties": {"a": {"type": "string"}}}),
    );
    assert!(none[0].reason.contains("no array property"), "{none:?}");
    let two =
        json!({"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "array"}}});
    let several = against_schema(Kind::List, &View::default(), &two);
    assert!(several[0].reason.contains("`/a`, `/b`"), "{several:?}");
    // A schema that does not say passes.
    assert!(
        against_schema(
            Kind::Table,
            &maximal(Kind::Table),
            &json!({"type": "object"})
        )
        .is_empty()
    );
}

#[test]
fn default_columns_come_from_the_output_schema() {
    let schema = tasks_schema();
    let options = options_json(Kind::Table, &View::default(), cx(schema.as_object()));
    let keys: Vec<&str> = options["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    // Nested records are left out of a table's defaults.
    assert_eq!(keys, ["id", "title", "done", "due"]);
    let chosen = View {
        columns: Some(vec![Field {
            key: "title".into(),
            ..Field::default()
        }]),
        ..View::default()
    };
    let options = options_json(Kind::Table, &chosen, cx(schema.as_object()));
    assert_eq!(options["columns"], json!([{ "key": "title" }]));
    let kv = options_json(Kind::Kv, &View::default(), cx(schema.as_object()));
    assert_eq!(
        kv["fields"],
        json!([{ "key": "tasks" }, { "key": "count" }])
    );
}
