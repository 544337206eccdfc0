use super::*;
use mcp_ui_model::config::Config;

fn get(enabled: bool, path: &str) -> Response<Body> {
    serve(
        enabled,
        std::iter::empty(),
        &Site::default(),
        &Method::GET,
        &path.parse().unwrap(),
    )
}

fn content_type(r: &Response<Body>) -> &str {
    r.headers()[header::CONTENT_TYPE].to_str().unwrap()
}

#[test]
fn enabled_by_default_on_loopback_only() {
    let mut config = Config::default();
    assert!(config.preview_enabled());
    config.listen = "0.0.0.0:8787".parse().unwrap();
    assert!(!config.preview_enabled());
    config.preview = Some(true);
    assert!(config.preview_enabled());
}

#[test]
fn disabled_preview_is_404() {
    assert!(claims("/preview"));
    for path in [
        "/preview",
        "/preview/",
        "/preview/host.js",
        "/preview/sandbox",
    ] {
        assert_eq!(get(false, path).status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[test]
fn enabled_preview_serves_the_page() {
    let r = get(true, "/preview");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(content_type(&r), "text/html; charset=utf-8");
    let csp = r.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self';"));
    assert_eq!(
        content_type(&get(true, "/preview/host.js")),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(get(true, "/preview/nope").status(), StatusCode::NOT_FOUND);
    let post = serve(
        true,
        std::iter::empty(),
        &Site::default(),
        &Method::POST,
        &"/preview".parse().unwrap(),
    );
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(!claims("/previewer"));
    // Where the authorization server sends the page back: the page.
    let back = get(true, "/preview/callback?code=c&state=s");
    assert_eq!(back.status(), StatusCode::OK);
    assert_eq!(content_type(&back), "text/html; charset=utf-8");
}

#[test]
fn the_page_may_reach_the_public_url_origin() {
    let csp = page_csp(Some("http://127.0.0.1:8787/"));
    assert!(
        csp.contains("connect-src 'self' http://127.0.0.1:8787;"),
        "{csp}"
    );
    assert_eq!(page_csp(None), PAGE_CSP);
    // Only an http(s) origin, as the parser writes it.
    assert_eq!(page_csp(Some("not a url; script-src *")), PAGE_CSP);
    assert_eq!(page_csp(Some("data:text/plain,x")), PAGE_CSP);
    let csp = page_csp(Some("https://GW.example.com:443/base"));
    assert!(
        csp.contains("connect-src 'self' https://gw.example.com;"),
        "{csp}"
    );
}

fn auth(issuer: &str, scopes: &[&str]) -> Auth {
    Auth {
        issuer: issuer.into(),
        audience: None,
        algorithms: vec!["RS256".into()],
        leeway_secs: 60,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        introspection: None,
        anonymous: false,
        requests_per_minute: None,
        claims_to_headers: Vec::new(),
        claims_to_env: Vec::new(),
        log_callers: false,
        forward_token: false,
        ca_file: None,
    }
}

#[test]
fn the_list_of_mounts_says_what_a_protected_one_needs() {
    let ours = auth("http://127.0.0.1:8787", &["tools:call"]);
    let theirs = auth("https://login.example.com", &[]);
    let endpoint = |name: &'static str, auth: Option<&'static Auth>| Endpoint {
        name,
        path: if name == "open" {
            "/open/mcp"
        } else {
            "/notes/mcp"
        },
        members: None,
        auth,
        declared: vec!["notes:write".into(), "tools:call".into()],
    };
    let ours: &'static Auth = Box::leak(Box::new(ours));
    let theirs: &'static Auth = Box::leak(Box::new(theirs));
    let site = Site {
        public_url: Some("http://127.0.0.1:8787"),
        base: Some("http://127.0.0.1:8787".into()),
        authorization_server: Some(SignIn {
            issuer: "http://127.0.0.1:8787",
            metadata: "http://127.0.0.1:8787/.well-known/oauth-authorization-server".into(),
        }),
    };
    let doc: serde_json::Value = serde_json::from_str(&mounts_json(
        [endpoint("notes", Some(ours)), endpoint("open", None)].into_iter(),
        &site,
    ))
    .unwrap();
    assert_eq!(
        doc["mounts"][0]["auth"],
        serde_json::json!({
            "issuer": "http://127.0.0.1:8787",
            "scopes": ["tools:call", "notes:write"],
            "anonymous": false,
            "sign_in": "authorization_server",
            "resource": "http://127.0.0.1:8787/notes/mcp",
            "resource_metadata": "http://127.0.0.1:8787/.well-known/oauth-protected-resource/notes/mcp",
        })
    );
    assert!(doc["mounts"][1].get("auth").is_none(), "{doc}");
    assert_eq!(
        doc["authorization_server"]["metadata"],
        "http://127.0.0.1:8787/.well-known/oauth-authorization-server"
    );
    // Another issuer's tokens: pasted in.
    let doc: serde_json::Value = serde_json::from_str(&mounts_json(
        [endpoint("notes", Some(theirs))].into_iter(),
        &site,
    ))
    .unwrap();
    assert_eq!(doc["mounts"][0]["auth"]["sign_in"], "token");
    // Open mounts only: nothing about signing in.
    let doc: serde_json::Value = serde_json::from_str(&mounts_json(
        [endpoint("open", None)].into_iter(),
        &Site::default(),
    ))
    .unwrap();
    assert_eq!(
        doc,
        serde_json::json!({ "mounts": [{ "name": "open", "path": "/open/mcp" }] })
    );
}

#[test]
fn sandbox_policy_comes_from_the_declared_domains() {
    let q = "csp=%7B%22connectDomains%22%3A%5B%22https%3A%2F%2Fapi.example.com%22%5D%2C\
             %22resourceDomains%22%3A%5B%22https%3A%2F%2Fcdn.example.com%22%2C%22x%3B%20script-src%20*%22%5D%7D";
    let declared = declared_csp(Some(q));
    assert_eq!(declared.connect_domains, ["https://api.example.com"]);
    let csp = widget_csp(&declared);
    assert!(
        csp.contains("connect-src https://api.example.com;"),
        "{csp}"
    );
    assert!(
        csp.contains("script-src 'self' 'unsafe-inline' https://cdn.example.com;"),
        "{csp}"
    );
    assert!(!csp.contains("script-src *"), "injection dropped: {csp}");
    assert!(csp.contains("frame-src 'none'"), "{csp}");
    assert!(
        csp.ends_with("frame-ancestors 'self'; sandbox allow-scripts allow-forms"),
        "{csp}"
    );

    let default = widget_csp(&declared_csp(None));
    assert!(default.starts_with("default-src 'none';"));
    assert!(default.contains("connect-src 'none'"), "{default}");
    assert_eq!(
        declared_csp(Some("csp=%7Bnot-json")),
        DeclaredCsp::default()
    );
}
