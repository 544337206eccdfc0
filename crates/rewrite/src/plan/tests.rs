//! Tests of the plan: what is forwarded, answered or rewritten, and the
//! responses `apply` makes.

use super::*;
use crate::rewrite::tools::page::tests::{none, overlays};

fn first_page() -> Rewrite {
    Rewrite::ToolsListPage { first: true }
}

fn msg(text: &str) -> Message<'_> {
    jsonrpc::classify_one(text.as_bytes()).unwrap()
}

#[test]
fn mounts_without_overlays_are_left_alone() {
    let o = overlays();
    let m = msg(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert_eq!(
        plan(&o, "other", &m, &Target::default(), &none),
        Plan::Forward
    );
    assert_eq!(
        plan(&o, "demo", &m, &Target::default(), &none),
        Plan::Rewrite(Rewrite::ToolsListPage { first: true })
    );
    let page = msg(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"2"}}"#);
    assert_eq!(
        plan(&o, "demo", &page, &Target::default(), &none),
        Plan::Rewrite(Rewrite::ToolsListPage { first: false })
    );
    let n = msg(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(
        plan(&o, "demo", &n, &Target::default(), &none),
        Plan::Forward
    );
}

#[test]
fn widget_reads_are_answered_locally() {
    let o = overlays();
    let uri = o.widgets().get("board").unwrap().uri.clone();
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{{"uri":"{uri}"}}}}"#
    );
    let Plan::Answer(body) = plan(&o, "demo", &msg(&text), &Target::default(), &none) else {
        panic!()
    };
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["id"], "r1");
    assert_eq!(
        v["result"]["contents"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );
    let other =
        msg(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}"#);
    assert_eq!(
        plan(&o, "demo", &other, &Target::default(), &none),
        Plan::Forward
    );
}

#[test]
fn missing_resource_methods_are_answered() {
    let o = overlays();
    let not_found =
        br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#;
    let a = apply(
        &o,
        "demo",
        &Rewrite::ResourcesList,
        not_found,
        &Target::default(),
        &none,
    );
    let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
    assert_eq!(v["id"], 3);
    assert_eq!(v["result"]["resources"][0]["name"], "board");
    let a = apply(
        &o,
        "demo",
        &Rewrite::TemplatesList,
        not_found,
        &Target::default(),
        &none,
    );
    let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
    assert_eq!(v["result"]["resourceTemplates"], json!([]));
    // Other errors pass as they are.
    let other = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"boom"}}"#;
    assert!(
        apply(
            &o,
            "demo",
            &Rewrite::ResourcesList,
            other,
            &Target::default(),
            &none
        )
        .body
        .is_none()
    );
}

#[test]
fn tools_list_gains_the_widget_and_keeps_the_rest() {
    let o = overlays();
    let response = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"list","inputSchema":{"type":"object"},"x-vendor":1},{"name":"other","inputSchema":{}}],"nextCursor":"c2"}}"#;
    let a = apply(
        &o,
        "demo",
        &first_page(),
        response,
        &Target::default(),
        &none,
    );
    let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
    let uri = &o.widgets().get("board").unwrap().uri;
    assert_eq!(
        v["result"]["tools"][0]["_meta"]["ui"]["resourceUri"],
        json!(uri)
    );
    assert_eq!(v["result"]["tools"][0]["x-vendor"], 1);
    assert_eq!(
        v["result"]["tools"][1],
        json!({"name":"other","inputSchema":{}})
    );
    assert_eq!(v["result"]["nextCursor"], "c2");
}

#[test]
fn render_calls_are_answered_unless_the_upstream_has_the_name() {
    let o = overlays();
    let call = msg(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"show","arguments":{"items":[1,2]}}}"#,
    );
    let Plan::Answer(body) = plan(&o, "demo", &call, &Target::default(), &none) else {
        panic!()
    };
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["structuredContent"], json!({"items": [1, 2]}));
    assert!(v["result"]["_meta"]["ui"]["resourceUri"].is_string());
    let bad = msg(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"show","arguments":{}}}"#,
    );
    let Plan::Answer(body) = plan(&o, "demo", &bad, &Target::default(), &none) else {
        panic!()
    };
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["isError"], true);
    // The upstream's own `show` wins.
    assert_eq!(
        plan(&o, "demo", &call, &Target::default(), &|n| n == "show"),
        Plan::Forward
    );
    // A 2026-07-28 request gets the result type that revision requires.
    let stateless = msg(
        r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"show","arguments":{"items":[]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    );
    let Plan::Answer(body) = plan(&o, "demo", &stateless, &Target::default(), &none) else {
        panic!()
    };
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["result"]["resultType"], "complete");
    // Data calls still go upstream.
    let data = msg(
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list","arguments":{}}}"#,
    );
    assert_eq!(
        plan(&o, "demo", &data, &Target::default(), &none),
        Plan::Forward
    );
}

#[test]
fn bare_and_unusual_tools_match_the_full_rewrite() {
    let o = overlays();
    for tools in [
        // No member the rewrite touches: the remembered rewrite, twice.
        r#"[{"name":"list","inputSchema":{}}]"#,
        r#"[{"name":"list","inputSchema":{}}]"#,
        // A key written with escapes, a repeated member, a repeated name.
        r#"[{"\u006eame":"list","inputSchema":{}}]"#,
        r#"[{"name":"list","_meta":{"a":1},"_meta":{"b":2}}]"#,
        r#"[{"name":"other"},{"name":"list"}]"#,
    ] {
        let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{tools}}}}}"#);
        let a = apply(
            &o,
            "demo",
            &first_page(),
            response.as_bytes(),
            &Target::default(),
            &none,
        );
        let ours: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        let mut full: Value = serde_json::from_str(&response).unwrap();
        rewrite::tools_list(&mut full["result"], o.mount("demo").unwrap(), o.widgets());
        rewrite::render::add_render_tools(
            &mut full["result"],
            o.mount("demo").unwrap(),
            o.widgets(),
            &|n: &str| n == "list" || n == "other",
        );
        assert_eq!(ours, full, "{tools}");
    }
    // A tool that names itself twice has no name: it passes as it came.
    let twice = r#"{"name":"list","name":"list","inputSchema":{}}"#;
    let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{twice}]}}}}"#);
    let a = apply(
        &o,
        "demo",
        &first_page(),
        response.as_bytes(),
        &Target::default(),
        &none,
    );
    let body = String::from_utf8(a.body.unwrap().to_vec()).unwrap();
    assert!(body.contains(&format!("[{twice},")), "{body}");
}

#[test]
fn tools_list_gains_render_tools_and_reports_names() {
    let o = overlays();
    let response = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"list","inputSchema":{"type":"object"}}]}}"#;
    let a = apply(
        &o,
        "demo",
        &first_page(),
        response,
        &Target::default(),
        &none,
    );
    assert_eq!(
        a.upstream_tools.map(|p| p.names),
        Some(vec!["list".to_owned()])
    );
    let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
    assert_eq!(v["result"]["tools"][1]["name"], "show");
    let clash =
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"show","inputSchema":{}}]}}"#;
    let a = apply(&o, "demo", &first_page(), clash, &Target::default(), &none);
    assert_eq!(a.warnings.len(), 1);
    // Nothing added: the upstream's bytes are kept as they came.
    assert!(a.body.is_none());
    let v: Value = serde_json::from_slice(clash).unwrap();
    assert_eq!(
        v["result"]["tools"],
        json!([{"name":"show","inputSchema":{}}])
    );
}

#[test]
fn unknown_and_expired_ui_resources_are_not_found() {
    let o = overlays();
    let read = |uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{{"uri":"{uri}"}}}}"#
        )
    };
    let expired = "ui://board/0000000000000000.html";
    let foreign = "ui://native-app/view.html";
    for uri in [expired, foreign] {
        assert_eq!(
            plan(&o, "demo", &msg(&read(uri)), &Target::default(), &none),
            Plan::Rewrite(Rewrite::ResourceRead(uri.into()))
        );
    }
    let not_found = |uri: &str| {
        json!({
            "jsonrpc": "2.0",
            "id": 7,
            "error": { "code": -32002, "message": "Resource not found", "data": { "uri": uri } }
        })
    };
    let answer = |uri: &str, response: &[u8]| {
        let a = apply(
            &o,
            "demo",
            &Rewrite::ResourceRead(uri.into()),
            response,
            &Target::default(),
            &none,
        );
        a.body.map(|b| serde_json::from_slice::<Value>(&b).unwrap())
    };
    // An upstream without resources: method not found becomes not found.
    let no_method =
        br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}"#;
    assert_eq!(answer(expired, no_method), Some(not_found(expired)));
    assert_eq!(answer(foreign, no_method), Some(not_found(foreign)));
    // An upstream with resources: its own error for an expired widget
    // version is the gateway's not found; for its own URIs it stands.
    let its_own =
        br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown resource"}}"#;
    assert_eq!(answer(expired, its_own), Some(not_found(expired)));
    assert_eq!(answer(foreign, its_own), None);
    // A result passes untouched.
    let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}"#;
    assert_eq!(answer(foreign, ok), None);
    // Other URIs are forwarded as before.
    let file =
        msg(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}"#);
    assert_eq!(
        plan(&o, "demo", &file, &Target::default(), &none),
        Plan::Forward
    );
}

/// A listing whose `tools` holds an item that is no tool (fuzzing found
/// `[9999999e-9999999999999999]`): it passes byte for byte, names still
/// reported; before, it was written again and the number became `0.0`.
#[test]
fn a_listing_with_an_item_that_is_no_tool_passes_as_sent() {
    let o = overlays();
    let response = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[9999999e-9999999999999999,{"name":"other","x":1.50}]}}"#;
    let a = apply(
        &o,
        "demo",
        &first_page(),
        response,
        &Target::default(),
        &none,
    );
    assert!(a.body.is_none(), "{:?}", a.body);
    assert_eq!(
        a.upstream_tools.map(|p| p.names),
        Some(vec!["other".to_owned()])
    );
}
