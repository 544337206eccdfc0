//! Tests of the overlay rules.

use super::*;
use crate::overlay::validate::csp::{chatgpt_domain, claude_domain, domain};
use crate::overlay::{
    Audience, Csp, DisplayMode, HostDomains, ResultShaping, SecurityScheme, WidgetDomain,
};

#[test]
fn status_text_is_limited_to_64_characters() {
    let cases: [(String, bool); 6] = [
        (String::new(), true),
        ("Checking the clock…".into(), true),
        ("a".repeat(64), true),
        ("é".repeat(64), true), // characters, not bytes
        ("a".repeat(65), false),
        ("two\nlines".into(), false),
    ];
    for (text, ok) in cases {
        assert_eq!(status_text(&text).is_ok(), ok, "{text:?}");
    }
    let reason = status_text(&"x".repeat(70)).unwrap_err();
    assert!(
        reason.contains("70 characters") && reason.contains("64"),
        "{reason}"
    );
}

#[test]
fn csp_origins() {
    let cases = [
        ("https://api.example.com", Ok(())),
        ("https://api.example.com:8443", Ok(())),
        ("https://*.example.com", Ok(())),
        ("wss://live.example.com", Ok(())),
        ("http://localhost:3000", Ok(())),
        ("http://127.0.0.1:8080", Ok(())),
        ("http://[::1]:8080", Ok(())),
        ("*", Err("bare `*`")),
        ("https://*", Err("bare `*`")),
        ("api.example.com", Err("not an origin")),
        ("https://example.com/", Err("has a path")),
        ("https://example.com/app", Err("has a path")),
        ("https://example.com; script-src *", Err("`;`")),
        ("https://example.com\r\nX: y", Err("carriage return")),
        ("https://example.com\n", Err("line feed")),
        ("'self'", Err("a `'`")),
        ("\"https://example.com\"", Err("a `\"`")),
        ("https://exa mple.com", Err("a space")),
        ("https://a.com,https://b.com", Err("a `,`")),
        ("https://api.*.example.com", Err("wildcard")),
        ("https://*example.com", Err("wildcard")),
        ("HTTPS://example.com", Err("not a scheme")),
        ("https://example.com:0", Err("not a port")),
        ("https://example.com:99999", Err("not a port")),
        ("https://user@example.com", Err("user name")),
        ("https://-bad.example.com", Err("not a host name")),
        ("https://", Err("no host")),
        ("", Err("empty")),
    ];
    for (value, expected) in cases {
        match (origin(value), expected) {
            (Ok(()), Ok(())) => {}
            (Err(reason), Err(part)) => assert!(reason.contains(part), "{value:?}: {reason}"),
            (got, want) => panic!("{value:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn widget_domain_accepts_both_host_forms() {
    assert!(domain("https://widgets.example.com").is_ok());
    assert!(domain("0123456789abcdef0123456789abcdef.claudemcpcontent.com").is_ok());
    assert!(domain("https://*.example.com").is_err());
    assert!(domain("example.com/path").is_err());
    assert!(domain("https://example.com;").is_err());
}

#[test]
fn each_host_has_its_domain_form() {
    assert!(chatgpt_domain("https://widgets.example.com").is_ok());
    assert!(chatgpt_domain("https://widgets.example.com:8443").is_ok());
    let bare = chatgpt_domain("widgets.example.com").unwrap_err();
    assert_eq!(
        bare,
        "`widgets.example.com` is a bare host name; ChatGPT's widget domain is an origin (try `https://widgets.example.com`)"
    );
    assert!(chatgpt_domain("https://*.example.com").is_err());
    assert!(chatgpt_domain("https://example.com/path").is_err());

    assert!(claude_domain("0123456789abcdef0123456789abcdef.claudemcpcontent.com").is_ok());
    let origin = claude_domain("https://widgets.example.com").unwrap_err();
    assert!(
        origin.starts_with("`https://widgets.example.com` is an origin; Claude's widget domain is a bare host name such as `widgets.example.com`"),
        "{origin}"
    );
    assert!(origin.contains("set public_url"), "{origin}");
    assert!(claude_domain("a b.example.com").is_err());
    assert!(claude_domain("-x.example.com").is_err());
}

#[test]
fn per_host_domains_are_checked_by_host() {
    let manifest = WidgetManifest {
        domain: Some(WidgetDomain::PerHost(HostDomains {
            chatgpt: Some("widgets.example.com".into()),
            claude: Some("https://widgets.example.com".into()),
            other: Some("https://*.example.com".into()),
        })),
        ..WidgetManifest::default()
    };
    assert_eq!(
        places(&super::manifest(&manifest)),
        ["domain.chatgpt", "domain.claude", "domain.other"]
    );
    let fine = WidgetManifest {
        domain: Some(WidgetDomain::PerHost(HostDomains {
            chatgpt: Some("https://widgets.example.com".into()),
            claude: Some("0123456789abcdef0123456789abcdef.claudemcpcontent.com".into()),
            other: Some("widgets.example.org".into()),
        })),
        ..WidgetManifest::default()
    };
    assert!(super::manifest(&fine).is_empty());
}

#[test]
fn widget_names() {
    for ok in ["clock", "task-list", "v2_board", "3d"] {
        assert!(widget_name(ok).is_ok(), "{ok}");
    }
    for bad in ["", "Clock", "-x", "a.b", "a b", "é", &"a".repeat(64)] {
        assert!(widget_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn remote_asset_origins() {
    assert_eq!(
        url_origin("https://CDN.example.com/x.js?v=1").as_deref(),
        Some("https://cdn.example.com")
    );
    assert_eq!(
        url_origin("//cdn.example.com:444/x.js").as_deref(),
        Some("https://cdn.example.com:444")
    );
    let allowed = [
        "https://cdn.example.com".to_owned(),
        "https://*.static.net".to_owned(),
    ];
    assert!(origin_allowed("https://cdn.example.com", &allowed));
    assert!(origin_allowed("https://a.b.static.net", &allowed));
    assert!(!origin_allowed("https://static.net", &allowed));
    assert!(!origin_allowed("http://cdn.example.com", &allowed));
    assert!(!origin_allowed("https://evil-static.net", &allowed));
}

fn no_widgets(_: &str) -> bool {
    false
}

fn places(problems: &[Problem]) -> Vec<&str> {
    problems.iter().map(|p| p.place.as_str()).collect()
}

#[test]
fn tool_rules() {
    let schema = serde_json::json!({ "type": "object", "required": ["secret"] });
    let tool = ToolOverlay {
        widget: Some("missing".into()),
        visibility: Some(vec![Audience::App, Audience::App]),
        invoking: Some("x".repeat(65)),
        invoked: Some("Done".into()),
        security_schemes: Some(vec![
            SecurityScheme::Noauth {},
            SecurityScheme::Oauth2 {
                scopes: vec!["a b".into()],
            },
        ]),
        file_params: vec!["file".into(), "file".into()],
        output_schema: schema.as_object().cloned(),
        result: ResultShaping {
            structured_from_text: true,
            widget_only: vec!["secret".into()],
        },
        ..ToolOverlay::default()
    };
    let problems = tool_problems(&tool);
    assert_eq!(
        places(&problems),
        [
            "widget",
            "visibility",
            "invoking",
            "security_schemes[1].scopes[0]",
            "file_params",
            "result.widget_only"
        ]
    );
    let empty = ToolOverlay {
        visibility: Some(vec![]),
        security_schemes: Some(vec![]),
        output_schema: serde_json::json!({ "type": "array" }).as_object().cloned(),
        ..ToolOverlay::default()
    };
    assert_eq!(
        places(&tool_problems(&empty)),
        ["visibility", "security_schemes", "output_schema.type"]
    );
    assert!(tool_problems(&ToolOverlay::default()).is_empty());
}

fn tool_problems(t: &ToolOverlay) -> Vec<Problem> {
    tool(t, &no_widgets)
}

#[test]
fn manifest_rules() {
    let manifest = WidgetManifest {
        entry: Some("../index.html".into()),
        domain: Some("https://*.x.com".into()),
        display_modes: Some(vec![DisplayMode::Inline, DisplayMode::Inline]),
        csp: Some(Csp {
            connect_domains: Some(vec!["https://ok.example.com".into(), "*".into()]),
            redirect_domains: Some(vec!["https://x.com/path".into()]),
            ..Csp::default()
        }),
        ..WidgetManifest::default()
    };
    assert_eq!(
        places(&super::manifest(&manifest)),
        [
            "entry",
            "domain",
            "display_modes",
            "csp.connect_domains[1]",
            "csp.redirect_domains[0]"
        ]
    );
    assert!(super::manifest(&WidgetManifest::default()).is_empty());
}
