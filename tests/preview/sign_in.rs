//! `/preview` in front of mounts that ask for tokens (`[auth]`), against a real OpenID
//! provider (`tests/peers/oidc_provider.mjs`, panva's oidc-provider), the gateway in
//! process:
//!
//! - with the gateway's own `[authorization_server]` delegating the login to the provider
//!   (its login form: any name, the password `correct horse`): the page shows a sign-in
//!   panel, signs in as hosts do (registration, consent, the provider's form, the code with
//!   PKCE, back to `/preview/callback`), lists and calls tools with the token, renders a
//!   widget, signs in at a second mount whose stdio upstream is told the user by
//!   `claims_to_env` and echoes it, refreshes the token once it has expired, and signs out;
//!   then the same from `http://localhost:PORT` while `public_url` is `127.0.0.1`;
//! - with `[auth]` alone (tokens of the provider's): a token pasted in, a wrong one first,
//!   whose refusal the page shows as the gateway's challenge says it.

use std::ffi::OsStr;

use mcp_ui_model::config::{
    AuthConfig, AuthSetting, AuthorizationServerConfig, Config, SessionMode,
};
use serde_json::{Value, json};

use super::support::gateway::{self as gw, TestGateway};
use super::support::idp::Idp;
use super::support::peers::setup;
use super::support::process::copy_dir;
use super::support::upstreams::ENV_ECHO_SERVER;
use super::{drive_async, root};

const LOGIN_CLIENT: &str = "gateway-login";
const LOGIN_SECRET: &str = "gateway-login-secret";
/// The gateway's access tokens live this long here, so that one expires while the page
/// is open (no clock skew allowed).
const ACCESS_TTL_SECS: u64 = 4;
/// What the page waits, after its call as the user, before calling again.
const PAST_EXPIRY_SECS: &str = "5";

/// A copy of the bundled overlays (the demo's task board), in `temp`.
fn overlays(temp: &tempfile::TempDir) -> std::path::PathBuf {
    let dir = temp.path().join("overlays");
    copy_dir(&root().join("overlays"), &dir);
    dir
}

/// A stdio upstream at `/whoami/mcp` whose `whoami` tool answers the `sub` of the caller's
/// token: the gateway starts a process per user with it in `WHO` (`claims_to_env`).
fn whoami() -> mcp_ui_model::config::UpstreamConfig {
    let mut up = gw::stdio("whoami", "python3", &["-c", ENV_ECHO_SERVER, "WHO"]);
    up.sessions = Some(SessionMode::Conversation);
    up.auth = Some(AuthSetting::Table(Box::new(AuthConfig {
        claims_to_env: Some([("WHO".to_owned(), "sub".to_owned())].into()),
        ..AuthConfig::default()
    })));
    up
}

fn args<'a>(pairs: &'a [&'a str]) -> Vec<&'a OsStr> {
    pairs.iter().map(OsStr::new).collect()
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Signed in at the gateway's authorization server from `/preview`: the user's tools,
/// a widget, a call the upstream answers as that user, a refresh, a sign-out; and the
/// same sign-in from `localhost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_signs_in_with_the_gateways_authorization_server_and_calls_as_that_user() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    if !super::browser_ready("the /preview sign-in test") {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    // Bound first: the provider is told the gateway's callback before the gateway starts.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let public = format!("http://{addr}");
    let idp = Idp::start_with_login_client(
        &peers,
        LOGIN_CLIENT,
        LOGIN_SECRET,
        &format!("{public}/oauth/callback"),
        &["--login-form"],
    )
    .await;
    let config = Config {
        listen: addr,
        public_url: Some(public.clone()),
        session_key: Some("cd".repeat(32)),
        overlays: overlays(&temp),
        upstreams: vec![gw::demo_stdio("demo"), whoami()],
        auth: Some(AuthConfig {
            scopes: Some(vec!["tools:call".into()]),
            clock_skew_secs: Some(0),
            ..AuthConfig::default()
        }),
        authorization_server: Some(AuthorizationServerConfig {
            provider: idp.provider(),
            access_token_ttl_secs: Some(ACCESS_TTL_SECS),
            ..AuthorizationServerConfig::default()
        }),
        ..gw::test_config()
    };
    let gateway = TestGateway::start_on(config, listener);
    let paths: Vec<String> = gateway
        .gateway
        .mounts
        .iter()
        .map(|m| m.config.path.clone())
        .collect();
    let (demo, who) = (&paths[0], &paths[1]);
    let others = || idp.proc.tail(20);

    // At 127.0.0.1, the public URL's own address.
    let url = format!("{public}/preview");
    let t = std::time::Instant::now();
    let (summary, context) = drive_async(
        "preview-sign-in",
        &args(&[
            "--url",
            &url,
            "--sign-in",
            "ada",
            "--call",
            "add_task",
            "--args",
            r#"{"title":"Signed in"}"#,
            "--expect",
            "Signed in",
            "--whoami",
            who,
            "--expire-wait",
            PAST_EXPIRY_SECS,
            "--sign-out",
        ]),
        others,
    )
    .await;
    let took = t.elapsed();
    let checks = &summary["checks"];
    // Before signing in: a panel saying so, no request made, no tools.
    let panel = &checks["panel"];
    assert_eq!(panel["title"], format!("Sign in to {demo}"), "{context}");
    assert!(
        str_of(panel, "/message").contains(&public)
            && str_of(panel, "/message").contains("tools:call"),
        "{context}"
    );
    assert_eq!(panel["sign_in_button"], true, "{context}");
    assert_eq!(panel["tools"], 0, "{context}");
    assert_eq!(
        panel["tools_empty"], "Sign in (above) to list the tools.",
        "{context}"
    );
    assert_eq!(panel["connection"], "sign in needed", "{context}");
    assert!(
        str_of(checks, "/page_csp").contains(&format!("connect-src 'self' {public};")),
        "{context}"
    );
    // The sign-in: as a host signs in, back on the page with the user's tools.
    let first = &checks["first"];
    let authorize = &first["authorize"];
    assert_eq!(authorize["origin"], public.as_str(), "{context}");
    let params = &authorize["params"];
    assert_eq!(params["response_type"], "code", "{context}");
    assert_eq!(params["code_challenge_method"], "S256", "{context}");
    assert_eq!(
        str_of(params, "/code_challenge").len(),
        43,
        "a SHA-256, base64url\n{context}"
    );
    assert!(str_of(params, "/state").len() >= 22, "{context}");
    assert_eq!(params["resource"], format!("{public}{demo}"), "{context}");
    assert_eq!(params["scope"], "tools:call", "{context}");
    assert_eq!(
        params["redirect_uri"],
        format!("{public}/preview/callback"),
        "{context}"
    );
    assert!(
        str_of(first, "/consent").contains("mcp-ui-gateway preview"),
        "the consent page names the page as the client\n{context}"
    );
    assert_eq!(first["login_form"], true, "{context}");
    assert!(
        first["visited"].as_array().is_some_and(|v| v
            .iter()
            .any(|u| u.as_str().is_some_and(|u| u.starts_with(idp.issuer())))),
        "the browser went to the provider\n{context}"
    );
    assert_eq!(
        first["callback_params"],
        json!(["code", "state", "iss"]),
        "{context}"
    );
    assert_eq!(
        first["url"],
        format!("{public}/preview/"),
        "the code is gone from the address bar\n{context}"
    );
    assert_eq!(first["account"], "signed in as ada", "{context}");
    assert_eq!(first["panel_visible"], false, "{context}");
    assert!(
        first["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "show_tasks")),
        "{context}"
    );
    // What the page keeps: the client id in localStorage, the tokens in sessionStorage only.
    let storage = &checks["storage"];
    assert_eq!(storage["token_in_local"], false, "{context}");
    assert_eq!(storage["token_in_url"], false, "{context}");
    assert_eq!(
        storage["local_keys"],
        json!([format!(
            "mcp-ui-gateway.preview.client {public} {public}/preview/callback"
        )]),
        "{context}"
    );
    assert_eq!(
        storage["session_keys"],
        json!([format!("mcp-ui-gateway.preview.token {public}{demo}")]),
        "{context}"
    );
    assert_eq!(
        storage["tokens"],
        json!([{ "how": "sign-in", "has_refresh": true, "client_id": storage["tokens"][0]["client_id"] }]),
        "{context}"
    );
    // The call with the token, its widget.
    assert!(
        str_of(checks, "/widget_text").contains("Signed in"),
        "{context}"
    );
    // The second mount: signed in there too (one client, consent remembered or not), and
    // its upstream was started for ada.
    assert_eq!(checks["second"]["account"], "signed in as ada", "{context}");
    assert_eq!(
        checks["second"]["authorize"]["params"]["resource"],
        format!("{public}{who}"),
        "{context}"
    );
    assert_eq!(
        checks["second"]["authorize"]["params"]["client_id"], params["client_id"],
        "the client registered once is used again\n{context}"
    );
    assert_eq!(checks["whoami"], "ada", "{context}");
    // After the access token expired: refreshed, and the user is still ada.
    assert_eq!(checks["whoami_again"], "ada", "{context}");
    assert_eq!(checks["refreshed"], true, "{context}");
    // Signed out: the panel again, nothing kept for that mount.
    let out = &checks["signed_out"];
    assert_eq!(out["account_visible"], false, "{context}");
    assert_eq!(out["panel"]["sign_in_button"], true, "{context}");
    assert_eq!(
        out["storage"]["session_keys"],
        json!([format!("mcp-ui-gateway.preview.token {public}{demo}")]),
        "the other mount's sign-in stays\n{context}"
    );
    assert!(
        out["log"].as_array().is_some_and(|l| l
            .iter()
            .any(|x| x.as_str().is_some_and(|x| x.contains("revoked")))),
        "{context}"
    );
    eprintln!(
        "preview sign-in at 127.0.0.1: whole run {} ms (sign-in {} ms)",
        took.as_millis(),
        summary["steps"][1]["ms"]
    );

    // At localhost, while public_url (the authorization server) is 127.0.0.1: the sign-in
    // runs there and comes back to localhost (a redirect URI matched exactly).
    let port = addr.port();
    let local = format!("http://localhost:{port}");
    let t = std::time::Instant::now();
    let (summary, context) = drive_async(
        "preview-sign-in-localhost",
        &args(&[
            "--url",
            &format!("{local}/preview"),
            "--sign-in",
            "grace",
            "--whoami",
            who,
        ]),
        others,
    )
    .await;
    let checks = &summary["checks"];
    let first = &checks["first"];
    assert_eq!(first["authorize"]["origin"], public.as_str(), "{context}");
    assert_eq!(
        first["authorize"]["params"]["redirect_uri"],
        format!("{local}/preview/callback"),
        "{context}"
    );
    assert_eq!(
        first["authorize"]["params"]["resource"],
        format!("{public}{demo}"),
        "the resource is the public URL's\n{context}"
    );
    assert_eq!(first["url"], format!("{local}/preview/"), "{context}");
    assert_eq!(first["account"], "signed in as grace", "{context}");
    assert_eq!(checks["whoami"], "grace", "{context}");
    eprintln!(
        "preview sign-in at localhost: whole run {} ms",
        t.elapsed().as_millis()
    );

    // Answers the page did not ask for, at its redirect URI: refused, said, the address
    // bar cleaned, no code redeemed, no token kept.
    let (summary, context) = drive_async(
        "preview-forged-callbacks",
        &args(&["--url", &url, "--forged-callbacks"]),
        others,
    )
    .await;
    let checks = &summary["checks"];
    let refused = |name: &str, why: &str| {
        let c = &checks["callbacks"][name];
        assert_eq!(
            c["error"],
            format!("Sign-in failed: {why}"),
            "{name}\n{context}"
        );
        assert_eq!(c["url"], format!("{public}/preview/"), "{name}\n{context}");
        assert_eq!(c["storage"]["tokens"], json!([]), "{name}\n{context}");
    };
    refused(
        "another state",
        "the answer does not carry the state this page sent: it answers another sign-in",
    );
    refused(
        "another issuer",
        &format!("the answer is from http://127.0.0.1:9, not {public} (RFC 9207)"),
    );
    refused(
        "no issuer",
        &format!("the answer is from an unnamed issuer, not {public} (RFC 9207)"),
    );
    refused("an error", "access_denied: the user said no");
    let again = &checks["callbacks"]["nothing under way"];
    assert_eq!(
        again["error"],
        "Sign-in failed: this tab started no sign-in (or it was finished already): sign in again",
        "{context}"
    );
    assert_eq!(again["storage"]["tokens"], json!([]), "{context}");
    assert_eq!(checks["codes_sent"], json!([]), "{context}");
    gateway.shutdown().await;
}

/// `[auth]` alone, tokens of the provider: the page asks for a token to be pasted, shows
/// why a wrong one was refused (the challenge's `error_description`, not "No tools."),
/// then lists and calls the tools with a good one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_takes_a_pasted_token_and_says_why_a_wrong_one_is_refused() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    if !super::browser_ready("the /preview pasted-token test") {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let idp = Idp::start(&peers).await;
    let gateway = TestGateway::start_public(Config {
        overlays: overlays(&temp),
        upstreams: vec![gw::demo_stdio("demo")],
        auth: Some(AuthConfig {
            issuer: Some(idp.issuer().to_owned()),
            scopes: Some(vec!["tools:call".into()]),
            ..AuthConfig::default()
        }),
        ..gw::test_config()
    })
    .await;
    let resource = gateway.url();
    let token = idp.token(&resource, &["tools:call"]).await;
    // A real token of the provider's, for another resource.
    let elsewhere = idp
        .token("http://127.0.0.1:9/elsewhere/mcp", &["tools:call"])
        .await;
    // What the gateway answers that token, as any client sees it.
    let bearer = format!("Bearer {elsewhere}");
    let (status, headers, _) = super::support::clients::post_json(
        &resource,
        &[
            ("authorization", bearer.as_str()),
            ("accept", "application/json, text/event-stream"),
        ],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
    )
    .await;
    assert_eq!(status, 401);
    let challenge = headers["www-authenticate"].to_str().unwrap().to_owned();
    let description = challenge
        .split("error_description=\"")
        .nth(1)
        .and_then(|d| d.split('"').next())
        .unwrap_or_else(|| panic!("{challenge}"))
        .to_owned();

    let url = format!("http://{}/preview", gateway.addr);
    let t = std::time::Instant::now();
    let (summary, context) = drive_async(
        "preview-pasted-token",
        &args(&[
            "--url",
            &url,
            "--paste-bad",
            &elsewhere,
            "--paste",
            &token,
            "--call",
            "add_task",
            "--args",
            r#"{"title":"With a pasted token"}"#,
            "--expect",
            "With a pasted token",
        ]),
        || idp.proc.tail(20),
    )
    .await;
    let checks = &summary["checks"];
    let panel = &checks["panel"];
    assert_eq!(
        panel["sign_in_button"], false,
        "no authorization server of the gateway's\n{context}"
    );
    assert_eq!(panel["token_form"], true, "{context}");
    assert!(
        str_of(panel, "/message").contains(idp.issuer())
            && str_of(panel, "/message").contains(&resource),
        "{context}"
    );
    assert!(
        str_of(checks, "/token_hint").contains("grant_type=client_credentials"),
        "{context}"
    );
    let bad = &checks["bad_token"];
    assert_eq!(
        bad["error"],
        format!("The token was refused: {description}"),
        "{context}"
    );
    assert!(description.contains("another resource"), "{description}");
    assert_eq!(bad["panel"]["tools"], 0, "{context}");
    assert_eq!(bad["account_visible"], false, "{context}");
    assert_eq!(
        bad["panel"]["connection"], "token refused: sign in",
        "{context}"
    );
    assert_eq!(
        bad["storage"]["session_keys"],
        json!([]),
        "a refused token is forgotten\n{context}"
    );
    let pasted = &checks["pasted"];
    assert_eq!(pasted["account"], "token: test-client", "{context}");
    assert_eq!(pasted["panel_visible"], false, "{context}");
    assert!(
        pasted["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "add_task")),
        "{context}"
    );
    assert_eq!(pasted["storage"]["token_in_local"], false, "{context}");
    assert!(
        str_of(checks, "/widget_text").contains("With a pasted token"),
        "{context}"
    );
    eprintln!(
        "preview pasted token: whole run {} ms",
        t.elapsed().as_millis()
    );
    gateway.shutdown().await;
}

/// An upstream with OAuth of its own (passed through; no `[auth]`): the page learns it from
/// the relayed 401, asks for a token to paste, shows the upstream's reason for refusing a
/// wrong one, and sends the right one on every request, the GET stream included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_asks_for_a_token_when_the_upstream_has_oauth_of_its_own() {
    use std::sync::{Arc, Mutex};

    use http_body_util::{BodyExt, Full};
    use hyper::{Method, Request, StatusCode, body::Incoming};

    use super::support::upstreams::{BoxResponse, spawn_server};

    if !super::browser_ready("the /preview passthrough test") {
        return;
    }
    /// What the upstream saw: each request's method (or HTTP method) and its credentials.
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;
    let seen: Seen = Arc::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let log = seen.clone();
    let vault = spawn_server(stop.clone(), "/mcp", move |req: Request<Incoming>| {
        let log = log.clone();
        async move {
            let auth = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let http_method = req.method().clone();
            let path = req.uri().path().to_owned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = match &http_method {
                &Method::POST => v["method"].as_str().unwrap_or("(response)").to_owned(),
                other => other.to_string(),
            };
            log.lock().unwrap().push((method.clone(), auth.clone()));
            let reply = |status: StatusCode, text: String| {
                let mut r: BoxResponse =
                    hyper::Response::new(Full::new(bytes::Bytes::from(text)).boxed());
                *r.status_mut() = status;
                r.headers_mut()
                    .insert("content-type", "application/json".parse().unwrap());
                r
            };
            if path.starts_with("/.well-known/oauth-protected-resource") {
                // Its metadata: where its tokens come from.
                return reply(
                    StatusCode::OK,
                    json!({"resource": "http://127.0.0.1:9/mcp",
                           "authorization_servers": ["https://login.vault.example"],
                           "scopes_supported": ["vault:open"]})
                    .to_string(),
                );
            }
            if auth.as_deref() != Some("Bearer sesame") {
                let mut r = reply(StatusCode::UNAUTHORIZED, String::new());
                let challenge = match auth {
                    None => r#"Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource""#,
                    Some(_) => r#"Bearer error="invalid_token", error_description="the vault knows no such token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource""#,
                };
                r.headers_mut()
                    .insert("www-authenticate", challenge.parse().unwrap());
                return r;
            }
            let id = v["id"].to_string();
            match (http_method, method.as_str()) {
                (Method::GET, _) => reply(StatusCode::METHOD_NOT_ALLOWED, String::new()),
                (Method::DELETE, _) => reply(StatusCode::OK, String::new()),
                (_, "initialize") => reply(
                    StatusCode::OK,
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"vault","version":"1"}}}}}}"#
                    ),
                ),
                (_, "tools/list") => reply(
                    StatusCode::OK,
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"open_vault","inputSchema":{{"type":"object"}}}}]}}}}"#
                    ),
                ),
                _ if v.get("id").is_none() => reply(StatusCode::ACCEPTED, String::new()),
                _ => reply(
                    StatusCode::OK,
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
                ),
            }
        }
    })
    .await
    .unwrap();
    let gateway = TestGateway::start(vec![gw::http("vault", &vault.url)]).await;

    let url = format!("http://{}/preview", gateway.addr);
    let (summary, context) = drive_async(
        "preview-passthrough-token",
        &args(&["--url", &url, "--paste-bad", "nope", "--paste", "sesame"]),
        String::new,
    )
    .await;
    let checks = &summary["checks"];
    let panel = &checks["panel"];
    assert_eq!(panel["sign_in_button"], false, "{context}");
    assert!(
        str_of(panel, "/message").contains("asks for a bearer token of its own")
            && str_of(panel, "/message").contains(&format!(
                "{}/.well-known/oauth-protected-resource",
                gateway.addr
            )),
        "the challenge's metadata, pointed at the gateway\n{context}"
    );
    assert_eq!(
        checks["token_hint"],
        format!(
            "Get one from https://login.vault.example (a signed-in client holds one), issued for \
             the resource http://{}/mcp with the scopes it needs (vault:open). It stays in this \
             tab only.",
            gateway.addr
        ),
        "{context}"
    );
    assert_eq!(
        checks["bad_token"]["error"], "The token was refused: the vault knows no such token",
        "{context}"
    );
    assert_eq!(
        checks["pasted"]["tools"],
        json!(["open_vault"]),
        "{context}"
    );
    assert_eq!(checks["pasted"]["account"], "token: pasted", "{context}");
    let seen = seen.lock().unwrap().clone();
    for method in ["initialize", "tools/list", "GET"] {
        assert!(
            seen.iter()
                .any(|(m, a)| m == method && a.as_deref() == Some("Bearer sesame")),
            "{method} with the token: {seen:?}"
        );
    }
    gateway.shutdown().await;
    stop.cancel();
}
