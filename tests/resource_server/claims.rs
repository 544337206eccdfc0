//! What the upstream learns of the caller: its claims, in one encoding that cannot be
//! misread, and never a header of a claim's name that the client wrote.

use super::*;

/// `claims_to_headers` and `claims_to_env` write a claim so that it reads back as the
/// token said it: a string as itself, a number or boolean written out, an array or an
/// object as its compact JSON (`["Finance Admins","b",7]`: two words stay one group, and
/// no element is lost). The token is one the issuer signed with claims of every shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_reach_the_upstream_in_one_encoding() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let (up, seen) = recording_upstream(stop.clone()).await;
    let mapped = [
        ("x-user", "sub"),
        ("x-groups", "groups"),
        ("x-level", "level"),
        ("x-admin", "admin"),
        ("x-profile", "profile"),
        ("x-nothing", "nothing"),
    ];
    let g = claims_gateway(&idp, &up.url, &mapped, ("MCP_GROUPS", "groups")).await;
    let signed = async |url: &str| {
        let mut claims = idp.access_claims(url, &["tools:call"]);
        claims["groups"] = json!(["Finance Admins", "b", 7]);
        claims["level"] = json!(3);
        claims["admin"] = json!(true);
        claims["profile"] = json!({"team": "ops", "tags": ["a b"]});
        claims["nothing"] = Value::Null;
        idp.mint(json!({"typ": "at+jwt"}), claims).await
    };
    let groups = r#"["Finance Admins","b",7]"#;

    // HTTP: each header exactly.
    let url = g.url_for("/recorded/mcp");
    let token = signed(&url).await;
    assert_served_by(&tools_list(&url, &[("authorization", &format!("Bearer {token}"))]).await);
    let seen = seen.lock().unwrap().clone();
    let listed = seen
        .iter()
        .find(|s| s.method == "tools/list")
        .unwrap_or_else(|| panic!("no tools/list reached the upstream: {seen:?}"));
    let header = |name: &str| -> Vec<&str> {
        listed
            .headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap_or("(not text)"))
            .collect()
    };
    for (name, want) in [
        ("x-user", vec![support::idp::CLIENT_ID]),
        ("x-groups", vec![groups]),
        ("x-level", vec!["3"]),
        ("x-admin", vec!["true"]),
        ("x-profile", vec![r#"{"team":"ops","tags":["a b"]}"#]),
        ("x-nothing", vec![]),
    ] {
        assert_eq!(header(name), want, "{name}");
    }

    // stdio: the caller's own process, the same encoding.
    let url = g.url_for("/whoami/mcp");
    let token = signed(&url).await;
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "whoami", "arguments": {}, "_meta": {"openai/session": "v1/groups"}}});
    let auth = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", VERSION),
        ("authorization", auth.as_str()),
    ];
    let (status, response_headers, body) = post_json(&url, &headers, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let answer = response(&response_headers, &body, &json!(2));
    assert_eq!(answer["result"]["content"][0]["text"], groups, "{answer}");

    g.shutdown().await;
    stop.cancel();
    drop(up);
}

/// The session id of an `initialize` at `url` sent with `headers`, if it gave one.
async fn initialize_with(url: &str, headers: &[(&str, &str)]) -> Option<String> {
    let mut all = vec![("mcp-protocol-version", VERSION)];
    all.extend_from_slice(headers);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "claims-test", "version": "1"}}});
    let (status, answer, body) = post_json(url, &all, init.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let session = answer.get("mcp-session-id")?.to_str().unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    all.push(("mcp-session-id", &session));
    let (status, _, body) = post_json(url, &all, note.to_string()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{}", text(&body));
    Some(session)
}

/// An answer to a `tools/list` (the recording upstream's: one `whoami` tool).
fn assert_served_by(answer: &Answer) {
    let (status, headers, body) = answer;
    assert_eq!(*status, StatusCode::OK, "{}", text(body));
    let m = response(headers, body, &json!(1));
    assert!(m["result"]["tools"].is_array(), "{m}");
}

/// A client's own header of a name `claims_to_headers` maps never reaches the upstream,
/// even where the mount forwards that header and even when the token has no such claim:
/// on a mount whose client sessions are its own upstream sessions (each request sent as
/// the client's), and on one whose upstream session the gateway holds (`sessions =
/// "shared"`, the headers it opens the session with).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_claim_headers_never_reach_the_upstream() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let (up, seen) = recording_upstream(stop.clone()).await;
    let base = up.base_url();
    let mount = |name: &str, sessions: SessionMode| {
        let mut m = gw::http(name, &format!("{base}/{name}"));
        m.path = Some(format!("/{name}/mcp"));
        m.sessions = Some(sessions);
        m.forward_headers = vec!["x-user".into(), "x-email".into(), "x-team".into()];
        m.auth = own(AuthConfig {
            claims_to_headers: Some(
                [("x-user", "sub"), ("x-email", "email")]
                    .map(|(h, c)| (h.to_owned(), c.to_owned()))
                    .into(),
            ),
            ..AuthConfig::default()
        });
        m
    };
    let g = TestGateway::start_public(Config {
        upstreams: vec![
            mount("own", SessionMode::Client),
            mount("held", SessionMode::Shared),
        ],
        auth: Some(auth_of(&idp, &[])),
        ..gw::test_config()
    })
    .await;

    for name in ["own", "held"] {
        let url = g.url_for(&format!("/{name}/mcp"));
        let token = idp.token(&url, &["tools:call"]).await;
        assert!(
            decode_jwt(&token).1.get("email").is_none(),
            "the token has no email"
        );
        let auth = format!("Bearer {token}");
        let forged = [
            ("authorization", auth.as_str()),
            ("x-user", "admin"),
            ("x-email", "ceo@example.com"),
            ("x-team", "kept"),
        ];
        // A request without a session, and (where the gateway gives one) in a session
        // opened with those headers.
        assert_served_by(&tools_list(&url, &forged).await);
        if let Some(session) = initialize_with(&url, &forged).await {
            let mut headers = vec![("mcp-session-id", session.as_str())];
            headers.extend(forged);
            assert_served_by(&tools_list(&url, &headers).await);
        }

        let seen = seen.lock().unwrap().clone();
        let theirs: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.path == format!("/{name}"))
            .collect();
        assert!(
            theirs.iter().any(|s| s.method == "tools/list"),
            "{name}: {seen:?}"
        );
        for s in &theirs {
            let all = |h: &str| -> Vec<&str> {
                s.headers
                    .get_all(h)
                    .iter()
                    .map(|v| v.to_str().unwrap_or("(not text)"))
                    .collect()
            };
            assert_eq!(
                all("x-user"),
                [support::idp::CLIENT_ID],
                "{name}: {} {s:?}",
                s.method
            );
            assert!(
                all("x-email").is_empty(),
                "{name}: the client's x-email reached the upstream: {s:?}"
            );
        }
        // A forwarded header that no claim maps still passes.
        assert!(
            theirs
                .iter()
                .any(|s| s.headers.get("x-team").is_some_and(|v| v == "kept")),
            "{name}: {theirs:?}"
        );
    }

    g.shutdown().await;
    stop.cancel();
    drop(up);
}
