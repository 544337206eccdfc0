//! Golden-file tests of the rewrites on payloads captured from real servers
//! (server-everything over streamable HTTP, mcp-server-time and the bundled
//! demo over stdio; see tests/golden/README.md), with the overlays in
//! tests/golden/overlays. `UPDATE_GOLDEN=1 cargo test --test gateway
//! golden::` rewrites the expected files; review the diff before committing it.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::{self, OverlaySet};
use mcp_ui_rewrite::rewrite::{self, ListChanged, Warning};
use serde_json::Value;

/// What a case does with its input.
#[derive(Debug, Clone, Copy)]
enum Op {
    ToolsList {
        mount: &'static str,
    },
    Call {
        mount: &'static str,
        tool: &'static str,
    },
    Initialize(ListChanged),
    Discover(ListChanged),
    ResourcesList {
        mount: &'static str,
    },
    /// `resources/list` answered by the gateway alone (no input).
    LocalResourcesList {
        mount: &'static str,
    },
    /// `resources/read` of a widget (no input).
    Read {
        widget: &'static str,
    },
    /// `tools/list` with the mount's render tools added (last page).
    ToolsListWithRender {
        mount: &'static str,
    },
    /// The gateway's answer to a render tool call; the input is the arguments.
    RenderCall {
        mount: &'static str,
        tool: &'static str,
    },
}

/// The gateway announcing both list changes (overlay hot reload).
const ANNOUNCES: ListChanged = ListChanged {
    tools: true,
    resources: true,
};

/// (case name = expected file stem, input file stem, operation)
const CASES: &[(&str, Option<&str>, Op)] = &[
    (
        "time-tools-list",
        Some("time-tools-list"),
        Op::ToolsList { mount: "time" },
    ),
    (
        "everything-tools-list",
        Some("everything-tools-list"),
        Op::ToolsList {
            mount: "everything",
        },
    ),
    (
        "demo-tools-list",
        Some("demo-tools-list"),
        Op::ToolsList { mount: "demo" },
    ),
    (
        "time-initialize",
        Some("time-initialize"),
        Op::Initialize(ANNOUNCES),
    ),
    (
        "everything-initialize",
        Some("everything-initialize"),
        Op::Initialize(ANNOUNCES),
    ),
    (
        "time-discover",
        Some("time-discover"),
        Op::Discover(ListChanged {
            tools: false,
            resources: false,
        }),
    ),
    (
        "time-resources-list",
        Some("time-resources-list"),
        Op::ResourcesList { mount: "time" },
    ),
    (
        "everything-resources-list",
        Some("everything-resources-list"),
        Op::ResourcesList {
            mount: "everything",
        },
    ),
    (
        "demo-resources-list-local",
        None,
        Op::LocalResourcesList { mount: "demo" },
    ),
    (
        "time-call-get_current_time",
        Some("time-call-get_current_time"),
        Op::Call {
            mount: "time",
            tool: "get_current_time",
        },
    ),
    (
        "everything-call-get-structured-content",
        Some("everything-call-get-structured-content"),
        Op::Call {
            mount: "everything",
            tool: "get-structured-content",
        },
    ),
    (
        "everything-call-get-sum",
        Some("everything-call-get-sum"),
        Op::Call {
            mount: "everything",
            tool: "get-sum",
        },
    ),
    (
        "demo-call-list_tasks",
        Some("demo-call-list_tasks"),
        Op::Call {
            mount: "demo",
            tool: "list_tasks",
        },
    ),
    (
        "demo-call-complete_task-error",
        Some("demo-call-complete_task-error"),
        Op::Call {
            mount: "demo",
            tool: "complete_task",
        },
    ),
    (
        "demo-tools-list-render",
        Some("demo-tools-list"),
        Op::ToolsListWithRender { mount: "demo" },
    ),
    (
        "demo-call-show_tasks",
        Some("demo-render-args"),
        Op::RenderCall {
            mount: "demo",
            tool: "show_tasks",
        },
    ),
    (
        "demo-call-show_tasks-invalid",
        Some("demo-render-args-invalid"),
        Op::RenderCall {
            mount: "demo",
            tool: "show_tasks",
        },
    ),
    ("widget-clock-read", None, Op::Read { widget: "clock" }),
    ("widget-board-read", None, Op::Read { widget: "board" }),
    ("widget-tasks-read", None, Op::Read { widget: "tasks" }),
];

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn overlays() -> OverlaySet {
    overlay::load_dir(&golden().join("overlays")).unwrap_or_else(|e| panic!("{e}"))
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap() + "\n"
}

/// A host other than ChatGPT and Claude, which sees each manifest's values
/// as written.
fn any_host() -> Target {
    Target::default()
}

fn run(op: Op, set: &OverlaySet, input: Option<Value>) -> (Value, Vec<Warning>) {
    let mut value = input.unwrap_or(Value::Null);
    let warnings = match op {
        Op::ToolsList { mount } => {
            let overlays = set.mount(mount).expect("mount has overlays");
            rewrite::tools_list(&mut value, overlays, set.widgets())
        }
        Op::Call { mount, tool } => {
            let tool = set
                .mount(mount)
                .and_then(|m| m.tool(tool))
                .expect("tool has an overlay");
            rewrite::tools_call_result(&mut value, tool)
        }
        Op::Initialize(list_changed) => {
            rewrite::initialize_result(&mut value, list_changed);
            Vec::new()
        }
        Op::Discover(list_changed) => {
            rewrite::discover_result(&mut value, list_changed);
            Vec::new()
        }
        Op::ResourcesList { mount } => {
            rewrite::resources_list(&mut value, &set.widgets_for(mount), &any_host())
        }
        Op::LocalResourcesList { mount } => {
            value = rewrite::local_resources_list(&set.widgets_for(mount), &any_host());
            Vec::new()
        }
        Op::Read { widget } => {
            let widget = set.widgets().get(widget).expect("widget loaded");
            value = rewrite::read_result(widget, &any_host());
            Vec::new()
        }
        Op::ToolsListWithRender { mount } => {
            let overlays = set.mount(mount).expect("mount has overlays");
            let mut warnings = rewrite::tools_list(&mut value, overlays, set.widgets());
            warnings.extend(rewrite::render::add_render_tools(
                &mut value,
                overlays,
                set.widgets(),
                &|_| false,
            ));
            warnings
        }
        Op::RenderCall { mount, tool } => {
            let overlays = set.mount(mount).expect("mount has overlays");
            let render = overlays.render_tool(tool).expect("render tool declared");
            value =
                rewrite::render::call_result(tool, render, overlays, set.widgets(), Some(&value));
            Vec::new()
        }
    };
    (value, warnings)
}

/// Compares `actual` with the file, or rewrites the file under
/// `UPDATE_GOLDEN=1`. An absent optional file means "empty".
fn check(path: &Path, actual: &str, optional: bool, failures: &mut Vec<String>) {
    if env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        if optional && actual.is_empty() {
            let _ = fs::remove_file(path);
        } else {
            fs::write(path, actual).unwrap();
        }
        return;
    }
    let expected = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(_) if optional => String::new(),
        Err(e) => panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        ),
    };
    if expected != actual {
        failures.push(format!(
            "{} differs (UPDATE_GOLDEN=1 refreshes it)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        ));
    }
}

#[test]
fn rewrites_match_the_golden_files() {
    let set = overlays();
    let mut failures = Vec::new();
    for &(name, input, op) in CASES {
        let input = input.map(|stem| read_json(&golden().join(format!("input/{stem}.json"))));
        let (actual, warnings) = run(op, &set, input.clone());
        let expected_dir = golden().join("expected");
        check(
            &expected_dir.join(format!("{name}.json")),
            &pretty(&actual),
            false,
            &mut failures,
        );
        let warnings: String = warnings.iter().map(|w| format!("{w}\n")).collect();
        check(
            &expected_dir.join(format!("{name}.warnings.txt")),
            &warnings,
            true,
            &mut failures,
        );
        if let Op::Read { widget } = op {
            let html = &set.widgets().get(widget).unwrap().html;
            check(
                &expected_dir.join(format!("widget-{widget}.html")),
                html,
                false,
                &mut failures,
            );
        }
        // Rewriting twice changes nothing more: replays stay identical.
        if let (
            Some(input),
            Op::ToolsList { .. } | Op::Initialize(_) | Op::Discover(_) | Op::ResourcesList { .. },
        ) = (input, op)
        {
            let (once, _) = run(op, &set, Some(input));
            let (twice, _) = run(op, &set, Some(once.clone()));
            assert_eq!(pretty(&twice), pretty(&once), "{name} is not idempotent");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// On the real listings: tools without an overlay come out byte-identical,
/// overlaid tools keep every key they had, in order, and result fields
/// other than `tools` are untouched.
#[test]
fn real_listings_keep_what_they_do_not_overlay() {
    let set = overlays();
    for (stem, mount) in [
        ("time-tools-list", "time"),
        ("everything-tools-list", "everything"),
        ("demo-tools-list", "demo"),
    ] {
        let input = read_json(&golden().join(format!("input/{stem}.json")));
        let overlays = set.mount(mount).unwrap();
        let mut output = input.clone();
        rewrite::tools_list(&mut output, overlays, set.widgets());
        let (before, after) = (
            input["tools"].as_array().unwrap(),
            output["tools"].as_array().unwrap(),
        );
        assert_eq!(before.len(), after.len(), "{stem}");
        let mut overlaid = 0;
        for (old, new) in before.iter().zip(after) {
            if overlays.tool(old["name"].as_str().unwrap()).is_none() {
                assert_eq!(old.to_string(), new.to_string(), "{stem}: {}", old["name"]);
                continue;
            }
            overlaid += 1;
            let old_keys: Vec<&String> = old.as_object().unwrap().keys().collect();
            let new_keys: Vec<&String> = new
                .as_object()
                .unwrap()
                .keys()
                .take(old_keys.len())
                .collect();
            assert_eq!(old_keys, new_keys, "{stem}: {}", old["name"]);
            for key in ["inputSchema", "execution"] {
                assert_eq!(old.get(key), new.get(key), "{stem}: {} {key}", old["name"]);
            }
        }
        assert!(overlaid > 0, "{stem}: the overlays matched no tool");
        let mut rest_in = input.clone();
        let mut rest_out = output.clone();
        rest_in.as_object_mut().unwrap().shift_remove("tools");
        rest_out.as_object_mut().unwrap().shift_remove("tools");
        assert_eq!(rest_in.to_string(), rest_out.to_string(), "{stem}");
    }
}

/// The shipped schemas accept the golden overlays (which use every key), so
/// what editors suggest is what the gateway loads.
#[test]
fn golden_overlays_validate_against_the_shipped_schemas() {
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("overlays/schema");
    let overlay_schema = read_json(&schemas.join("overlay.schema.json"));
    let widget_schema = read_json(&schemas.join("widget.schema.json"));
    let dir = golden().join("overlays");
    let mut files: Vec<(PathBuf, &Value)> = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            files.push((path, &overlay_schema));
        }
    }
    for entry in fs::read_dir(dir.join("widgets")).unwrap() {
        let manifest = entry.unwrap().path().join("widget.toml");
        if manifest.exists() {
            files.push((manifest, &widget_schema));
        }
    }
    assert!(files.len() >= 5, "{files:?}");
    for (path, schema) in files {
        let text = fs::read_to_string(&path).unwrap();
        let document: Value = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).unwrap()
        } else {
            toml::from_str(&text).unwrap()
        };
        if let Err(e) = rewrite::schema::validate(schema, &document) {
            panic!("{}: {e}", path.display());
        }
    }
    // And the schema refuses what loading refuses.
    let too_long = serde_json::json!({ "tools": { "t": { "invoking": "x".repeat(65) } } });
    assert!(rewrite::schema::validate(&overlay_schema, &too_long).is_err());
    let typo = serde_json::json!({ "tools": { "t": { "widgt": "clock" } } });
    assert!(rewrite::schema::validate(&overlay_schema, &typo).is_err());
}
