//! Tests of widget compilation: asset inlining, resource metadata and
//! versioned URIs.

use super::inline::*;
use super::*;

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
        "<link rel=icon href=icon.png>",
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
        ("<script src=\"/abs.js\"></script>", "absolute paths"),
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
