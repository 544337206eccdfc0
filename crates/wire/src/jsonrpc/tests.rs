use super::*;

fn one(s: &str) -> Message<'_> {
    match classify(s.as_bytes()).unwrap() {
        Body::Single(m) => m,
        Body::Batch(_) => panic!("batch"),
    }
}

#[test]
fn classifies_each_kind() {
    let r = one(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    assert_eq!(r.kind, Kind::Request);
    assert_eq!(r.method.as_deref(), Some("tools/list"));
    let n = one(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(n.kind, Kind::Notification);
    let ok = one(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
    assert_eq!(ok.kind, Kind::Response);
    let err = one(r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}"#);
    assert_eq!(err.kind, Kind::Response);
    assert_eq!(err.id.unwrap().get(), "null");
}

#[test]
fn rejects_what_is_not_json_rpc() {
    assert_eq!(classify(b"{nope").unwrap_err().code(), code::PARSE_ERROR);
    assert_eq!(classify(b"").unwrap_err().code(), code::PARSE_ERROR);
    for bad in [
        "\"hello\"",
        "42",
        "{}",
        r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1e3,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":-2.0,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
        r#"{"jsonrpc":"2.0","method":7}"#,
        "[]",
    ] {
        assert_eq!(
            classify(bad.as_bytes()).unwrap_err().code(),
            code::INVALID_REQUEST,
            "{bad}"
        );
    }
}

#[test]
fn batches_keep_each_raw_message() {
    let body = br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"b"}]"#;
    let Body::Batch(items) = classify(body).unwrap() else {
        panic!()
    };
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].1.get(), r#"{"jsonrpc":"2.0","method":"b"}"#);
    assert_eq!(items[1].0.kind, Kind::Notification);
}

#[test]
fn repeated_ids_in_a_batch_are_found() {
    let ids = |body: &'static str| {
        let Body::Batch(items) = classify(body.as_bytes()).unwrap() else {
            panic!()
        };
        repeated_request_id(&items).map(|id| id.get().to_owned())
    };
    let r = |id: &str, m: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}"}}"#);
    let batch = |items: &[String]| -> &'static str {
        Box::leak(format!("[{}]", items.join(",")).into_boxed_str())
    };
    assert_eq!(
        ids(batch(&[r("1", "a"), r("\"1\"", "b"), r("2", "c")])),
        None
    );
    assert_eq!(
        ids(batch(&[r("1", "a"), r("2", "b"), r("1", "c")])).as_deref(),
        Some("1")
    );
    assert_eq!(
        ids(batch(&[r("\"a\"", "x"), r("\"\\u0061\"", "y")])).as_deref(),
        Some("\"\\u0061\"")
    );
    // A response or a notification shares no id space with requests here.
    let with_response = r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"}]"#;
    assert_eq!(ids(with_response), None);
}

#[test]
fn id_keys_distinguish_numbers_and_strings() {
    let a: &RawValue = serde_json::from_str("1").unwrap();
    let b: &RawValue = serde_json::from_str("\"1\"").unwrap();
    let c: &RawValue = serde_json::from_str("\"\\u0031\"").unwrap();
    assert_ne!(id_key(a), id_key(b));
    assert_eq!(id_key(b), id_key(c));
}

#[test]
fn splice_replaces_only_the_value() {
    let text = br#"{"jsonrpc":"2.0", "id" : 17 ,"method":"x","params":{"z":1,"a":2}}"#;
    let m = classify_one(text).unwrap();
    let out = splice(text, m.id.unwrap(), "\"gw-1\"").unwrap();
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0", "id" : "gw-1" ,"method":"x","params":{"z":1,"a":2}}"#
    );
}

#[test]
fn splice_all_replaces_each_value_in_one_pass() {
    let text = br#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"_meta":{"progressToken":7}}}"#;
    let m = classify_one(text).unwrap();
    let token = params_view(m.params).request_progress_token.unwrap();
    // Given in any order.
    let out = splice_all(
        text,
        &[(token, "\"p3\"".into()), (m.id.unwrap(), "3".into())],
    )
    .unwrap();
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"p3"}}}"#
    );
    let elsewhere: &RawValue = serde_json::from_str("1").unwrap();
    assert!(splice_all(text, &[(elsewhere, "2".into())]).is_none());
}

#[test]
fn params_view_reads_routing_fields() {
    let m = one(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":[1,2]},"_meta":{"progressToken":"p1","other":1}}}"#,
    );
    let v = params_view(m.params);
    assert_eq!(v.request_progress_token.unwrap().get(), "\"p1\"");
    assert_eq!(v.name.as_deref(), Some("echo"));
}

#[test]
fn error_response_escapes_message() {
    let body = error_response(None, code::PARSE_ERROR, "bad \"quote\"\n");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["message"], "bad \"quote\"\n");
    assert!(v["id"].is_null());
}

#[test]
fn single_line_keeps_values() {
    let text = b"{\n  \"a\": \"x\\ny\"\r\n}";
    let line = to_single_line(text);
    let a: serde_json::Value = serde_json::from_slice(text).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(a, b);
    assert!(!line.contains(&b'\n'));
}

#[test]
fn id_keys_are_equal_where_a_server_takes_the_numbers_for_equal() {
    let key = |s: &str| id_key_str(s);
    // A server parses numbers: -0 is 0 everywhere, 1.0 is 1 in JavaScript
    // and in Python's dictionaries, and integers past 2^53 round in
    // JavaScript.
    assert_eq!(key("-0"), key("0"));
    assert_eq!(key("0.0"), key("0"));
    assert_eq!(key("-0.0"), key("0"));
    assert_eq!(key("1.0"), key("1"));
    assert_eq!(key("1e0"), key("1"));
    assert_eq!(key("10E-1"), key("1"));
    assert_eq!(key("9007199254740993"), key("9007199254740992"));
    assert_eq!(key("-9007199254740993"), key("-9007199254740992"));
    // Others stay apart, and a common id stays as written.
    assert_ne!(key("1"), key("2"));
    assert_ne!(key("0.5"), key("0"));
    assert_ne!(key("1"), key("\"1\""));
    assert_ne!(key("0"), key("\"0\""));
    assert_ne!(key("123456789012345"), key("123456789012346"));
    assert_eq!(key("42"), "42");
    assert_eq!(key("-7"), "-7");
    assert_eq!(key("\"-0\""), "\"-0\"");
    assert_eq!(key("1e400"), "1e400");
}
