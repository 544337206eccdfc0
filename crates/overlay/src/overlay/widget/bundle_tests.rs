//! Tests of bundling a built widget: every reference of the entry and of
//! what it loads resolves (inlined, a `data:` URI, or served), or is an
//! error naming its file and the reference.

use std::collections::BTreeMap;

use super::inline::*;
use super::refs::{RefKind, css_refs, js_refs};

const ASSETS: &str = "https://gw.example.com/assets";

/// A Vite build with a relative base: the entry module imports nothing
/// statically but loads a lazy chunk, which imports the entry back.
fn vite_files(root: &str) -> BTreeMap<String, Vec<u8>> {
    // Vite writes a stylesheet's URLs relative to it, or from the root.
    let font = if root == "/" {
        "/assets/font.woff2"
    } else {
        "./font.woff2"
    };
    let mut files = BTreeMap::new();
    let mut add = |path: &str, body: &str| {
        files.insert(path.to_owned(), body.as_bytes().to_vec());
    };
    add(
        "dist/assets/index-A.js",
        "const re=/[\"'`]/g;const L=()=>import(`./Checks-B.js`);export{L as t};\n//# sourceMappingURL=index-A.js.map",
    );
    add("dist/assets/index-A.js.map", "{}");
    add(
        "dist/assets/Checks-B.js",
        &format!(
            "import{{t as e}}from\"./index-A.js\";var n=new URL(`picture.svg`,import.meta.url).href;var m=\"{root}assets/photo.png\";"
        ),
    );
    add("dist/assets/picture.svg", &"<svg/>".repeat(2000));
    add("dist/assets/photo.png", &"p".repeat(20_000));
    add(
        "dist/assets/index-C.css",
        &format!(
            "@font-face{{font-family:I;src:url({font})format(\"woff2\")}}.i{{background:url(\"./icon.png\")}}"
        ),
    );
    add("dist/assets/font.woff2", &"f".repeat(20_000));
    add("dist/assets/icon.png", "tiny");
    files
}

fn entry(root: &str) -> String {
    format!(
        "<head><script type=\"module\" crossorigin src=\"{root}assets/index-A.js\"></script>\n<link rel=\"stylesheet\" crossorigin href=\"{root}assets/index-C.css\"><link rel=\"icon\" href=\"{root}assets/icon.png\"></head><body><img src=\"{root}assets/photo.png\" srcset=\"{root}assets/icon.png 1x, {root}assets/photo.png 2x\"></body>"
    )
}

fn run(
    html: &str,
    files: &BTreeMap<String, Vec<u8>>,
    asset_base: Option<&str>,
) -> Result<Inlined, Vec<BundleError>> {
    let options = BundleOptions {
        entry_dir: "dist",
        base: "dist",
        inline_max: 8 * 1024,
        asset_base,
        placeholder: "__ASSET_BASE_URL__",
    };
    let mut read = |path: &str| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| format!("no file {path}"))
    };
    bundle(html, &options, &mut read)
}

fn check_vite_build(root: &str) {
    let files = vite_files(root);
    let out = run(&entry(root), &files, Some(ASSETS)).unwrap();
    let served = |path: &str| format!("{ASSETS}/{}/{path}", out.prefix);
    assert_eq!(out.prefix.len(), 16, "{out:?}");
    // The entry module loads others: served, not inlined, so the chunk
    // that imports it back shares its instance.
    assert!(
        out.html.contains(&format!(
            "<script type=\"module\" crossorigin src=\"{}\"></script>",
            served("dist/assets/index-A.js")
        )),
        "{}",
        out.html
    );
    // The stylesheet is inlined; its font is served, its small icon inlined.
    assert!(out.html.contains("<style>@font-face"), "{}", out.html);
    assert!(
        out.html.contains(&served("dist/assets/font.woff2")),
        "{}",
        out.html
    );
    assert!(
        out.html.contains("url(\"data:image/png;base64,dGlueQ==\")"),
        "{}",
        out.html
    );
    assert!(
        out.html
            .contains("<link rel=\"icon\" href=\"data:image/png;base64,dGlueQ==\">"),
        "{}",
        out.html
    );
    // A large image is served; srcset candidates each resolve.
    assert!(
        out.html.contains(&format!(
            "<img src=\"{}\" srcset=\"data:image/png;base64,dGlueQ== 1x, {} 2x\">",
            served("dist/assets/photo.png"),
            served("dist/assets/photo.png")
        )),
        "{}",
        out.html
    );
    let paths: Vec<&str> = out.assets.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "dist/assets/Checks-B.js",
            "dist/assets/font.woff2",
            "dist/assets/index-A.js",
            "dist/assets/index-A.js.map",
            "dist/assets/photo.png",
            "dist/assets/picture.svg",
        ]
    );
    let chunk = out
        .assets
        .iter()
        .find(|a| a.path.ends_with("Checks-B.js"))
        .unwrap();
    assert_eq!(chunk.media_type, "text/javascript");
    let chunk = std::str::from_utf8(&chunk.body).unwrap();
    // Relative references resolve by themselves under the served folder;
    // a root-relative one is made absolute.
    assert!(chunk.contains("from\"./index-A.js\""), "{chunk}");
    if root != "./" {
        assert!(chunk.contains(&served("dist/assets/photo.png")), "{chunk}");
    }
    let font = out
        .assets
        .iter()
        .find(|a| a.path.ends_with(".woff2"))
        .unwrap();
    assert_eq!(font.media_type, "font/woff2");
}

#[test]
fn a_vite_build_with_a_relative_base_resolves_every_reference() {
    check_vite_build("./");
}

#[test]
fn a_vite_build_with_an_absolute_base_resolves_in_the_base_folder() {
    check_vite_build("/");
}

/// OpenAI's example builds write `__ASSET_BASE_URL__/…`, for their server to
/// fill in at run time: read like a leading `/`, in the document and in the
/// modules the gateway serves.
#[test]
fn a_build_with_the_asset_base_placeholder_resolves_in_the_base_folder() {
    check_vite_build("__ASSET_BASE_URL__/");
}

#[test]
fn the_served_folder_changes_with_any_served_file() {
    let files = vite_files("./");
    let a = run(&entry("./"), &files, Some(ASSETS)).unwrap();
    let mut changed = files.clone();
    changed.insert(
        "dist/assets/picture.svg".into(),
        b"<svg>other</svg>".repeat(900),
    );
    let b = run(&entry("./"), &changed, Some(ASSETS)).unwrap();
    assert_ne!(a.prefix, b.prefix);
    assert_ne!(a.html, b.html, "the document names the new folder");
}

#[test]
fn a_reference_to_nothing_names_its_file_and_reference() {
    let mut files = vite_files("./");
    files.insert(
        "dist/assets/Checks-B.js".into(),
        b"import{t}from\"./index-A.js\";import(\"./Missing.js\")".to_vec(),
    );
    let errors = run(&entry("./"), &files, Some(ASSETS)).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].file.as_deref(), Some("dist/assets/Checks-B.js"));
    assert!(
        errors[0]
            .reason
            .contains("import() \"./Missing.js\": dist/assets/Missing.js: no file"),
        "{errors:?}"
    );
}

#[test]
fn references_that_leave_the_folder_bare_or_computed_are_errors() {
    let cases = [
        ("import(\"../../../x.js\")", "leaves the widget folder"),
        ("import{a}from\"react\";", "bare module specifier"),
        ("const n='x';import(n)", "not a string literal"),
        ("a{}", ""),
    ];
    for (chunk, expected) in cases {
        let mut files = vite_files("./");
        let body = format!("import{{t}}from\"./index-A.js\";{chunk}");
        files.insert("dist/assets/Checks-B.js".into(), body.into_bytes());
        let result = run(&entry("./"), &files, Some(ASSETS));
        if expected.is_empty() {
            assert!(result.is_ok(), "{chunk}: {result:?}");
            continue;
        }
        let errors = result.unwrap_err();
        assert!(
            errors.iter().any(|e| e.reason.contains(expected)),
            "{chunk}: {errors:?}"
        );
    }
    let css = "<style>.a{background:url(../../up.png)}</style>";
    let errors = run(css, &BTreeMap::new(), Some(ASSETS)).unwrap_err();
    assert!(
        errors[0].reason.contains("leaves the widget folder"),
        "{errors:?}"
    );
    let missing = "<img src=\"nothing.png\">";
    let errors = run(missing, &BTreeMap::new(), Some(ASSETS)).unwrap_err();
    assert!(
        errors[0]
            .reason
            .contains("img src \"nothing.png\": dist/nothing.png: no file"),
        "{errors:?}"
    );
}

#[test]
fn served_files_without_a_public_url_are_an_error() {
    let files = vite_files("./");
    let errors = run(&entry("./"), &files, None).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].reason.contains("public_url is not set"),
        "{errors:?}"
    );
    // Small files only: no public URL needed.
    let mut small = BTreeMap::new();
    small.insert(
        "dist/a.css".to_owned(),
        b".a{background:url(b.png)}".to_vec(),
    );
    small.insert("dist/b.png".to_owned(), b"png".to_vec());
    let out = run("<link rel=stylesheet href=a.css>", &small, None).unwrap();
    assert_eq!(
        out.html,
        "<style>.a{background:url(data:image/png;base64,cG5n)}</style>"
    );
    assert!(out.assets.is_empty() && out.prefix.is_empty());
}

#[test]
fn the_script_scanner_tells_strings_from_regexes_comments_and_templates() {
    let src = concat!(
        "let a = /['\"]/g, b = 4 / 2 / 1; // import('./no.js')\n",
        "/* import './no.js' */ import x from './a.js'; export * from \"./b.js\";\n",
        "import('./c.js'); o.import('./not.js'); `t ${'./in.js'} ${import(`./d.js`)}`;\n",
        "import(`./${computed}`);\n",
        "const u = new URL('./e.png', import.meta.url); const r = '/root.png';\n",
        "//# sourceMappingURL=f.js.map",
    );
    let (refs, problems) = js_refs(src, "");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(src[problems[0].offset..].starts_with("`./${computed}`"));
    let found: Vec<(RefKind, &str)> = refs.iter().map(|r| (r.kind, r.value.as_str())).collect();
    assert_eq!(
        found,
        [
            (RefKind::Import, "./a.js"),
            (RefKind::Import, "./b.js"),
            (RefKind::DynamicImport, "./c.js"),
            (RefKind::DynamicImport, "./d.js"),
            (RefKind::ModuleUrl, "./e.png"),
            (RefKind::RootString, "/root.png"),
            (RefKind::SourceMap, "f.js.map"),
        ]
    );
    for r in &refs {
        assert_eq!(&src[r.range.clone()], r.value);
    }
}

#[test]
fn srcset_candidates_keep_data_urls_whole() {
    let mut files = BTreeMap::new();
    files.insert("dist/a.png".to_owned(), b"a".to_vec());
    let html = "<img srcset=\"data:image/png;base64,AA== 1x,a.png 2x\">";
    let out = run(html, &files, None).unwrap();
    assert_eq!(
        out.html,
        "<img srcset=\"data:image/png;base64,AA== 1x, data:image/png;base64,YQ== 2x\">"
    );
}

#[test]
fn the_stylesheet_scanner_finds_urls_and_imports() {
    let src = "@import \"a.css\";@import url(b.css);/* url(no.png) */.x{background:URL( 'c.png' )}.y{mask:url(#m)}\n/*# sourceMappingURL=s.css.map */";
    let refs = css_refs(src);
    let found: Vec<(RefKind, &str)> = refs.iter().map(|r| (r.kind, r.value.as_str())).collect();
    assert_eq!(
        found,
        [
            (RefKind::CssImport, "a.css"),
            (RefKind::CssImport, "b.css"),
            (RefKind::CssUrl, "c.png"),
            (RefKind::SourceMap, "s.css.map"),
        ]
    );
}
