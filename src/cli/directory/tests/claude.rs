//! Claude's directory rules, each found and each fixed by what its finding
//! says to write, and `--host` choosing whose rules apply.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{all_hints, site, upstream};
use crate::cli::directory::*;
use mcp_ui_overlay::overlay::{Audience, RenderSite, RenderTool, ToolOverlay, ToolSite};

fn claude(sites: &[ToolSite], renders: &[RenderSite], tools: Option<&[Value]>) -> Vec<Finding> {
    let upstreams = [upstream(tools)];
    findings(&Input {
        tools: sites,
        renders,
        upstreams: &upstreams,
        hosts: Hosts::CLAUDE,
        ..Input::default()
    })
}

fn rules(found: &[Finding]) -> Vec<Rule> {
    found.iter().map(|f| f.rule).collect()
}

fn hinted(name: &str) -> Value {
    json!({"name": name, "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false}})
}

#[test]
fn a_tool_without_a_title_is_named_with_the_line_that_titles_it() {
    let tools = [hinted("list_tasks")];
    let overlay = ToolOverlay {
        annotations: all_hints(),
        ..Default::default()
    };
    let found = claude(&[site("list_tasks", overlay.clone())], &[], Some(&tools));
    assert_eq!(rules(&found), [Rule::Title]);
    assert_eq!(found[0].place.as_deref(), Some("tools.list_tasks.title"));
    assert_eq!(found[0].line, Some(3));
    assert!(
        found[0].message.ends_with(
            "add to [tools.list_tasks], in words a user reads:\n    title = \"List tasks\""
        ),
        "{}",
        found[0].message
    );
    // The line it names fixes it.
    let titled = ToolOverlay {
        title: Some("List tasks".into()),
        ..overlay.clone()
    };
    assert!(claude(&[site("list_tasks", titled)], &[], Some(&tools)).is_empty());
    // So does the upstream's own title, top-level or in its annotations.
    let own = [
        json!({"name": "list_tasks", "title": "Tasks", "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false}}),
    ];
    assert!(claude(&[site("list_tasks", overlay.clone())], &[], Some(&own)).is_empty());
    let own = [
        json!({"name": "list_tasks", "annotations": {"title": "Tasks", "readOnlyHint": true, "destructiveHint": false, "openWorldHint": false}}),
    ];
    assert!(claude(&[site("list_tasks", overlay.clone())], &[], Some(&own)).is_empty());
    // Offline, nothing is known of the upstream's title.
    assert!(claude(&[site("list_tasks", overlay)], &[], None).is_empty());
}

/// Every listed tool, overlaid or not: one no table names gets the new
/// table to write, in the mount's file, for its title and its hints.
#[test]
fn a_listed_tool_no_overlay_names_gets_the_table_to_write() {
    let tools = [json!({"name": "add_task"})];
    let found = claude(&[], &[], Some(&tools));
    assert_eq!(rules(&found), [Rule::Annotations, Rule::Title]);
    for f in &found {
        assert_eq!(f.file, PathBuf::from("overlays/demo.toml"));
        assert_eq!(f.line, None);
    }
    assert_eq!(
        found[0].place.as_deref(),
        Some("tools.add_task.annotations")
    );
    assert!(
        found[0]
            .message
            .contains("\n    [tools.add_task.annotations]\n    readOnlyHint = false"),
        "{}",
        found[0].message
    );
    assert_eq!(found[1].place.as_deref(), Some("tools.add_task"));
    assert!(
        found[1].message.ends_with(
            "add, in words a user reads:\n    [tools.add_task]\n    title = \"Add task\""
        ),
        "{}",
        found[1].message
    );
    // Written as they say, nothing is left.
    let fixed = ToolOverlay {
        title: Some("Add task".into()),
        annotations: all_hints(),
        ..Default::default()
    };
    assert!(claude(&[site("add_task", fixed)], &[], Some(&tools)).is_empty());
}

fn render(name: &str, line: usize, view: &str, title: Option<&str>) -> RenderSite {
    RenderSite {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(line),
        mount: "demo".into(),
        name: name.into(),
        key: name.into(),
        render: RenderTool {
            widget: "builtin:table".into(),
            data_tools: vec!["list_tasks".into()],
            title: title.map(str::to_owned),
            view: Some(toml::from_str(view).unwrap()),
            ..Default::default()
        },
    }
}

#[test]
fn a_render_tool_without_a_title_is_named() {
    let renders = [render("task_table", 20, "", None)];
    let found = claude(&[], &renders, None);
    assert_eq!(rules(&found), [Rule::Title]);
    assert_eq!(found[0].place.as_deref(), Some("render.task_table.title"));
    assert_eq!(found[0].line, Some(20));
    assert!(
        found[0]
            .message
            .ends_with("add to [render.task_table]:\n    title = \"Task table\""),
        "{}",
        found[0].message
    );
    let renders = [render("task_table", 20, "", Some("Task table"))];
    assert!(claude(&[], &renders, None).is_empty());
}

/// A tool a built-in widget calls is a helper unless something says the
/// model calls it too; the finding names the visibility line to write, at
/// the tool's table or as a new one.
#[test]
fn helper_tools_a_widget_calls_are_to_be_app_only() {
    let view = r#"
actions = [
  { label = "Done", tool = "complete_task", arguments = { id = "/id" } },
  { label = "Show", tool = "add_task", arguments = {} },
  { label = "Again", tool = "list_tasks", arguments = {} },
]
refresh = "refresh_tasks"
"#;
    let renders = [render("task_table", 20, view, Some("Tasks"))];
    let plain = ToolOverlay {
        title: Some("Refresh".into()),
        ..Default::default()
    };
    // add_task has a widget of its own: the model calls it; list_tasks is
    // the data tool.
    let with_widget = ToolOverlay {
        widget: Some("board".into()),
        ..Default::default()
    };
    let sites = [
        site("refresh_tasks", plain.clone()),
        site("add_task", with_widget),
    ];
    let found = claude(&sites, &renders, None);
    assert_eq!(rules(&found), [Rule::AppOnlyHelper, Rule::AppOnlyHelper]);
    assert_eq!(
        found[0].place.as_deref(),
        Some("tools.complete_task.visibility")
    );
    assert_eq!(found[0].line, None);
    assert!(
        found[0].message.starts_with(
            "the widget of render.task_table calls `complete_task` (render.task_table.view.actions[0].tool)"
        ) && found[0]
            .message
            .contains("add:\n    [tools.complete_task]\n    visibility = [\"app\"]"),
        "{}",
        found[0].message
    );
    assert_eq!(
        found[1].place.as_deref(),
        Some("tools.refresh_tasks.visibility")
    );
    assert_eq!(found[1].line, Some(3));
    assert!(
        found[1]
            .message
            .contains("add to [tools.refresh_tasks]:\n    visibility = [\"app\"]"),
        "{}",
        found[1].message
    );
    // Written as they say (or saying the model calls it too), none is left.
    let app_only = |title: &str| ToolOverlay {
        title: Some(title.into()),
        visibility: Some(vec![Audience::App]),
        ..Default::default()
    };
    let both = ToolOverlay {
        visibility: Some(vec![Audience::Model, Audience::App]),
        ..Default::default()
    };
    let fixed = [
        site("refresh_tasks", app_only("Refresh")),
        site("complete_task", both),
        sites[1].clone(),
    ];
    assert!(claude(&fixed, &renders, None).is_empty());
    // The upstream's own visibility says it too.
    let tools = [
        json!({"name": "complete_task", "title": "Complete", "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}, "_meta": {"ui": {"visibility": ["model", "app"]}}}),
    ];
    let listed = claude(&sites, &renders, Some(&tools));
    assert!(
        !listed
            .iter()
            .any(|f| f.place.as_deref() == Some("tools.complete_task.visibility")),
        "{listed:?}"
    );
}

fn sign_in(kind: SignInKind) -> SignIn {
    SignIn {
        file: PathBuf::from("gw.toml"),
        place: "auth.issuer".into(),
        endpoints: vec!["notes".into()],
        kind,
    }
}

fn sign_in_findings(sign_ins: &[SignIn]) -> Vec<Finding> {
    findings(&Input {
        sign_ins,
        hosts: Hosts::CLAUDE,
        ..Input::default()
    })
}

#[test]
fn hosts_must_be_able_to_register_to_sign_in() {
    let issuer = |metadata: Option<Result<Value, String>>| {
        sign_in(SignInKind::Issuer {
            issuer: "https://login.example.com".into(),
            metadata: metadata.map(|m| m.map(|v| v.as_object().unwrap().clone())),
        })
    };
    let bare = json!({"issuer": "https://login.example.com", "authorization_endpoint": "https://login.example.com/a"});
    let found = sign_in_findings(&[issuer(Some(Ok(bare)))]);
    assert_eq!(rules(&found), [Rule::SignIn]);
    assert_eq!(found[0].file, PathBuf::from("gw.toml"));
    assert_eq!(found[0].place.as_deref(), Some("auth.issuer"));
    assert!(
        found[0].message.starts_with(
            "the issuer https://login.example.com of endpoint 'notes' offers neither dynamic client registration"
        ) && found[0].message.contains("[authorization_server]"),
        "{}",
        found[0].message
    );
    // Dynamic registration, or Client ID Metadata Documents, pass.
    let dcr = json!({"registration_endpoint": "https://login.example.com/register"});
    let cimd = json!({"client_id_metadata_document_supported": true});
    assert!(sign_in_findings(&[issuer(Some(Ok(dcr))), issuer(Some(Ok(cimd)))]).is_empty());
    // Not fetched (offline): nothing is known, nothing said.
    assert!(sign_in_findings(&[issuer(None)]).is_empty());
    // Unreadable metadata is said, with why.
    let found = sign_in_findings(&[issuer(Some(Err("answered 404".into())))]);
    assert!(
        found[0]
            .message
            .contains("could not be read (answered 404)")
    );

    // The gateway's own authorization server, with both paths off.
    let gateway = |registration, documents| {
        let mut s = sign_in(SignInKind::Gateway {
            registration,
            documents,
        });
        s.place = "authorization_server.registration.enabled".into();
        s
    };
    let found = sign_in_findings(&[gateway(false, false)]);
    assert_eq!(
        found[0].place.as_deref(),
        Some("authorization_server.registration.enabled")
    );
    assert!(
        found[0]
            .message
            .ends_with("set `registration.enabled = true` or `client_metadata_documents.enabled = true` under [authorization_server]"),
        "{}",
        found[0].message
    );
    assert!(sign_in_findings(&[gateway(true, false), gateway(false, true)]).is_empty());

    // An open endpoint whose upstream wants the client's headers.
    let mut headers = sign_in(SignInKind::Headers(vec!["x-api-key".into()]));
    headers.place = "upstream[0].forward_headers".into();
    let found = sign_in_findings(&[headers]);
    assert_eq!(rules(&found), [Rule::SignIn]);
    assert!(
        found[0]
            .message
            .starts_with("endpoint 'notes' asks no sign-in but forwards the client's x-api-key"),
        "{}",
        found[0].message
    );
}

fn height(measured: Measured) -> Height {
    Height {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(7),
        place: "tools.list_tasks".into(),
        widget: "board".into(),
        measured,
    }
}

#[test]
fn widgets_over_500_px_or_not_measured_are_named() {
    let run = |h: Height| {
        findings(&Input {
            heights: std::slice::from_ref(&h),
            hosts: Hosts::CLAUDE,
            ..Input::default()
        })
    };
    let found = run(height(Measured::Px(612)));
    assert_eq!(rules(&found), [Rule::WidgetHeight]);
    assert_eq!(found[0].line, Some(7));
    assert_eq!(found[0].place.as_deref(), Some("tools.list_tasks.sample"));
    assert!(
        found[0].message.starts_with(
            "its widget `board` is 612 px high with its sample; Claude shows at most 500 px inline"
        ) && found[0].message.contains("make its inline layout shorter"),
        "{}",
        found[0].message
    );
    // A built-in widget's height follows its data: no view option bounds it.
    let mut builtin = height(Measured::Px(900));
    builtin.widget = "builtin:table".into();
    let found = run(builtin);
    assert!(
        found[0]
            .message
            .contains("no `view` option bounds a built-in widget's height"),
        "{}",
        found[0].message
    );
    assert!(run(height(Measured::Px(500))).is_empty());
    let found = run(height(Measured::NoSample));
    assert!(
        found[0].message.contains("was not measured")
            && found[0].message.ends_with(
                "add [tools.list_tasks.sample] with arguments and (for a tool) the structured_content of a typical result"
            ),
        "{}",
        found[0].message
    );
    assert_eq!(found[0].place.as_deref(), Some("tools.list_tasks"));
    let found = run(height(Measured::NotMeasured {
        why: "no browser".into(),
        fix: "install Chromium".into(),
    }));
    assert_eq!(found[0].place.as_deref(), Some("tools.list_tasks.sample"));
    assert_eq!(
        found[0].message,
        "its widget `board` was not measured: no browser; Claude's directory allows inline widgets at most 500 px high, and a height not measured is no pass: install Chromium"
    );
}

/// `--host`: ChatGPT's rules, Claude's, or both; each finding names the
/// hosts that ask for it.
#[test]
fn hosts_choose_whose_rules_apply() {
    // No title, no hints, shaped results without a schema, a helper.
    let tools = [json!({"name": "t"})];
    let overlay = ToolOverlay {
        result: mcp_ui_overlay::overlay::ResultShaping {
            structured_from_text: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let sites = [site("t", overlay)];
    let renders = [render("table", 20, "refresh = \"helper\"", Some("Table"))];
    let upstreams = [upstream(Some(&tools))];
    let heights = [height(Measured::Px(900))];
    let run = |hosts| {
        let mut found = rules(&findings(&Input {
            tools: &sites,
            renders: &renders,
            upstreams: &upstreams,
            heights: &heights,
            hosts,
            ..Input::default()
        }));
        found.sort();
        found
    };
    assert_eq!(run(Hosts::CHATGPT), [Rule::Annotations, Rule::OutputSchema]);
    assert_eq!(
        run(Hosts::CLAUDE),
        [
            Rule::Annotations,
            Rule::Title,
            Rule::AppOnlyHelper,
            Rule::WidgetHeight
        ]
    );
    assert_eq!(
        run(Hosts::BOTH),
        [
            Rule::Annotations,
            Rule::OutputSchema,
            Rule::Title,
            Rule::AppOnlyHelper,
            Rule::WidgetHeight
        ]
    );
    assert_eq!(
        Rule::Annotations.tag(),
        "[app-directory/annotations: ChatGPT, Claude]"
    );
    assert_eq!(Rule::Title.tag(), "[app-directory/title: Claude]");
    assert_eq!(
        Rule::WidgetDomain.tag(),
        "[app-directory/widget-domain: ChatGPT]"
    );
}
