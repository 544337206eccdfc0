//! What identity keys (`[auth]`, tokens of the real OpenID provider of
//! `tests/support/idp.rs`): a session id names the caller it was made for, and
//! only that caller is served under it, in every mode and by every method; the
//! sessions the gateway holds for a caller carry the claims they were opened
//! with, and a caller whose claims changed gets sessions of its own.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hyper::{HeaderMap, Method, StatusCode};
use mcp_ui_model::config::{
    AppConfig, AuthConfig, AuthSetting, Config, MemberConfig, SessionMode, UpstreamConfig,
};
use serde_json::{Value, json};

use crate::support::clients::{open_sse, post_json, request_raw};
use crate::support::gateway::{self as gw, TestGateway};
use crate::support::idp::{Idp, SHORT_LIVED_CLIENT_ID, SHORT_LIVED_CLIENT_SECRET};
use crate::support::peers::setup;
use crate::support::upstreams::{
    ENV_ECHO_SERVER, HttpFlavor, STDIO_COMMAND, start_http, start_http_watched,
};

const VERSION: &str = "2025-11-25";
/// JSON-RPC's code for a session the server does not know.
const SESSION_NOT_FOUND: i64 = -32001;

type Answer = (StatusCode, HeaderMap, Bytes);
/// What an upstream was told with a request: `x-scope` and its session id.
type Told = (Option<String>, Option<String>);

/// `[auth]` naming the peer, letting callers without a token in (`anonymous`).
fn auth(idp: &Idp) -> AuthConfig {
    AuthConfig {
        issuer: Some(idp.issuer().to_owned()),
        anonymous: Some(true),
        ..AuthConfig::default()
    }
}

fn mounted(mut up: UpstreamConfig, sessions: SessionMode) -> UpstreamConfig {
    up.path = Some(format!("/{}/mcp", up.name));
    up.sessions = Some(sessions);
    up
}

fn fixture(name: &str, sessions: SessionMode) -> UpstreamConfig {
    mounted(
        gw::stdio(name, STDIO_COMMAND, &["--protocol", "2025"]),
        sessions,
    )
}

/// The JSON-RPC message of a JSON or SSE answer (its last event with data).
fn message(answer: &Answer) -> Value {
    let (status, headers, body) = answer;
    let sse = headers
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = match sse {
        true => crate::support::clients::parse_sse(body)
            .into_iter()
            .rev()
            .find(|e| !e.data.is_empty())
            .map(|e| e.data)
            .unwrap_or_default(),
        false => String::from_utf8_lossy(body).into_owned(),
    };
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("HTTP {status}, not JSON ({e}): {text}"))
}

/// The headers of a request presenting `token` (none: a caller without one)
/// and naming `session`.
fn headers<'a>(auth: &'a Option<String>, session: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("mcp-protocol-version", VERSION)];
    if let Some(a) = auth {
        h.push(("authorization", a.as_str()));
    }
    if let Some(s) = session {
        h.push(("mcp-session-id", s));
    }
    h
}

fn bearer(token: Option<&str>) -> Option<String> {
    token.map(|t| format!("Bearer {t}"))
}

async fn post(url: &str, token: Option<&str>, session: Option<&str>, body: Value) -> Answer {
    let auth = bearer(token);
    post_json(url, &headers(&auth, session), body.to_string()).await
}

/// `initialize` (and `notifications/initialized`) with `token`: the session id.
async fn initialize(url: &str, token: Option<&str>) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "identity-test", "version": "1"}}});
    let answer = post(url, token, None, init).await;
    assert_eq!(
        answer.0,
        StatusCode::OK,
        "initialize at {url}: {}",
        message(&answer)
    );
    let sid = answer.1["mcp-session-id"].to_str().unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(url, token, Some(&sid), note).await;
    assert!(status.is_success(), "{}", String::from_utf8_lossy(&body));
    sid
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})
}

/// `Err` unless `answer` is the gateway's "unknown session": 404, `-32001`.
fn unknown(answer: &Answer) -> Result<(), String> {
    let code = serde_json::from_slice::<Value>(&answer.2)
        .ok()
        .and_then(|m| m["error"]["code"].as_i64());
    match (answer.0, code) {
        (StatusCode::NOT_FOUND, Some(SESSION_NOT_FOUND)) => Ok(()),
        _ => Err(said(answer)),
    }
}

/// An answer, shortly.
fn said(answer: &Answer) -> String {
    let text: String = String::from_utf8_lossy(&answer.2)
        .chars()
        .take(160)
        .collect();
    format!("HTTP {} {text}", answer.0)
}

/// A GET (the session's stream) or DELETE naming `session` with `token`: its
/// status and body, a stream not read.
async fn bodyless(method: Method, url: &str, token: Option<&str>, session: &str) -> Answer {
    let auth = bearer(token);
    let mut h = headers(&auth, Some(session));
    h.push(("accept", "text/event-stream"));
    if method == Method::GET {
        let (status, headers, _) = open_sse(Method::GET, url, &h, Bytes::new()).await.unwrap();
        let sse = headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        if sse {
            return (status, headers, Bytes::from_static(b"(a stream)"));
        }
    }
    request_raw(method, url, &h, "").await
}

/// A session id is served only for the caller it was made for, on every kind of
/// session (a client's own process, a shared connection, a conversation's, an HTTP
/// upstream's own session, an app's): another user with a valid token of its own,
/// and a caller without a token, get 404 `-32001` for it at POST, GET and DELETE, as
/// for an id that does not exist, and reach nothing of the owner's; the owner's
/// refreshed token keeps it; an anonymous caller's session is not a signed-in one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_ids_serve_only_the_caller_they_were_made_for() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    let http = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let g = TestGateway::start_public(Config {
        upstreams: vec![
            fixture("client", SessionMode::Client),
            fixture("shared", SessionMode::Shared),
            fixture("talk", SessionMode::Conversation),
            mounted(gw::http("http", &http.url), SessionMode::Client),
        ],
        apps: vec![AppConfig {
            name: "suite".into(),
            path: Some("/suite/mcp".into()),
            upstreams: vec![MemberConfig::Name("shared".into())],
            auth: None,
        }],
        auth: Some(auth(&idp)),
        ..gw::test_config()
    })
    .await;
    let mut failures = Vec::new();
    for name in ["client", "shared", "talk", "http", "suite"] {
        let url = g.url_for(&format!("/{name}/mcp"));
        let alice = idp.token(&url, &[]).await;
        // Bob: another subject (`short-lived`), a fresh token at each use.
        let bob = async || {
            let (status, body) = idp
                .client_credentials(
                    SHORT_LIVED_CLIENT_ID,
                    SHORT_LIVED_CLIENT_SECRET,
                    Some(&url),
                    &[],
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["access_token"].as_str().unwrap().to_owned()
        };
        let mut check = |what: &str, r: Result<(), String>| {
            if let Err(e) = r {
                failures.push(format!("{name}: {what}: {e}"));
            }
        };
        let sid = initialize(&url, Some(&alice)).await;
        let served = |a: &Answer| match a.0 == StatusCode::OK && message(a).get("result").is_some()
        {
            true => Ok(()),
            false => Err(said(a)),
        };
        check(
            "its owner's tools/list",
            served(&post(&url, Some(&alice), Some(&sid), tools_list()).await),
        );
        let b = bob().await;
        check(
            "another user's tools/list under the owner's id",
            unknown(&post(&url, Some(&b), Some(&sid), tools_list()).await),
        );
        check(
            "a caller without a token under a signed-in user's id",
            unknown(&post(&url, None, Some(&sid), tools_list()).await),
        );
        let b = bob().await;
        check(
            "another user's GET of the owner's stream",
            unknown(&bodyless(Method::GET, &url, Some(&b), &sid).await),
        );
        let b = bob().await;
        check(
            "another user's DELETE of the owner's session",
            unknown(&bodyless(Method::DELETE, &url, Some(&b), &sid).await),
        );
        let again = idp.token(&url, &[]).await;
        assert_ne!(again, alice);
        check(
            "the owner's refreshed token, after the others tried",
            served(&post(&url, Some(&again), Some(&sid), tools_list()).await),
        );
        // A session without a token is no signed-in user's.
        let anonymous = initialize(&url, None).await;
        check(
            "the anonymous caller's own tools/list",
            served(&post(&url, None, Some(&anonymous), tools_list()).await),
        );
        check(
            "a signed-in user's tools/list under an anonymous caller's id",
            unknown(&post(&url, Some(&alice), Some(&anonymous), tools_list()).await),
        );
        let (status, _, body) = request_raw(
            Method::DELETE,
            &url,
            &headers(&bearer(Some(&alice)), Some(&sid)),
            "",
        )
        .await;
        check(
            "the owner's DELETE",
            match status.is_success() {
                true => Ok(()),
                false => Err(format!("HTTP {status} {}", String::from_utf8_lossy(&body))),
            },
        );
    }
    g.shutdown().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The claims a held session was opened with stay its own: after a token whose claim
/// differs (two tokens of one user with other scopes, `claims_to_headers = {"x-scope" =
/// "scope"}`), the HTTP upstream is told the new value with the call, on a session the
/// gateway holds for it, and the old one still on the old session for a token that
/// still says it; a stdio process started with a claim in its environment
/// (`claims_to_env`) serves that claim only: the same client session with the other
/// token reaches a process started with the new value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_reach_the_upstream_as_the_calls_token_says_them() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let idp = Idp::start(&peers).await;
    // What the HTTP upstream is told with each POST: `x-scope` and its session.
    let told: Arc<Mutex<Vec<Told>>> = Arc::default();
    let log = told.clone();
    let http = start_http_watched(
        HttpFlavor::StatefulSse,
        crate::support::fixture::ProtocolMode::All,
        move |req| {
            let header = |n: &str| req.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
            if req.method() == Method::POST {
                log.lock()
                    .unwrap()
                    .push((header("x-scope"), header("mcp-session-id")));
            }
        },
    )
    .await
    .unwrap();
    let claims = |pairs: &[(&str, &str)]| {
        Some(
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        )
    };
    let mut held = mounted(gw::http("held", &http.url), SessionMode::Client);
    held.auth = Some(AuthSetting::Table(Box::new(AuthConfig {
        claims_to_headers: claims(&[("x-scope", "scope")]),
        ..AuthConfig::default()
    })));
    let mut own = mounted(
        gw::stdio("own", "python3", &["-c", ENV_ECHO_SERVER, "MCP_SCOPE"]),
        SessionMode::Conversation,
    );
    own.auth = Some(AuthSetting::Table(Box::new(AuthConfig {
        claims_to_env: claims(&[("MCP_SCOPE", "scope")]),
        ..AuthConfig::default()
    })));
    let g = TestGateway::start_public(Config {
        upstreams: vec![held, own],
        auth: Some(AuthConfig {
            anonymous: Some(false),
            ..auth(&idp)
        }),
        ..gw::test_config()
    })
    .await;

    // HTTP: sessionless calls, which the gateway answers on a session it holds.
    let url = g.url_for("/held/mcp");
    let wide = ["tools:call", "notes:write"];
    let echo = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}})
    };
    let call = async |token: &str, id: u64| -> Told {
        let answer = post(&url, Some(token), None, echo(id)).await;
        assert_eq!(answer.0, StatusCode::OK, "{}", message(&answer));
        assert!(
            message(&answer)["result"].is_object(),
            "{}",
            message(&answer)
        );
        told.lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the upstream was asked")
    };
    let (scope, first) = call(&idp.token(&url, &wide).await, 1).await;
    assert_eq!(scope.as_deref(), Some("tools:call notes:write"));
    let (scope, narrow) = call(&idp.token(&url, &["tools:call"]).await, 2).await;
    assert_eq!(
        scope.as_deref(),
        Some("tools:call"),
        "the upstream was told the claim of an earlier token with the call of a token without it"
    );
    assert_ne!(
        narrow, first,
        "a held session carries the claims it was opened with"
    );
    let (scope, again) = call(&idp.token(&url, &wide).await, 3).await;
    assert_eq!(scope.as_deref(), Some("tools:call notes:write"));
    assert_eq!(again, first, "the same claims: the same held session");

    // stdio: one client session, its process started with the caller's claim.
    let url = g.url_for("/own/mcp");
    let token = idp.token(&url, &wide).await;
    let sid = initialize(&url, Some(&token)).await;
    let whoami = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}});
    let env = async |token: &str| {
        let answer = post(&url, Some(token), Some(&sid), whoami.clone()).await;
        assert_eq!(answer.0, StatusCode::OK, "{}", message(&answer));
        message(&answer)["result"]["content"][0]["text"].clone()
    };
    assert_eq!(env(&token).await, "tools:call notes:write");
    let narrow = idp.token(&url, &["tools:call"]).await;
    assert_eq!(
        env(&narrow).await,
        "tools:call",
        "a process started with an earlier token's claim served a token without it"
    );
    g.shutdown().await;
}
