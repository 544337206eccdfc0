use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::*;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn refused(method: &str, params: &str, headers: Headers<'_>) -> Refusal {
    let p = raw(params);
    check(method, Some(&p), &headers).expect_err("refused")
}

#[test]
fn a_request_with_its_meta_and_matching_headers_is_served() {
    let p = raw(&format!(r#"{{"name":"get_time",{META}}}"#));
    let headers = Headers {
        version: Seen::Once(b"2026-07-28"),
        method: Seen::Once(b"tools/call"),
        name: Seen::Once(b" get_time "),
    };
    assert_eq!(check("tools/call", Some(&p), &headers), Ok(()));
    // The base64 form of a name, and no headers at all (hosts omit them).
    let headers = Headers {
        name: Seen::Once(b"=?base64?Z2V0X3RpbWU=?="),
        ..Headers::default()
    };
    assert_eq!(check("tools/call", Some(&p), &headers), Ok(()));
}

#[test]
fn missing_or_malformed_meta_is_invalid_params() {
    for params in [
        "{}".to_owned(),
        r#"{"_meta":1}"#.to_owned(),
        r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned(),
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#.to_owned(),
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned(),
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}"#.to_owned(),
    ] {
        let r = refused("server/discover", &params, Headers::default());
        assert_eq!((r.status, r.code), (400, -32602), "{params}");
    }
    let r = check("tools/list", None, &Headers::default()).unwrap_err();
    assert_eq!((r.status, r.code), (400, -32602));
}

/// SEP-2322's `inputResponses` and `requestState`: an object of results and a
/// string, or absent; anything else (the conformance suite's `12345` and
/// `null`) is a protocol error, whatever the upstream.
#[test]
fn input_responses_are_results_and_states_strings() {
    let elicited = r#"{"action":"accept","content":{"name":"Ada"}}"#;
    let sampled = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
    let roots = r#"{"roots":[{"uri":"file:///tmp"}]}"#;
    for served in [
        format!(r#"{{"name":"a",{META}}}"#),
        format!(r#"{{"name":"a","inputResponses":{{}},{META}}}"#),
        format!(
            r#"{{"name":"a","requestState":"s","inputResponses":{{"e":{elicited},"s":{sampled},"r":{roots},"unasked":{elicited}}},{META}}}"#
        ),
    ] {
        let p = raw(&served);
        assert_eq!(
            check("tools/call", Some(&p), &Headers::default()),
            Ok(()),
            "{served}"
        );
    }
    for bad in [
        r#""inputResponses":12345"#,
        r#""inputResponses":null"#,
        r#""inputResponses":[]"#,
        r#""inputResponses":{"user_name":12345}"#,
        r#""inputResponses":{"user_name":null}"#,
        r#""inputResponses":{"user_name":{"name":"Ada"}}"#,
        r#""inputResponses":{"s":{"role":"assistant","content":{}}}"#,
        r#""requestState":7"#,
        r#""requestState":null"#,
    ] {
        let r = refused(
            "tools/call",
            &format!(r#"{{"name":"a",{bad},{META}}}"#),
            Headers::default(),
        );
        assert_eq!((r.status, r.code), (400, -32602), "{bad}");
    }
    let r = refused(
        "resources/read",
        &format!(r#"{{"uri":"ui://x","inputResponses":{{"a \"b\"":1}},{META}}}"#),
        Headers::default(),
    );
    assert!(r.message.contains(r#"["a \"b\""]"#), "{}", r.message);
}

#[test]
fn headers_that_contradict_the_body_are_a_mismatch() {
    let params = format!(r#"{{"name":"a",{META}}}"#);
    let cases = [
        Headers {
            method: Seen::Once(b"tools/list"),
            ..Headers::default()
        },
        Headers {
            name: Seen::Once(b"b"),
            ..Headers::default()
        },
        Headers {
            name: Seen::Once(b"=?base64?YQ?="),
            ..Headers::default()
        },
        Headers {
            version: Seen::Once(b"2026-08-01"),
            ..Headers::default()
        },
        Headers {
            method: Seen::Repeated,
            ..Headers::default()
        },
    ];
    for h in cases {
        let r = refused("tools/call", &params, h);
        assert_eq!((r.status, r.code), (400, -32020), "{h:?}");
    }
    // A client that names the revision in its header sends all of its headers.
    let h = Headers {
        version: Seen::Once(b"2026-07-28"),
        ..Headers::default()
    };
    assert_eq!(refused("tools/call", &params, h).code, -32020);
    let h = Headers {
        version: Seen::Once(b"2026-07-28"),
        method: Seen::Once(b"tools/call"),
        ..Headers::default()
    };
    assert_eq!(refused("tools/call", &params, h).code, -32020);
    let list = format!("{{{META}}}");
    let h = Headers {
        version: Seen::Once(b"2026-07-28"),
        method: Seen::Once(b"tools/list"),
        ..Headers::default()
    };
    assert_eq!(check("tools/list", Some(&raw(&list)), &h), Ok(()));
    // A 2025 header over the revision's body is how hosts call: the body decides.
    let h = Headers {
        version: Seen::Once(b"2025-11-25"),
        ..Headers::default()
    };
    assert_eq!(check("tools/call", Some(&raw(&params)), &h), Ok(()));
    // The header is compared before the revision is judged.
    let v999 = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    let h = Headers {
        version: Seen::Once(b"2026-07-28"),
        ..Headers::default()
    };
    assert_eq!(refused("server/discover", v999, h).code, -32020);
}

#[test]
fn an_unsupported_revision_names_the_supported_ones() {
    let v999 = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    let h = Headers {
        version: Seen::Once(b"v999.0.0"),
        ..Headers::default()
    };
    let r = refused("server/discover", v999, h);
    assert_eq!((r.status, r.code), (400, -32022));
    assert_eq!(
        r.data,
        Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
    );
    let id = raw("301");
    let body: Value = serde_json::from_slice(&r.response(Some(&id))).unwrap();
    assert_eq!(body["id"], 301);
    assert_eq!(body["error"]["data"]["requested"], "v999.0.0");
}

#[test]
fn removed_methods_are_not_found() {
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let r = refused(method, &format!("{{{META}}}"), Headers::default());
        assert_eq!((r.status, r.code), (404, -32601), "{method}");
        assert_eq!(r.data, Some(json!(method)));
    }
}

#[test]
fn which_requests_are_of_the_revision() {
    let meta = raw(&format!("{{{META}}}"));
    assert!(is_revision_request("tools/list", None, Some(&meta)));
    assert!(is_revision_request("server/discover", None, None));
    assert!(is_revision_request("tools/list", Some(" 2026-07-28"), None));
    assert!(!is_revision_request("tools/list", Some("2025-11-25"), None));
    let other = raw(r#"{"_meta":{"progressToken":1}}"#);
    assert!(!is_revision_request("tools/call", None, Some(&other)));
}

fn answering(method: &str, bridged: bool) -> Answering {
    Answering {
        method: method.into(),
        uri: Some("test://x".into()),
        name: None,
        caps: Caps::default(),
        hints: Hints::default(),
        bridged,
    }
}

fn answered(a: &Answering, response: &str) -> String {
    String::from_utf8(answer(a, response.as_bytes()).expect("changed")).unwrap()
}

#[test]
fn results_gain_the_result_type_and_listings_their_freshness() {
    let a = answering("tools/call", true);
    assert_eq!(
        answered(
            &a,
            r#"{"result":{"content":[],"isError":false}, "jsonrpc":"2.0","id":1}"#
        ),
        r#"{"result":{"content":[],"isError":false,"resultType":"complete"}, "jsonrpc":"2.0","id":1}"#
    );
    assert_eq!(
        answered(&a, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#
    );
    let a = answering("tools/list", true);
    assert_eq!(
        answered(
            &a,
            r#"{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"x","n":1e-999}]}}"#
        ),
        r#"{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"x","n":1e-999}],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}"#
    );
    // What is there already stays.
    let done = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete","ttlMs":5,"cacheScope":"public"}}"#;
    assert_eq!(answer(&a, done.as_bytes()), None);
    // A round of input has no freshness.
    let a = answering("resources/read", false);
    let input =
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#;
    assert_eq!(answer(&a, input.as_bytes()), None);
}

#[test]
fn for_a_handshake_era_upstream_the_gateway_answers_what_it_lacks() {
    let not_found =
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}"#;
    let v: Value =
        serde_json::from_str(&answered(&answering("prompts/list", true), not_found)).unwrap();
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","id":4,"result":{"prompts":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}})
    );
    let v: Value =
        serde_json::from_str(&answered(&answering("resources/read", true), not_found)).unwrap();
    assert_eq!(
        v["error"],
        json!({"code":-32602,"message":"Resource not found","data":{"uri":"test://x"}})
    );
    let old = r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"gone","data":{"uri":"test://x","k":1}}}"#;
    let v: Value =
        serde_json::from_str(&answered(&answering("resources/read", true), old)).unwrap();
    assert_eq!(
        v["error"],
        json!({"code":-32602,"message":"gone","data":{"uri":"test://x","k":1}})
    );
    // An upstream of the revision says what it has itself.
    assert_eq!(
        answer(&answering("prompts/list", false), not_found.as_bytes()),
        None
    );
    // Other errors pass as they are.
    let other = r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Unknown tool"}}"#;
    assert_eq!(
        answer(&answering("tools/call", true), other.as_bytes()),
        None
    );
}

#[test]
fn discover_is_written_from_the_initialize_result() {
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
            "experimental": {"x": {}}
        },
        "serverInfo": {"name": "mcp-time", "version": "1.0"},
        "instructions": "keep me"
    });
    let d = discover(
        &init,
        Hints {
            ttl_ms: 1000,
            scope: CacheScope::Public,
        },
    );
    assert_eq!(
        d,
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "logging": {},
                "experimental": {"x": {}},
                "prompts": {}
            },
            "instructions": "keep me",
            "resultType": "complete",
            "ttlMs": 1000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcp-time", "version": "1.0"}}
        })
    );
}

#[test]
fn what_a_handshake_era_upstream_is_not_asked() {
    for method in ["unknown/method", "ping", "tasks/list", "notifications/x"] {
        let r = beyond(method).expect(method);
        assert_eq!((r.status, r.code), (404, -32601));
    }
    for method in [
        "tools/call",
        "server/discover",
        "completion/complete",
        "subscriptions/listen",
    ] {
        assert_eq!(beyond(method), None);
    }
}

#[test]
fn a_request_goes_to_a_handshake_era_upstream_without_the_envelope() {
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"openai/session":"v1/x","io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c"}},"arguments":{"n":1.0}}}"#;
    let out = String::from_utf8(answer::to_handshake(request.as_bytes()).unwrap()).unwrap();
    assert_eq!(
        out,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"openai/session":"v1/x","progressToken":7},"arguments":{"n":1.0}}}"#
    );
    let plain =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":7}}}"#;
    assert_eq!(answer::to_handshake(plain.as_bytes()), None);
}

#[test]
fn a_subscription_hears_what_it_asked_for_tagged_with_its_id() {
    let params = raw(
        r#"{"_meta":{},"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://a"]}}"#,
    );
    let asked = Filter::of(Some(&params)).unwrap();
    let announced = Announced {
        tools: true,
        prompts: false,
        resources: true,
        subscribe: true,
    };
    let f = asked.honored(&announced);
    let id = raw("7");
    let ack: Value = serde_json::from_slice(&f.acknowledgement(&id)).unwrap();
    assert_eq!(
        ack,
        json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{
        "_meta":{"io.modelcontextprotocol/subscriptionId":7},
        "notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://a"]}}})
    );
    let tools = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    let tagged: Value = serde_json::from_slice(&f.deliver(tools, &id).unwrap()).unwrap();
    assert_eq!(
        tagged["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let updated = br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://a"}}"#;
    let tagged: Value = serde_json::from_slice(&f.deliver(updated, &id).unwrap()).unwrap();
    assert_eq!(
        tagged["params"],
        json!({"uri":"test://a","_meta":{"io.modelcontextprotocol/subscriptionId":7}})
    );
    // Never what it did not ask for, nor what is not honored.
    for other in [
        &br#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#[..],
        br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://b"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#,
    ] {
        assert_eq!(f.deliver(other, &id), None);
    }
    let end: Value = serde_json::from_slice(&listen::ended(&id)).unwrap();
    assert_eq!(
        end["result"],
        json!({"_meta":{"io.modelcontextprotocol/subscriptionId":7},"resultType":"complete"})
    );
    // A listen without a filter is invalid.
    let bare = raw(r#"{"_meta":{}}"#);
    assert_eq!(Filter::of(Some(&bare)).unwrap_err().code, -32602);
}

#[test]
fn acknowledgements_are_read_back_and_united() {
    let id = raw("3");
    let tools = Filter {
        tools_list_changed: true,
        resource_subscriptions: vec!["test://a".into()],
        ..Filter::default()
    };
    let prompts = Filter {
        prompts_list_changed: true,
        resource_subscriptions: vec!["test://a".into(), "test://b".into()],
        ..Filter::default()
    };
    let mut both = Filter::acknowledged(&tools.acknowledgement(&id)).unwrap();
    assert_eq!(both, tools);
    both.unite(&Filter::acknowledged(&prompts.acknowledgement(&id)).unwrap());
    assert_eq!(
        both,
        Filter {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: false,
            resource_subscriptions: vec!["test://a".into(), "test://b".into()],
        }
    );
    let other = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    assert_eq!(Filter::acknowledged(other), None);
}

/// The params are read member by member, as a whole parse reads them: a
/// member given twice counts as its last, a name's escapes are decoded before
/// it is compared with `Mcp-Name`, and the arguments are never looked into.
#[test]
fn params_are_read_member_by_member_as_a_whole_parse_reads_them() {
    fn named(name: &str) -> Headers<'_> {
        Headers {
            name: Seen::Once(name.as_bytes()),
            ..Headers::default()
        }
    }
    let big = format!(r#"{{"deep":{}}}"#, "[".repeat(100) + &"]".repeat(100));
    let p = raw(&format!(
        r#"{{"name":"first","name":"t\u00e9","arguments":{big},{META}}}"#
    ));
    assert_eq!(
        check("tools/call", Some(&p), &named("=?base64?dMOp?=")),
        Ok(())
    );
    let r = refused(
        "tools/call",
        &format!(r#"{{"name":"first","name":"t\u00e9",{META}}}"#),
        named("first"),
    );
    assert_eq!((r.status, r.code), (400, -32020));
    // A `_meta` given twice: the last one is the request's.
    let twice = format!(r#"{{"_meta":1,"name":"a",{META}}}"#);
    assert_eq!(
        check("tools/call", Some(&raw(&twice)), &Headers::default()),
        Ok(())
    );
    let last_bad = format!(r#"{{"name":"a",{META},"_meta":1}}"#);
    let r = refused("tools/call", &last_bad, Headers::default());
    assert_eq!((r.status, r.code), (400, -32602));
}
