use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use mcp_ui_overlay::overlay::{
    Annotations, HostDomains, RenderSite, RenderTool, ResultShaping, SecurityScheme, ToolOverlay,
    ToolSite, WidgetDomain, WidgetManifest, WidgetSite,
};

pub(super) fn site(tool: &str, overlay: ToolOverlay) -> ToolSite {
    ToolSite {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(3),
        mount: "demo".into(),
        tool: tool.into(),
        key: tool.into(),
        overlay: Some(overlay),
    }
}

pub(super) fn upstream(tools: Option<&[Value]>) -> Upstream<'_> {
    Upstream {
        mount: "demo",
        file: std::path::Path::new("overlays/demo.toml"),
        in_band_challenges: false,
        tools,
    }
}

/// The findings of ChatGPT's rules for `sites` on upstream `demo` listing
/// `tools` (offline when `None`), with no widgets.
fn run(sites: &[ToolSite], tools: Option<&[Value]>) -> Vec<Finding> {
    let upstreams = [upstream(tools)];
    findings(&Input {
        tools: sites,
        upstreams: &upstreams,
        hosts: Hosts::CHATGPT,
        ..Input::default()
    })
}

fn rules(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|f| f.rule).collect()
}

pub(super) fn all_hints() -> Option<Annotations> {
    Some(Annotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        open_world_hint: Some(false),
        idempotent_hint: None,
    })
}

#[test]
fn annotations_missing_from_both_are_named_with_the_lines_to_add() {
    let tools = [json!({"name": "add_task", "annotations": {"readOnlyHint": false}})];
    let overlay = ToolOverlay {
        title: Some("Add".into()),
        ..Default::default()
    };
    let found = run(&[site("add_task", overlay)], Some(&tools));
    assert_eq!(rules(&found), [Rule::Annotations]);
    let f = &found[0];
    assert_eq!(f.file, PathBuf::from("overlays/demo.toml"));
    assert_eq!(f.line, Some(3));
    assert_eq!(f.place.as_deref(), Some("tools.add_task.annotations"));
    assert!(
        f.message
            .starts_with("destructiveHint, openWorldHint missing from its annotations"),
        "{}",
        f.message
    );
    // The upstream's readOnlyHint counts; the lines set only what is missing.
    assert!(
        f.message.ends_with(
            "\n    [tools.add_task.annotations]\n    destructiveHint = true  # false if it never deletes nor overwrites\n    openWorldHint = true  # false if it reaches nothing beyond its own data"
        ),
        "{}",
        f.message
    );
}

#[test]
fn annotations_merge_the_upstreams_and_the_overlays() {
    let tools = [json!({"name": "t", "annotations": {"openWorldHint": false}})];
    let overlay = ToolOverlay {
        annotations: Some(Annotations {
            read_only_hint: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let found = run(&[site("t", overlay.clone())], Some(&tools));
    assert_eq!(rules(&found), [Rule::Annotations]);
    // A read-only tool is not destructive; the overlay already has a table.
    assert!(
        found[0].message.ends_with(
            "add to its annotations ([tools.t.annotations] or the inline table), with the values true of the tool:\n    destructiveHint = false  # it only reads"
        ),
        "{}",
        found[0].message
    );
    let tools =
        [json!({"name": "t", "annotations": {"openWorldHint": false, "destructiveHint": false}})];
    assert!(run(&[site("t", overlay)], Some(&tools)).is_empty());
    // Offline, the upstream's hints are unknown: no finding.
    assert!(run(&[site("t", ToolOverlay::default())], None).is_empty());
}

#[test]
fn annotations_in_a_json_overlay_are_shown_as_json() {
    let tools = [json!({"name": "odd.name"})];
    let mut s = site("odd.name", ToolOverlay::default());
    s.file = PathBuf::from("overlays/demo.json");
    let found = run(&[s], Some(&tools));
    assert!(
        found[0].message.ends_with(
            "add to tool \"odd.name\", with the values true of the tool (shown: MCP's defaults):\n    \"annotations\": { \"readOnlyHint\": false, \"destructiveHint\": true, \"openWorldHint\": true }"
        ),
        "{}",
        found[0].message
    );
    // TOML quotes a key that is not bare.
    let found = run(&[site("odd.name", ToolOverlay::default())], Some(&tools));
    assert!(
        found[0]
            .message
            .contains("\n    [tools.\"odd.name\".annotations]\n"),
        "{}",
        found[0].message
    );
}

fn shaping(from_text: bool, widget_only: &[&str]) -> ToolOverlay {
    ToolOverlay {
        annotations: all_hints(),
        result: ResultShaping {
            structured_from_text: from_text,
            widget_only: widget_only.iter().map(|s| s.to_string()).collect(),
        },
        ..Default::default()
    }
}

#[test]
fn shaped_results_need_an_output_schema() {
    let bare = [json!({"name": "t"})];
    let found = run(&[site("t", shaping(true, &[]))], Some(&bare));
    assert_eq!(rules(&found), [Rule::OutputSchema]);
    assert_eq!(found[0].place.as_deref(), Some("tools.t"));
    assert!(
        found[0].message.contains("(result.structured_from_text makes it from the text)")
            && found[0].message.ends_with(
                "add [tools.t.output_schema] with type = \"object\" and the properties of the results"
            ),
        "{}",
        found[0].message
    );
    // Offline, the overlay's own shaping is judged alone.
    assert_eq!(
        rules(&run(&[site("t", shaping(true, &[]))], None)),
        [Rule::OutputSchema]
    );
    // The overlay's schema is listed.
    let mut with_schema = shaping(true, &[]);
    with_schema.output_schema = Some(serde_json::Map::from_iter([(
        "type".into(),
        json!("object"),
    )]));
    assert!(run(&[site("t", with_schema)], Some(&bare)).is_empty());
    // The Python SDK's wrapper schema is dropped when the text is shaped.
    let wrapper = json!({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]});
    let wrapped = [json!({"name": "t", "outputSchema": wrapper})];
    assert_eq!(
        rules(&run(&[site("t", shaping(true, &[]))], Some(&wrapped))),
        [Rule::OutputSchema]
    );
    // The upstream's own schema is listed: nothing to say.
    let typed = [json!({"name": "t", "outputSchema": {"type": "object", "properties": {"a": {}}}})];
    assert!(run(&[site("t", shaping(true, &["a"]))], Some(&typed)).is_empty());
    // widget_only shapes structuredContent too.
    let found = run(&[site("t", shaping(false, &["a"]))], Some(&bare));
    assert!(found[0].message.contains("(result.widget_only shapes it)"));
    // No shaping and no UI: results may carry no structuredContent at all.
    assert!(run(&[site("t", shaping(false, &[]))], Some(&bare)).is_empty());
}

#[test]
fn an_upstream_mcp_app_tool_needs_an_output_schema() {
    let tools = [json!({"name": "t", "_meta": {"ui/resourceUri": "ui://up/a.html"}})];
    let found = run(&[site("t", shaping(false, &[]))], Some(&tools));
    assert_eq!(rules(&found), [Rule::OutputSchema]);
    assert!(found[0].message.contains("as an MCP App"));
}

#[test]
fn oauth2_needs_in_band_challenges() {
    let oauth = ToolOverlay {
        annotations: all_hints(),
        security_schemes: Some(vec![
            SecurityScheme::Noauth {},
            SecurityScheme::Oauth2 {
                scopes: vec!["a".into()],
            },
        ]),
        ..Default::default()
    };
    // Offline too: the rule needs the configuration only.
    let found = run(&[site("t", oauth.clone())], None);
    assert_eq!(rules(&found), [Rule::OauthInBand]);
    assert_eq!(found[0].place.as_deref(), Some("tools.t.security_schemes"));
    assert!(
        found[0].message.ends_with(
            "set auth_challenge = \"in-band\" in the [[upstream]] named 'demo' of the configuration"
        ),
        "{}",
        found[0].message
    );
    let in_band = [Upstream {
        in_band_challenges: true,
        ..upstream(None)
    }];
    let sites = [site("t", oauth)];
    let input = Input {
        tools: &sites,
        renders: &[],
        widgets: &[],
        upstreams: &in_band,
        hosts: Hosts::CHATGPT,
        ..Input::default()
    };
    assert!(findings(&input).is_empty());

    // Through the meta escape hatch.
    let meta = ToolOverlay {
        annotations: all_hints(),
        meta: Some(serde_json::Map::from_iter([(
            "securitySchemes".into(),
            json!([{"type": "oauth2"}]),
        )])),
        ..Default::default()
    };
    let found = run(&[site("t", meta)], None);
    assert_eq!(found[0].place.as_deref(), Some("tools.t.meta"));
    // The upstream's own, on an overlaid tool, with the listing.
    let tools = [json!({"name": "t", "securitySchemes": [{"type": "oauth2", "scopes": []}]})];
    let found = run(&[site("t", shaping(false, &[]))], Some(&tools));
    assert_eq!(rules(&found), [Rule::OauthInBand]);
    assert!(found[0].message.starts_with("the upstream lists an oauth2"));
    // noauth alone is fine.
    let noauth = ToolOverlay {
        annotations: all_hints(),
        security_schemes: Some(vec![SecurityScheme::Noauth {}]),
        ..Default::default()
    };
    assert!(run(&[site("t", noauth)], None).is_empty());
}

#[test]
fn a_widget_needs_a_chatgpt_domain_when_the_public_url_is_known() {
    let with_widget = ToolOverlay {
        widget: Some("board".into()),
        ..Default::default()
    };
    let sites = [site("t", with_widget)];
    let widget = |domain: Option<WidgetDomain>, name: &str| WidgetSite {
        name: name.into(),
        manifest_file: PathBuf::from(format!("overlays/widgets/{name}/widget.toml")),
        manifest: WidgetManifest {
            domain,
            ..Default::default()
        },
    };
    let renders = [RenderSite {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(9),
        mount: "demo".into(),
        name: "show".into(),
        key: "show".into(),
        render: RenderTool {
            widget: "shown".into(),
            ..Default::default()
        },
    }];
    let per_host = |chatgpt: Option<&str>| {
        Some(WidgetDomain::PerHost(HostDomains {
            chatgpt: chatgpt.map(str::to_owned),
            claude: Some("c.example.com".into()),
            other: None,
        }))
    };
    let widgets = [
        widget(None, "board"),
        widget(per_host(None), "shown"),
        widget(None, "spare"),
        widget(Some("https://board.example.com".into()), "done"),
        widget(per_host(Some("https://tasks.example.com")), "tasks"),
    ];
    let upstreams = [upstream(None)];
    let input = |public_url| Input {
        tools: &sites,
        renders: &renders,
        widgets: &widgets,
        upstreams: &upstreams,
        public_url,
        hosts: Hosts::CHATGPT,
        ..Input::default()
    };
    // No public URL: nothing is known of the domain to give.
    assert!(findings(&input(None)).is_empty());
    let found = findings(&input(Some("https://gw.example.com/base")));
    // Only the widgets some tool renders; `spare` is never served.
    let files: Vec<String> = found.iter().map(|f| f.file.display().to_string()).collect();
    assert_eq!(
        files,
        [
            "overlays/widgets/board/widget.toml",
            "overlays/widgets/shown/widget.toml"
        ]
    );
    assert_eq!(rules(&found), [Rule::WidgetDomain, Rule::WidgetDomain]);
    assert!(
        found[0].message.starts_with(
            "ChatGPT requires a unique widget domain for app submission, and widget `board` has none for ChatGPT"
        ) && found[0].message.contains(
            "such as public_url's: `domain = { chatgpt = \"https://gw.example.com\" }`"
        ),
        "{}",
        found[0].message
    );
    assert!(has_chatgpt_domain(&widgets[3].manifest));
    assert!(has_chatgpt_domain(&widgets[4].manifest));
    assert!(!has_chatgpt_domain(&widgets[1].manifest));
}

#[test]
fn replacing_a_native_mcp_apps_resource_uri_is_named() {
    let tools = [
        json!({"name": "a", "outputSchema": {"type": "object"}, "_meta": {"ui": {"resourceUri": "ui://up/a.html"}}}),
        json!({"name": "b", "outputSchema": {"type": "object"}, "_meta": {"ui/resourceUri": "ui://up/b.html"}}),
        json!({"name": "c", "outputSchema": {"type": "object"}}),
    ];
    let widget = ToolOverlay {
        annotations: all_hints(),
        widget: Some("mine".into()),
        ..Default::default()
    };
    let meta = ToolOverlay {
        annotations: all_hints(),
        meta: Some(serde_json::Map::from_iter([(
            "ui".into(),
            json!({"resourceUri": "ui://other/x.html"}),
        )])),
        ..Default::default()
    };
    let sites = [
        site("a", widget.clone()),
        site("b", meta),
        site("c", widget.clone()),
    ];
    let found = run(&sites, Some(&tools));
    assert_eq!(rules(&found), [Rule::NativeUi, Rule::NativeUi]);
    assert_eq!(found[0].place.as_deref(), Some("tools.a.widget"));
    assert!(
        found[0].message.starts_with(
            "the upstream already lists this tool as an MCP App (resourceUri ui://up/a.html)"
        ),
        "{}",
        found[0].message
    );
    assert_eq!(found[1].place.as_deref(), Some("tools.b.meta"));
    // Native tools the overlay leaves their UI: nothing to say (each
    // overlaid with the hints, which every listed tool needs).
    let plain = ToolOverlay {
        annotations: all_hints(),
        ..Default::default()
    };
    let plain = ["a", "b", "c"].map(|t| site(t, plain.clone()));
    assert!(run(&plain, Some(&tools)).is_empty());
    // Offline, nothing is known of the upstream's UI.
    assert!(run(&[site("a", widget)], None).is_empty());
}

#[test]
fn tools_of_unconfigured_or_unlisted_upstream_tools_are_left_alone() {
    let mut other = site("t", shaping(true, &[]));
    other.mount = "elsewhere".into();
    assert!(run(&[other], None).is_empty());
    // A tool the listing lacks is reported as unknown elsewhere (the listed
    // one has its hints: listed tools no overlay names are checked too).
    let tools = [
        json!({"name": "u", "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false}}),
    ];
    assert!(run(&[site("t", shaping(true, &[]))], Some(&tools)).is_empty());
    // A table that did not parse has nothing to judge.
    let mut broken = site("t", ToolOverlay::default());
    broken.overlay = None;
    assert!(run(&[broken], None).is_empty());
}

#[test]
fn rule_ids_are_printed_under_app_directory() {
    assert_eq!(Rule::OauthInBand.to_string(), "app-directory/oauth-in-band");
}

/// Built-in widgets take their domain from `view.domain`: one some tool or
/// render tool shows without a domain for ChatGPT is named at that key.
#[test]
fn a_builtin_widget_without_a_chatgpt_domain_is_named_at_its_view() {
    let view = |toml: &str| -> Option<mcp_ui_overlay::overlay::builtin::View> {
        Some(toml::from_str(toml).unwrap())
    };
    let builtin = |v| ToolOverlay {
        widget: Some("builtin:table".into()),
        view: v,
        ..Default::default()
    };
    let sites = [
        site("bare", builtin(None)),
        site(
            "claude_only",
            builtin(view("domain = { claude = \"c.example.com\" }")),
        ),
        site(
            "given",
            builtin(view("domain = \"https://tasks.example.com\"")),
        ),
    ];
    let renders = [RenderSite {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(20),
        mount: "demo".into(),
        name: "show".into(),
        key: "show".into(),
        render: RenderTool {
            widget: "builtin:kv".into(),
            view: view("domain = { chatgpt = \"https://kv.example.com\" }"),
            ..Default::default()
        },
    }];
    let upstreams = [upstream(None)];
    let input = |public_url| Input {
        tools: &sites,
        renders: &renders,
        widgets: &[],
        upstreams: &upstreams,
        public_url,
        hosts: Hosts::CHATGPT,
        ..Input::default()
    };
    assert!(findings(&input(None)).is_empty());
    let found = findings(&input(Some("https://gw.example.com/base")));
    let places: Vec<&str> = found.iter().filter_map(|f| f.place.as_deref()).collect();
    assert_eq!(
        places,
        ["tools.bare.view.domain", "tools.claude_only.view.domain"]
    );
    assert_eq!(rules(&found), [Rule::WidgetDomain, Rule::WidgetDomain]);
    assert!(
        found[0]
            .message
            .contains("`tools.bare.view.domain = { chatgpt = \"https://gw.example.com\" }`"),
        "{}",
        found[0].message
    );
}

mod claude;
