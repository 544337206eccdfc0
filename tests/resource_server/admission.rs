//! Who is let in, by rules no request can bend: the audience is the configured URL's,
//! never the request's `Host`; a batch costs each of its requests; a caller without a
//! token reads widgets and nothing else; and only access tokens are accepted, whatever
//! else the issuer signs.

use super::*;

/// Without `public_url` (or `audience`) the audience tokens are held to would be built
/// from the request's `Host`, which the caller writes: `check` and `serve` refuse such a
/// configuration, naming the field and what to write. With it, a token the issuer gave
/// another resource server on this machine is refused, whatever `Host` names that server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expected_audience_never_follows_the_host_header() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let config = Config {
        upstreams: vec![fixture("notes", "/notes/mcp")],
        auth: Some(auth_of(&idp, &[])),
        ..gw::test_config()
    };
    let refused = config
        .resolve()
        .expect_err("[auth] without public_url or audience is refused")
        .to_string();
    for said in [
        "public_url",
        r#"public_url = "http://127.0.0.1:8787""#,
        "audience",
    ] {
        assert!(refused.contains(said), "{said} in {refused}");
    }
    // An explicit audience is enough.
    let mut audience = config.clone();
    if let Some(a) = audience.auth.as_mut() {
        a.audience = Some("https://notes.example.com/mcp".into());
    }
    assert!(audience.resolve().is_ok());
    // The program's `check` and `serve` say the same, and stop.
    let dir = tempfile::tempdir().unwrap();
    let file = format!(
        "[auth]\nissuer = {}\n\n[[upstream]]\nname = \"notes\"\ncommand = {}\n",
        Value::from(idp.issuer()),
        Value::from(STDIO_COMMAND),
    );
    std::fs::write(dir.path().join("gw.toml"), file).unwrap();
    for args in [
        &["check", "--config", "gw.toml", "--offline"][..],
        &["serve", "--config", "gw.toml", "--listen", "127.0.0.1:0"][..],
    ] {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
        command
            .args(args)
            .current_dir(dir.path())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(20), command.output())
            .await
            .unwrap_or_else(|_| panic!("{args:?} went on"))
            .expect("the program runs");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(
            said.contains(r#"public_url: missing"#) && said.contains("http://127.0.0.1:8787"),
            "{args:?}: {said}"
        );
    }

    let g = TestGateway::start_public(config).await;
    let url = g.url_for("/notes/mcp");
    // Another resource server on loopback (nothing need listen there).
    let (other_host, other) = ("127.0.0.1:9", "http://127.0.0.1:9/notes/mcp");
    let theirs = idp.token(other, &["tools:call"]).await;
    let bearer = format!("Bearer {theirs}");
    for host in [other_host, "localhost:9"] {
        let answer = tools_list(&url, &[("authorization", &bearer), ("host", host)]).await;
        let metadata = prm_url(&g, "/notes/mcp");
        assert_invalid(
            &answer,
            &metadata,
            "another resource",
            &format!("Host {host}"),
        );
    }
    let ours = idp.token(&url, &["tools:call"]).await;
    let bearer = format!("Bearer {ours}");
    let answer = tools_list(&url, &[("authorization", &bearer), ("host", other_host)]).await;
    assert_served(&answer, "the gateway's token, whatever the Host");
    g.shutdown().await;
}

/// `requests_per_minute` counts JSON-RPC requests, not HTTP requests: each request of a
/// batch costs one, and a batch that does not fit is refused whole (429 with
/// `Retry-After`, nothing of it sent), leaving the budget for what fits. A batch larger
/// than a minute's budget is refused saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_costs_each_of_its_requests() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let g = rated_gateway(&idp, 5).await;
    let url = g.url_for("/rated/mcp");
    let token = idp.token(&url, &["tools:call"]).await;
    let auth = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", "2025-03-26"),
        ("authorization", auth.as_str()),
    ];
    let batch = |ids: std::ops::Range<u64>| {
        Value::Array(
            ids.map(|id| {
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": format!("call {id}")}}})
            })
            .collect(),
        )
        .to_string()
    };
    let too_many = |answer: &Answer, what: &str| {
        let (status, headers, body) = answer;
        assert_eq!(
            *status,
            StatusCode::TOO_MANY_REQUESTS,
            "{what}: {}",
            text(body)
        );
        let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry), "{what}: Retry-After {retry}");
        text(body)
    };

    // Four calls in one batch: four of the five.
    let (status, answer_headers, body) = post_json(&url, &headers, batch(1..5)).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    for id in 1..5 {
        let m = response(&answer_headers, &body, &json!(id));
        assert_eq!(
            m["result"]["content"][0]["text"],
            format!("call {id}"),
            "{m}"
        );
    }
    // Two more do not fit: refused whole.
    let said = too_many(
        &post_json(&url, &headers, batch(5..7)).await,
        "a batch of 2",
    );
    assert!(said.contains("requests_per_minute"), "{said}");
    // The one left is still there, and then none.
    let (status, _, body) = post_json(&url, &headers, batch(7..8)).await;
    assert_eq!(status, StatusCode::OK, "the fifth call: {}", text(&body));
    too_many(
        &post_json(&url, &headers, batch(8..9)).await,
        "a sixth call",
    );

    // Another caller: a batch larger than a minute's budget can never go.
    let other = format!("Bearer {}", another_callers_token(&idp, &url).await);
    let headers = [
        ("mcp-protocol-version", "2025-03-26"),
        ("authorization", other.as_str()),
    ];
    let said = too_many(
        &post_json(&url, &headers, batch(1..7)).await,
        "a batch of 6",
    );
    assert!(said.contains("6 requests"), "{said}");
    let (status, _, body) = post_json(&url, &headers, batch(1..6)).await;
    assert_eq!(status, StatusCode::OK, "a batch of 5: {}", text(&body));
    g.shutdown().await;
}

/// With `anonymous = true` a caller without a token reads the widgets (`ui://`) and no
/// other resource: any other `resources/read` gets the 401 challenge for that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_only_widgets_are_read() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let mut config = Config {
        upstreams: vec![gw::demo_stdio("demo")],
        auth: Some(AuthConfig {
            anonymous: Some(true),
            ..auth_of(&idp, &[])
        }),
        ..gw::test_config()
    };
    config.overlays = concat!(env!("CARGO_MANIFEST_DIR"), "/overlays").into();
    let g = TestGateway::start_public(config).await;
    let url = g.url();
    let metadata = prm_url(&g, "/mcp");
    let mut anonymous = Client::new(&url, None);
    anonymous.initialize().await;
    let (listed, _) = anonymous.request("resources/list", json!({})).await;
    let widget = listed["result"]["resources"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find_map(|r| r["uri"].as_str().filter(|u| u.starts_with("ui://")))
        })
        .unwrap_or_else(|| panic!("no widget listed: {listed}"))
        .to_owned();
    let (read, _) = anonymous
        .request("resources/read", json!({"uri": widget}))
        .await;
    let html = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(html.starts_with("<!doctype html>"), "{widget}");

    for uri in [
        "file:///etc/passwd",
        "demo://tasks",
        "UI://task-board/x.html",
    ] {
        let ((status, headers, body), id) =
            anonymous.send("resources/read", json!({"uri": uri})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}: {}", text(&body));
        let m: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(m["id"], id, "{m}");
        let params = bearer_params(headers["www-authenticate"].to_str().unwrap());
        assert_eq!(params["resource_metadata"], metadata, "{uri}");
        assert!(
            !params.contains_key("error"),
            "no token is no invalid_token"
        );
    }
    g.shutdown().await;
}

/// Only access tokens are accepted: a JWT the issuer signed with its own current key,
/// every claim right for the endpoint, is refused when its `typ` names another kind of
/// token (an ID token, a logout token, an event) and accepted as `at+jwt` (RFC 9068),
/// `application/at+jwt`, `JWT` or without one, as most providers write them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_access_token_types_are_accepted() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let g = TestGateway::start_public(Config {
        upstreams: vec![fixture("notes", "/notes/mcp")],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/notes/mcp");
    let metadata = prm_url(&g, "/notes/mcp");
    let claims = idp.access_claims(&url, &["tools:call"]);
    for typ in [
        Some("at+jwt"),
        Some("application/at+jwt"),
        Some("JWT"),
        None,
    ] {
        let header = match typ {
            Some(t) => json!({"typ": t}),
            None => json!({}),
        };
        let token = idp.mint(header, claims.clone()).await;
        assert_served(&list_with(&url, &token).await, &format!("typ {typ:?}"));
        let es = idp
            .mint(json!({"typ": "at+jwt", "alg": "ES256"}), claims.clone())
            .await;
        assert_served(&list_with(&url, &es).await, "ES256, at+jwt");
    }
    for typ in [
        "JWT+id",
        "id_token+jwt",
        "logout+jwt",
        "secevent+jwt",
        "dpop+jwt",
        "at+jwt+id",
        "",
    ] {
        let token = idp.mint(json!({"typ": typ}), claims.clone()).await;
        let answer = list_with(&url, &token).await;
        assert_invalid(&answer, &metadata, "type", &format!("typ {typ:?}"));
    }
    let token = idp.mint(json!({"typ": 1}), claims).await;
    assert_invalid(&list_with(&url, &token).await, &metadata, "type", "typ 1");
    g.shutdown().await;
}

/// A JWT whose signature verified is kept (its signature is not checked again), but every
/// use judges it against the endpoint it is shown to: a token accepted at `/a/mcp`, shown
/// next at `/b/mcp` (another audience), is refused there, and at `/admin/mcp` (which also
/// needs `admin`) gets 403 `insufficient_scope`; at `/a/mcp` it is still served, every
/// time, before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_token_is_judged_by_each_endpoint_at_every_use() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let mut admin = fixture("admin", "/admin/mcp");
    admin.auth = own(auth_of(&idp, &["tools:call", "admin"]));
    let g = TestGateway::start_public(Config {
        upstreams: vec![fixture("a", "/a/mcp"), fixture("b", "/b/mcp"), admin],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let a = g.url_for("/a/mcp");
    let token = idp.token(&a, &["tools:call"]).await;
    for round in 0..3 {
        assert_served(
            &list_with(&a, &token).await,
            &format!("at /a/mcp, use {round}"),
        );
        let b = g.url_for("/b/mcp");
        assert_invalid(
            &list_with(&b, &token).await,
            &prm_url(&g, "/b/mcp"),
            "another resource",
            &format!("/a/mcp's token at /b/mcp, use {round}"),
        );
    }
    // The admin endpoint's own token without `admin`: served nowhere it needs it.
    let admin_url = g.url_for("/admin/mcp");
    let short = idp.token(&admin_url, &["tools:call"]).await;
    for round in 0..2 {
        let answer = list_with(&admin_url, &short).await;
        let p = refusal(&answer, StatusCode::FORBIDDEN, &prm_url(&g, "/admin/mcp"));
        assert_eq!(
            p.get("error").map(String::as_str),
            Some("insufficient_scope"),
            "use {round}: {p:?}"
        );
    }
    g.shutdown().await;
}
