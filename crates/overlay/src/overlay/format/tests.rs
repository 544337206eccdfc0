//! Tests of the file format: the shipped JSON Schemas against the serde
//! types.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::{Value, json};

use super::*;
use crate::overlay::load::MountFile;
use crate::overlay::validate;

const OVERLAY_SCHEMA: &str = include_str!("../../../../../overlays/schema/overlay.schema.json");
const WIDGET_SCHEMA: &str = include_str!("../../../../../overlays/schema/widget.schema.json");

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
    assert_same_keys::<crate::overlay::ToolsList>(&schema, "/properties/tools_list/properties");
    assert_same_keys::<RenderTool>(&schema, "/definitions/renderTool/properties");
    assert_same_keys::<Annotations>(&schema, "/definitions/annotations/properties");
    assert_same_keys::<ResultShaping>(&schema, "/definitions/result/properties");
    assert_same_keys::<crate::overlay::builtin::View>(&schema, "/definitions/view/properties");
    assert_same_keys::<crate::overlay::format::view::Action>(
        &schema,
        "/definitions/action/properties",
    );
    assert_same_keys::<crate::overlay::builtin::Field>(
        &schema,
        "/definitions/field/oneOf/1/properties",
    );

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
    assert_same_keys::<HostDomains>(&schema, "/definitions/hostDomains/properties");
    let mode = |m: DisplayMode| match m {
        DisplayMode::Inline | DisplayMode::Fullscreen | DisplayMode::Pip => m.as_str().to_owned(),
    };
    let bridges = enum_values(&schema, "/properties/bridge/enum");
    for (value, kind) in bridges
        .iter()
        .zip([BridgeKind::OpenAi, BridgeKind::McpApps])
    {
        let parsed: WidgetManifest = toml::from_str(&format!("bridge = \"{value}\"")).unwrap();
        assert_eq!(parsed.bridge, Some(kind), "{value}");
    }
    assert_eq!(bridges.len(), 2);
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

#[test]
fn a_widget_domain_is_a_string_or_a_table_per_host() {
    let one: WidgetManifest = toml::from_str("domain = \"https://w.example.com\"").unwrap();
    assert_eq!(
        one.domain,
        Some(WidgetDomain::One("https://w.example.com".into()))
    );
    let table: WidgetManifest = toml::from_str(
        "domain = { chatgpt = \"https://w.example.com\", claude = \"c.example.com\" }",
    )
    .unwrap();
    let hosts = HostDomains {
        chatgpt: Some("https://w.example.com".into()),
        claude: Some("c.example.com".into()),
        other: None,
    };
    assert_eq!(table.domain, Some(WidgetDomain::PerHost(hosts.clone())));
    let json: WidgetManifest = serde_json::from_value(
        json!({ "domain": { "chatgpt": "https://w.example.com", "claude": "c.example.com" } }),
    )
    .unwrap();
    assert_eq!(json.domain, Some(WidgetDomain::PerHost(hosts)));
    let typo = toml::from_str::<WidgetManifest>("domain = { claud = \"x\" }").unwrap_err();
    assert!(
        typo.message()
            .contains("unknown field `claud`, expected one of `chatgpt`, `claude`, `other`"),
        "{typo}"
    );
    let wrong = toml::from_str::<WidgetManifest>("domain = 3").unwrap_err();
    assert!(
        wrong
            .message()
            .contains("a string, or a table with keys chatgpt, claude, other"),
        "{wrong}"
    );
}
