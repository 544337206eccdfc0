//! File parameters (`openai/fileParams`): a parameter is declared only when
//! its schema is the file descriptor's shape.

use super::*;

fn file_object() -> Value {
    json!({
        "type": "object",
        "properties": {
            "download_url": { "type": "string" },
            "file_id": { "type": "string" },
            "mime_type": { "type": "string" },
            "file_name": { "type": "string" }
        },
        "required": ["download_url", "file_id"],
        "additionalProperties": false
    })
}

/// `object` with the key at `pointer` set (inserted if new).
fn with(mut object: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    object.pointer_mut(parent).unwrap()[key] = value;
    object
}

fn without(mut object: Value, pointer: &str, key: &str) -> Value {
    object
        .pointer_mut(pointer)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .shift_remove(key);
    object
}

#[test]
fn file_params_of_the_descriptor_shape_pass() {
    let seed_example = json!({
        "type": "object",
        "$defs": { "OpenAIFile": file_object() },
        "properties": { "file": { "$ref": "#/$defs/OpenAIFile" } },
        "required": ["file"]
    });
    let direct = |file: Value| json!({ "type": "object", "properties": { "file": file } });
    let cases: [(&str, Value, Option<&str>); 5] = [
        ("the seed's descriptor", seed_example, None),
        ("inline object", direct(file_object()), None),
        (
            "array of files",
            direct(json!({ "type": "array", "items": file_object() })),
            None,
        ),
        (
            "optional (anyOf null)",
            direct(json!({ "anyOf": [file_object(), { "type": "null" }] })),
            None,
        ),
        (
            "extra optional property",
            direct(with(
                file_object(),
                "/properties/size",
                json!({ "type": "integer" }),
            )),
            None,
        ),
    ];
    check_file_params(cases);
}

#[test]
fn file_params_of_another_shape_are_refused_saying_why() {
    let direct = |file: Value| json!({ "type": "object", "properties": { "file": file } });
    let cases: [(&str, Value, Option<&str>); 8] = [
        (
            "not a property",
            json!({ "type": "object", "properties": {} }),
            Some("not a top-level property"),
        ),
        (
            "no inputSchema",
            Value::Null,
            Some("not a top-level property"),
        ),
        (
            "string param",
            direct(json!({ "type": "string" })),
            Some("not \"object\""),
        ),
        (
            "mime_type undeclared",
            direct(without(file_object(), "/properties", "mime_type")),
            Some("must declare `mime_type`"),
        ),
        (
            "file_id not required",
            direct(with(file_object(), "/required", json!(["download_url"]))),
            Some("must require `file_id`"),
        ),
        (
            "optional one required",
            direct(with(
                file_object(),
                "/required",
                json!(["download_url", "file_id", "file_name"]),
            )),
            Some("not `file_name`"),
        ),
        (
            "file_id typed wrong",
            direct(with(
                file_object(),
                "/properties/file_id",
                json!({ "type": "integer" }),
            )),
            Some("`file_id` must be a string"),
        ),
        (
            "dangling $ref",
            direct(json!({ "$ref": "#/$defs/Nope" })),
            Some("points at nothing"),
        ),
    ];
    check_file_params(cases);
}

/// Each case's schema, its `file` parameter checked: no problem, or one
/// that says the part expected.
fn check_file_params<const N: usize>(cases: [(&str, Value, Option<&str>); N]) {
    for (case, schema, expected) in cases {
        let problems = file_param_problems(&schema, "file");
        match expected {
            None => assert!(problems.is_empty(), "{case}: {problems:?}"),
            Some(part) => assert!(
                problems.iter().any(|p| p.contains(part)),
                "{case}: {problems:?}"
            ),
        }
    }
}

#[test]
fn only_valid_file_params_are_emitted() {
    let overlay = ToolOverlay {
        file_params: vec!["good".into(), "bad".into()],
        ..ToolOverlay::default()
    };
    let tool = json!({
        "name": "t",
        "inputSchema": { "type": "object", "properties": { "good": file_object(), "bad": { "type": "string" } } }
    });
    let (rewritten, warnings) = rewrite_one(tool.clone(), overlay);
    assert_eq!(rewritten["_meta"]["openai/fileParams"], json!(["good"]));
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].subject, "t");
    assert!(warnings[0].reason.contains("`bad`"));

    let all_bad = ToolOverlay {
        file_params: vec!["bad".into()],
        ..ToolOverlay::default()
    };
    let mut stale = tool;
    stale["_meta"] = json!({ "openai/fileParams": ["bad"] });
    let (rewritten, _) = rewrite_one(stale, all_bad);
    assert_eq!(
        rewritten["_meta"],
        json!({}),
        "an invalid upstream declaration is removed too"
    );
}
