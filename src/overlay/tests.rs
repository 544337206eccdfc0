//! Tests of the overlay model: the shipped JSON Schemas against the serde
//! types, and loading real directories (errors collected, located, and
//! nothing read from outside the overlay directory).

use std::fs;
use std::path::Path;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::{Value, json};

use super::load::MountFile;
use super::*;

const OVERLAY_SCHEMA: &str = include_str!("../../overlays/schema/overlay.schema.json");
const WIDGET_SCHEMA: &str = include_str!("../../overlays/schema/widget.schema.json");

// === schema sync ===

/// A deserializer that only records the field names a derived struct
/// accepts (serde hands them to `deserialize_struct`), then stops.
struct FieldProbe<'a>(&'a mut Vec<&'static str>);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.extend_from_slice(fields);
        Err(de::Error::custom("probe done"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

fn fields_of<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut fields = Vec::new();
    let _ = T::deserialize(FieldProbe(&mut fields));
    assert!(
        !fields.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    fields
}

fn schema_keys(schema: &Value, pointer: &str) -> Vec<String> {
    let properties = schema
        .pointer(pointer)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("no object at {pointer}"));
    properties.keys().cloned().collect()
}

/// Both ways: every key the type accepts is documented, and the schema
/// offers no key the type would reject.
fn assert_same_keys<T: DeserializeOwned>(schema: &Value, pointer: &str) {
    let mut accepted: Vec<String> = fields_of::<T>().into_iter().map(str::to_owned).collect();
    let mut documented = schema_keys(schema, pointer);
    accepted.sort();
    documented.sort();
    assert_eq!(
        accepted,
        documented,
        "{} vs schema {pointer}",
        std::any::type_name::<T>()
    );
}

fn enum_values(schema: &Value, pointer: &str) -> Vec<String> {
    let values = schema.pointer(pointer).and_then(Value::as_array);
    let values = values.unwrap_or_else(|| panic!("no enum at {pointer}"));
    values
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn shipped_schemas_are_json_and_match_the_overlay_types() {
    let schema: Value = serde_json::from_str(OVERLAY_SCHEMA).expect("overlay.schema.json is JSON");
    assert_same_keys::<MountFile<Value>>(&schema, "/properties");
    assert_same_keys::<ToolOverlay>(&schema, "/definitions/tool/properties");
    assert_same_keys::<RenderTool>(&schema, "/definitions/renderTool/properties");
    assert_same_keys::<Annotations>(&schema, "/definitions/annotations/properties");
    assert_same_keys::<ResultShaping>(&schema, "/definitions/result/properties");

    // Enums: each variant is listed by the exhaustive match, so a new one
    // fails to compile here until the schema is updated too.
    let audience = |a: Audience| match a {
        Audience::Model | Audience::App => a.as_str().to_owned(),
    };
    let values = enum_values(
        &schema,
        "/definitions/tool/properties/visibility/items/enum",
    );
    assert_eq!(values, [audience(Audience::Model), audience(Audience::App)]);
    let scheme = |s: &SecurityScheme| -> (&str, Vec<&str>) {
        match s {
            SecurityScheme::Noauth {} => ("noauth", vec!["type"]),
            SecurityScheme::Oauth2 { .. } => ("oauth2", vec!["type", "scopes"]),
        }
    };
    let variants = [
        SecurityScheme::Noauth {},
        SecurityScheme::Oauth2 { scopes: vec![] },
    ];
    for (i, variant) in variants.iter().enumerate() {
        let (tag, keys) = scheme(variant);
        let branch = format!("/definitions/securityScheme/oneOf/{i}");
        assert_eq!(
            schema.pointer(&format!("{branch}/properties/type/const")),
            Some(&json!(tag))
        );
        assert_eq!(schema_keys(&schema, &format!("{branch}/properties")), keys);
        let parsed: SecurityScheme = serde_json::from_value(variant.to_json()).unwrap();
        assert_eq!(&parsed, variant);
    }

    let schema: Value = serde_json::from_str(WIDGET_SCHEMA).expect("widget.schema.json is JSON");
    assert_same_keys::<WidgetManifest>(&schema, "/properties");
    assert_same_keys::<Csp>(&schema, "/definitions/csp/properties");
    assert_same_keys::<Permissions>(&schema, "/definitions/permissions/properties");
    let mode = |m: DisplayMode| match m {
        DisplayMode::Inline | DisplayMode::Fullscreen | DisplayMode::Pip => m.as_str().to_owned(),
    };
    let values = enum_values(&schema, "/properties/display_modes/items/enum");
    assert_eq!(
        values,
        [
            DisplayMode::Inline,
            DisplayMode::Fullscreen,
            DisplayMode::Pip
        ]
        .map(mode)
    );
}

#[test]
fn the_schema_agrees_with_the_limits_enforced_at_load() {
    let schema: Value = serde_json::from_str(OVERLAY_SCHEMA).unwrap();
    for key in ["invoking", "invoked"] {
        for table in ["tool", "renderTool"] {
            let max = schema.pointer(&format!("/definitions/{table}/properties/{key}/maxLength"));
            assert_eq!(max, Some(&json!(validate::STATUS_TEXT_MAX_CHARS)));
        }
    }
}

// === loading ===

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn errors(root: &Path) -> Vec<String> {
    let errors = load_dir(root).expect_err("should fail");
    // Paths relative to the temporary directory, for stable assertions.
    let prefix = format!("{}/", root.display());
    errors
        .0
        .iter()
        .map(|e| e.to_string().replace(&prefix, ""))
        .collect()
}

#[test]
fn loads_the_common_case() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        "[tools.get_current_time]\nwidget = \"clock\"\n",
    );
    write(root, "widgets/clock/index.html", "<p>clock</p>");
    write(root, "README.md", "ignored");
    write(root, "schema/overlay.schema.json", "{ \"ignored\": true }");
    write(root, ".time.toml.swp", "ignored");
    let set = load_dir(root).unwrap();
    let mount = set.mount("time").expect("mount named after the file");
    assert_eq!(
        mount.tool("get_current_time").unwrap().widget.as_deref(),
        Some("clock")
    );
    let clock = set.widgets().get("clock").unwrap();
    assert_eq!(clock.html, "<p>clock</p>");
    assert!(clock.meta.is_empty());
    assert_eq!(set.widgets().by_uri(&clock.uri), Some(clock));
    assert_eq!(set.widgets_for("time").len(), 1);
    assert!(set.widgets_for("other").is_empty());
}

#[test]
fn json_files_upstream_override_and_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let overlay = json!({
        "$schema": "./schema/overlay.schema.json",
        "upstream": "everything",
        "tools": { "echo": { "widget": "board", "invoking": "Echoing…", "visibility": ["app"] } }
    });
    write(root, "any-name.json", &overlay.to_string());
    write(
        root,
        "widgets/board/widget.toml",
        "entry = \"web/main.html\"\nprefers_border = true\n[csp]\nconnect_domains = [\"https://api.example.com\"]\nresource_domains = [\"https://cdn.example.com\"]\n",
    );
    write(
        root,
        "widgets/board/web/main.html",
        "<link rel=\"stylesheet\" href=\"main.css\"><script src=\"https://cdn.example.com/lib.js\"></script><script src=\"../app.js\"></script>",
    );
    write(root, "widgets/board/web/main.css", "p{}");
    write(root, "widgets/board/app.js", "go()");
    let set = load_dir(root).unwrap();
    assert!(set.mount("any-name").is_none());
    let echo = set.mount("everything").unwrap().tool("echo").unwrap();
    assert_eq!(echo.visibility, Some(vec![Audience::App]));
    let board = set.widgets().get("board").unwrap();
    assert_eq!(
        board.html,
        "<style>p{}</style><script src=\"https://cdn.example.com/lib.js\"></script><script>go()</script>"
    );
    assert_eq!(board.meta["ui"]["prefersBorder"], true);
}

#[test]
fn every_problem_is_reported_with_file_line_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "time.toml",
        concat!(
            "[tools.get_current_time]\n",
            "widget = \"clock\"\n",
            "invoking = \"This status text is far too long to be shown by ChatGPT, which stops at 64\"\n",
            "\n",
            "[tools.convert_time]\n",
            "widgt = \"clock\"\n",
            "\n",
            "[tools.third]\n",
            "widget = \"nowhere\"\n",
            "security_schemes = [{ type = \"noauth\", extra = 1 }]\n",
        ),
    );
    write(root, "broken.toml", "[tools.a\nwidget = 1\n");
    write(root, "top.json", "{\n  \"tools\": {},\n  \"typo\": 1\n}");
    write(
        root,
        "nested.json",
        "{\"tools\": {\n  \"t\": {\n    \"visibility\": [\"everyone\"]\n  }\n}}",
    );
    write(root, "widgets/clock/index.html", "<p></p>");
    write(root, "widgets/Bad Name/index.html", "<p></p>");
    write(
        root,
        "widgets/csp/widget.toml",
        "[csp]\nconnect_domains = [\"https://ok.example.com\", \"*\"]\nframe_domains = [\"https://x.com/path\"]\nextra = 1\n",
    );
    write(root, "widgets/csp/index.html", "");
    write(
        root,
        "widgets/assets/widget.toml",
        "[csp]\nresource_domains = [\"https://allowed.example.com\"]\n",
    );
    write(
        root,
        "widgets/assets/index.html",
        "<html>\n<script src=\"../escape.js\"></script>\n<script src=\"https://blocked.example.com/x.js\"></script>\n<link rel=\"stylesheet\" href=\"missing.css\">\n",
    );
    let got = errors(root);
    let expected = [
        "broken.toml:1: invalid table header; expected `.`, `]`",
        "nested.json:3: tools.t: unknown variant `everyone`, expected `model` or `app`",
        "time.toml:1: tools.get_current_time.invoking: 74 characters; ChatGPT allows at most 64",
        "time.toml:5: tools.convert_time: unknown field `widgt`, expected one of `widget`, `title`, `description`, `visibility`, `invoking`, `invoked`, `annotations`, `security_schemes`, `file_params`, `profile`, `output_schema`, `result`",
        "time.toml:8: tools.third.security_schemes: unknown field `extra`, there are no fields",
        "top.json:3: unknown field `typo`, expected one of `$schema`, `upstream`, `tools`, `render`",
        "widgets/Bad Name: widget folder `Bad Name`: names are 1 to 63 of a-z, 0-9, `-` and `_`, starting with a letter or digit (the name is the host of its ui:// URI)",
        "widgets/assets/index.html:2: script src \"../escape.js\": leaves the widget folder",
        "widgets/assets/index.html:4: stylesheet href \"missing.css\": cannot open: No such file or directory (os error 2)",
        "widgets/csp/widget.toml:4: unknown field `extra`, expected one of `connect_domains`, `resource_domains`, `frame_domains`, `base_uri_domains`, `redirect_domains`",
    ];
    assert_eq!(got, expected, "\n{}", got.join("\n"));
}

#[test]
fn manifest_rules_and_remote_assets_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/csp/widget.toml",
        "[csp]\nconnect_domains = [\"https://ok.example.com\", \"*\"]\nframe_domains = [\"https://x.com/path\"]\n",
    );
    write(root, "widgets/csp/index.html", "");
    write(
        root,
        "widgets/cdn/index.html",
        "<p>\n<script src=\"https://cdn.example.com/x.js\"></script>",
    );
    write(
        root,
        "app.toml",
        "[tools.t]\nwidget = \"csp\"\n[tools.u]\nwidget = \"absent\"\n",
    );
    let got = errors(root);
    let expected = [
        "app.toml:3: tools.u.widget: no widget folder `widgets/absent`",
        "widgets/cdn/index.html:2: \"https://cdn.example.com/x.js\" is remote, and its origin https://cdn.example.com is not in csp.resource_domains of the manifest, so hosts would block it",
        "widgets/csp/widget.toml:2: csp.connect_domains[1]: a bare `*` allows every origin (and ChatGPT rejects it); list the origins",
        "widgets/csp/widget.toml:3: csp.frame_domains[0]: `https://x.com/path` has a path; an origin is scheme://host[:port] only (try `https://x.com`)",
    ];
    assert_eq!(got, expected, "\n{}", got.join("\n"));
}

#[test]
fn a_tool_defined_twice_for_one_mount_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "time.toml", "[tools.a]\ntitle = \"A\"\n");
    write(
        root,
        "team-b.toml",
        "upstream = \"time\"\n[tools.a]\ntitle = \"B\"\n[tools.b]\ntitle = \"B\"\n",
    );
    let got = errors(root);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("time.toml:1: tools.a: mount `time` already has this tool in "),
        "{}",
        got[0]
    );
    assert!(got[0].ends_with("team-b.toml"), "{}", got[0]);
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_overlay_directory_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.js", "steal()");
    write(outside.path(), "other.toml", "[tools.x]\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/w/index.html",
        "<script src=\"link.js\"></script>",
    );
    std::os::unix::fs::symlink(
        outside.path().join("secret.js"),
        root.join("widgets/w/link.js"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("other.toml"), root.join("linked.toml"))
        .unwrap();
    // A symlink that stays inside is fine.
    write(root, "shared/lib.js", "ok()");
    write(
        root,
        "widgets/v/index.html",
        "<script src=\"lib.js\"></script>",
    );
    std::os::unix::fs::symlink(root.join("shared/lib.js"), root.join("widgets/v/lib.js")).unwrap();
    let got = errors(root);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with("linked.toml: resolves to ")
            && got[0].contains("outside the overlay directory"),
        "{}",
        got[0]
    );
    assert!(
        got[1].starts_with("widgets/w/index.html:1: script src \"link.js\": resolves to "),
        "{}",
        got[1]
    );
}

#[test]
fn a_missing_directory_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let got = load_dir(&dir.path().join("nope")).unwrap_err();
    assert_eq!(got.0.len(), 1);
    assert!(
        got.to_string()
            .starts_with("1 problem in the overlays:\n  ")
    );
}

// === versions ===

fn version(html: &str) -> Widget {
    Widget::compile("clock", &WidgetManifest::default(), html.into())
}

#[test]
fn superseded_versions_stay_readable_within_a_bound() {
    let mut set = OverlaySet::new(Default::default(), Widgets::new([version("v0")]));
    let mut uris = vec![set.widgets().get("clock").unwrap().uri.clone()];
    for i in 1..=RETAINED_VERSIONS + 2 {
        let mut next = OverlaySet::new(
            Default::default(),
            Widgets::new([version(&format!("v{i}"))]),
        );
        next.retain_previous_versions(&set);
        uris.push(next.widgets().get("clock").unwrap().uri.clone());
        set = next;
    }
    let readable: Vec<bool> = uris
        .iter()
        .map(|u| set.widgets().by_uri(u).is_some())
        .collect();
    let dropped = uris.len() - 1 - RETAINED_VERSIONS;
    assert!(readable[..dropped].iter().all(|r| !r), "{readable:?}");
    assert!(readable[dropped..].iter().all(|r| *r), "{readable:?}");
    assert_eq!(
        set.widgets().iter().count(),
        1,
        "only the current version is listed"
    );

    // An unchanged reload adds no history.
    let mut same = OverlaySet::new(
        Default::default(),
        Widgets::new([version(&format!("v{}", RETAINED_VERSIONS + 2))]),
    );
    same.retain_previous_versions(&set);
    assert_eq!(same, set);
}

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
    assert!(unknown[0].contains("unknown field `widgt`"), "{unknown:?}");
}
