//! Tests of widget compilation: asset inlining, resource metadata and
//! versioned URIs.

use super::inline::*;
use super::scan::AssetError;
use super::*;
use crate::overlay::{Csp, HostDomains};

/// [`bundle`] with every file inlined or turned into a `data:` URI where it
/// can be, and no served files: the entry's folder is `entry_dir`.
fn inline_assets(
    html: &str,
    entry_dir: &str,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Inlined, Vec<AssetError>> {
    let options = BundleOptions {
        entry_dir,
        base: "",
        inline_max: usize::MAX,
        asset_base: None,
        placeholder: "",
    };
    let mut read_bytes = |path: &str| read(path).map(String::into_bytes);
    bundle(html, &options, &mut read_bytes).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| AssetError {
                offset: e.offset,
                reason: match e.file {
                    Some(file) => format!("{file}: {}", e.reason),
                    None => e.reason,
                },
            })
            .collect()
    })
}

fn files(path: &str) -> Result<String, String> {
    match path {
        "app.js" => Ok("console.log('</script>')".into()),
        "lib/util.js" => Ok("var u = 1;".into()),
        "style.css" => Ok("body { color: red }".into()),
        other => Err(format!("no file {other}")),
    }
}

fn inline(html: &str) -> Result<Inlined, Vec<AssetError>> {
    inline_assets(html, "", &mut files)
}

#[test]
fn inlines_local_scripts_and_stylesheets() {
    let html = r#"<html><head><link rel="stylesheet" href="style.css" media="screen"><script type="module" src="app.js"></script></head><body></body></html>"#;
    let out = inline(html).unwrap();
    assert_eq!(
        out.html,
        r#"<html><head><style media="screen">body { color: red }</style><script type="module">console.log('<\/script>')</script></head><body></body></html>"#
    );
    assert!(out.remote.is_empty());
}

#[test]
fn deferred_classic_scripts_move_to_the_end_of_body() {
    let html = "<head><script defer src=\"app.js\"></script><script src=\"./lib/util.js\"></script></head><BODY><p>x</p></BODY>";
    let out = inline(html).unwrap().html;
    assert_eq!(
        out,
        "<head><script>var u = 1;</script></head><BODY><p>x</p><script>console.log('<\\/script>')</script></BODY>"
    );
}

#[test]
fn leaves_remote_data_comments_and_inline_code_alone() {
    let html = concat!(
        "<!-- <script src=\"gone.js\"></script> -->",
        "<script>var s = '<script src=\"gone.js\"></script>';</script>",
        "<style>/* <link rel=stylesheet href=gone.css> */</style>",
        "<script src=\"https://cdn.example.com/x.js\"></script>",
        "<script src=\"data:text/javascript,1\"></script>",
        "<link rel=icon href=https://cdn.example.com/icon.png>",
    );
    let out = inline(html).unwrap();
    // As in a browser, the first `</script` ends an inline script, so
    // the string above holds no element of its own.
    assert!(
        out.html
            .starts_with("<!-- <script src=\"gone.js\"></script> -->")
    );
    assert_eq!(out.remote.len(), 1);
    assert_eq!(out.remote[0].1, "https://cdn.example.com/x.js");
}

#[test]
fn rejects_paths_outside_the_folder_and_missing_files() {
    let cases = [
        ("<script src=\"/abs.js\"></script>", "no file abs.js"),
        (
            "<script src=\"../up.js\"></script>",
            "leaves the widget folder",
        ),
        ("<script src=\"a\\b.js\"></script>", "separator"),
        ("<script src=\"missing.js\"></script>", "no file missing.js"),
        (
            "<link rel=\"stylesheet\" href=\"x/../../y.css\">",
            "leaves the widget folder",
        ),
        ("<script src=\"app.js\">", "never closed"),
    ];
    for (html, expected) in cases {
        let errors = inline(html).unwrap_err();
        assert_eq!(errors.len(), 1, "{html}");
        assert!(
            errors[0].reason.contains(expected),
            "{html}: {:?}",
            errors[0]
        );
        assert_eq!(errors[0].offset, 0);
    }
}

#[test]
fn resolves_relative_to_the_entry_folder() {
    let mut seen = Vec::new();
    let mut read = |path: &str| {
        seen.push(path.to_owned());
        Ok(String::new())
    };
    let html = "<script src=\"../app.js?v=3\"></script><script src=\"util.js\"></script>";
    inline_assets(html, "lib", &mut read).unwrap();
    assert_eq!(seen, ["app.js", "lib/util.js"]);
}

#[test]
fn uri_changes_with_html_and_meta() {
    let manifest = WidgetManifest::default();
    let a = Widget::compile("clock", &manifest, "<p>a</p>".into());
    let b = Widget::compile("clock", &manifest, "<p>b</p>".into());
    let bordered = WidgetManifest {
        prefers_border: Some(true),
        ..WidgetManifest::default()
    };
    let c = Widget::compile("clock", &bordered, "<p>a</p>".into());
    assert!(a.uri.starts_with("ui://clock/") && a.uri.ends_with(".html"));
    assert_eq!(
        a.uri.len(),
        "ui://clock/".len() + HASH_DIGITS + ".html".len()
    );
    assert_ne!(a.uri, b.uri);
    assert_ne!(a.uri, c.uri);
    assert_eq!(
        a.uri,
        Widget::compile("clock", &manifest, "<p>a</p>".into()).uri
    );
}

#[test]
fn manifest_meta_is_merged_last_and_its_overrides_are_recorded() {
    let manifest = WidgetManifest {
        domain: Some("https://widgets.example.com".into()),
        meta: serde_json::json!({
            "vendor/flag": true,
            "openai/widgetDomain": "https://other.example.com"
        })
        .as_object()
        .cloned(),
        ..WidgetManifest::default()
    };
    let widget = Widget::compile("w", &manifest, "<p>w</p>".into());
    assert_eq!(widget.meta["vendor/flag"], true);
    assert_eq!(
        widget.meta["openai/widgetDomain"],
        "https://other.example.com"
    );
    assert_eq!(widget.meta["ui"]["domain"], "https://widgets.example.com");
    assert_eq!(
        widget.meta_overrides,
        vec!["openai/widgetDomain".to_owned()]
    );
    // The URI follows the merged metadata.
    let plain = Widget::compile(
        "w",
        &WidgetManifest {
            meta: None,
            ..manifest
        },
        "<p>w</p>".into(),
    );
    assert_ne!(plain.uri, widget.uri);
    assert!(plain.meta_overrides.is_empty());
}

fn per_host(chatgpt: Option<&str>, claude: Option<&str>, other: Option<&str>) -> WidgetManifest {
    WidgetManifest {
        domain: Some(WidgetDomain::PerHost(HostDomains {
            chatgpt: chatgpt.map(Into::into),
            claude: claude.map(Into::into),
            other: other.map(Into::into),
        })),
        prefers_border: Some(true),
        csp: Some(Csp {
            connect_domains: Some(vec!["https://api.example.com".into()]),
            ..Csp::default()
        }),
        ..WidgetManifest::default()
    }
}

/// `(ui.domain, openai/widgetDomain)` of the `_meta` `target` is given.
fn domains(widget: &Widget, target: &Target) -> (Option<String>, Option<String>) {
    let meta = widget.meta_for(target);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    (
        text(meta.get("ui").and_then(|ui| ui.get("domain"))),
        text(meta.get("openai/widgetDomain")),
    )
}

const DERIVED: &str = "b1e0d44df330fd98977e615855c0b650.claudemcpcontent.com";

fn target(kind: HostKind) -> Target {
    Target::new(kind, Some(DERIVED.into()))
}

fn pair(ui: Option<&str>, openai: Option<&str>) -> (Option<String>, Option<String>) {
    (ui.map(Into::into), openai.map(Into::into))
}

#[test]
fn each_host_gets_the_domain_in_its_form() {
    let claude = "0123456789abcdef0123456789abcdef.claudemcpcontent.com";
    let w = Widget::compile(
        "w",
        &per_host(
            Some("https://w.example.com"),
            Some(claude),
            Some("w.example.org"),
        ),
        "<p>w</p>".into(),
    );
    let chatgpt = "https://w.example.com";
    assert_eq!(
        domains(&w, &target(HostKind::ChatGpt)),
        pair(Some(chatgpt), Some(chatgpt))
    );
    // A declared value wins over the derived one; Claude reads no openai/* key.
    assert_eq!(
        domains(&w, &target(HostKind::Claude)),
        pair(Some(claude), None)
    );
    // `openai/widgetDomain` is always an origin.
    assert_eq!(
        domains(&w, &target(HostKind::Other)),
        pair(Some("w.example.org"), Some("https://w.example.org"))
    );

    // Without a claude value, Claude gets the derived domain, if any, in the
    // place the manifest order gives it (after csp).
    let w = Widget::compile("w", &per_host(Some(chatgpt), None, None), "<p>w</p>".into());
    let meta = w.meta_for(&target(HostKind::Claude));
    let ui: Vec<&String> = meta["ui"].as_object().unwrap().keys().collect();
    assert_eq!(ui, ["csp", "domain", "prefersBorder"]);
    assert_eq!(meta["ui"]["domain"], DERIVED);
    assert!(meta.get("openai/widgetDomain").is_none());
    assert_eq!(
        domains(&w, &Target::new(HostKind::Claude, None)),
        pair(None, None)
    );
    assert_eq!(domains(&w, &target(HostKind::Other)), pair(None, None));
    // The derived domain is Claude's only.
    assert_eq!(
        domains(&w, &target(HostKind::ChatGpt)),
        pair(Some(chatgpt), Some(chatgpt))
    );

    // No domain at all: Claude still gets the derived one, with `ui` made.
    let w = Widget::compile("w", &WidgetManifest::default(), "<p>w</p>".into());
    let meta = w.meta_for(&target(HostKind::Claude));
    assert_eq!(
        Value::Object(meta.into_owned()),
        json!({ "ui": { "domain": DERIVED } })
    );
    assert!(w.meta_for(&target(HostKind::ChatGpt)).is_empty());
}

#[test]
fn the_string_form_serves_chatgpt_and_other_hosts() {
    let origin = WidgetManifest {
        domain: Some("https://w.example.com".into()),
        ..WidgetManifest::default()
    };
    let w = Widget::compile("w", &origin, "<p>w</p>".into());
    let o = Some("https://w.example.com");
    assert_eq!(domains(&w, &target(HostKind::ChatGpt)), pair(o, o));
    assert_eq!(domains(&w, &target(HostKind::Other)), pair(o, o));
    // An origin is never Claude's form: the derived domain, or none.
    assert_eq!(
        domains(&w, &target(HostKind::Claude)),
        pair(Some(DERIVED), None)
    );
    assert_eq!(
        domains(&w, &Target::new(HostKind::Claude, None)),
        pair(None, None)
    );

    // A bare host name: ChatGPT sees its origin; Claude sees it only when
    // no domain can be derived.
    let bare = WidgetManifest {
        domain: Some("w.example.com".into()),
        ..WidgetManifest::default()
    };
    let w = Widget::compile("w", &bare, "<p>w</p>".into());
    assert_eq!(domains(&w, &target(HostKind::ChatGpt)), pair(o, o));
    assert_eq!(
        domains(&w, &target(HostKind::Other)),
        pair(Some("w.example.com"), o)
    );
    assert_eq!(
        domains(&w, &target(HostKind::Claude)),
        pair(Some(DERIVED), None)
    );
    assert_eq!(
        domains(&w, &Target::new(HostKind::Claude, None)),
        pair(Some("w.example.com"), None)
    );
}

#[test]
fn the_uri_covers_every_host_domain_and_is_the_same_for_all() {
    let html = || "<p>w</p>".to_owned();
    let a = Widget::compile(
        "w",
        &per_host(Some("https://a.example.com"), None, None),
        html(),
    );
    let b = Widget::compile(
        "w",
        &per_host(Some("https://b.example.com"), None, None),
        html(),
    );
    let c = Widget::compile(
        "w",
        &per_host(Some("https://a.example.com"), Some("c.example.com"), None),
        html(),
    );
    assert_ne!(a.uri, b.uri);
    assert_ne!(a.uri, c.uri);
    // A string form keeps the URI it had before per-host domains existed:
    // the hash of the HTML and the one `_meta` every host then saw.
    let one = WidgetManifest {
        domain: Some("https://a.example.com".into()),
        ..WidgetManifest::default()
    };
    let w = Widget::compile("w", &one, html());
    assert_eq!(w.uri, versioned_uri("w", &html(), &w.meta, &[]));
    assert_eq!(w.meta, resource_meta(&one, HostKind::Other));
}

#[test]
fn a_manifest_meta_that_sets_ui_keeps_the_derived_domain_out() {
    let manifest = WidgetManifest {
        meta: json!({ "ui": { "domain": "mine.example.com" } })
            .as_object()
            .cloned(),
        ..WidgetManifest::default()
    };
    let w = Widget::compile("w", &manifest, "<p>w</p>".into());
    assert!(!w.claude_derives);
    assert_eq!(
        domains(&w, &target(HostKind::Claude)),
        pair(Some("mine.example.com"), None)
    );
}
