//! What the gateway logs while users sign in, captured at TRACE: no code, token or secret
//! of a sign-in (the provider's access and ID tokens, the gateway's own codes, access and
//! refresh tokens, its client secret at the provider, the session key) reaches the log.

use std::io::Write;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use hyper::{Method, StatusCode};
use support::browser_agent::Browser;
use support::peers::setup;

use super::{
    LOGIN_SECRET, call_tool, fixture, form, redeem, refresh, signed_in, support, tool_text,
    world_with,
};

/// The log lines written while a [`capture`] lasts.
pub(super) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every event of this thread, at every level, written as the gateway's log lines are,
/// until the guard drops. An in-process gateway runs on the test's thread
/// (`#[tokio::test]` is single-threaded), so its events are all there, and no other
/// test's.
pub(super) fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let into = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || Lines(into.clone()))
        .finish();
    (Logs(buffer), tracing::subscriber::set_default(subscriber))
}

/// Every JWT written in `text` whose claims name an issuer: a token, whatever its issuer.
fn jwts(text: &str) -> Vec<String> {
    let b64 = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = Vec::new();
    for (at, _) in text.match_indices("eyJ") {
        let run: String = text[at..]
            .chars()
            .take_while(|c| b64(*c) || *c == '.')
            .collect();
        let claims = run
            .split('.')
            .nth(1)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()
            })
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if claims.is_some_and(|c| c.get("iss").is_some()) {
            out.push(run);
        }
    }
    out
}

/// A whole sign-in with the real provider, logged at TRACE: the code redeemed (and
/// replayed), a tool called by a server that acts as the user at the provider (its token
/// passed on), a refresh, a revocation. The log is long, and none of it is secret.
#[tokio::test]
async fn no_code_token_or_secret_of_a_sign_in_reaches_the_log() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let (logs, capturing) = capture();
    let acting = super::provider_token_echo("as-the-user");
    let w = world_with(&peers, |_| {}, vec![fixture(), acting]).await;
    let client_id = super::public_client(&w).await;
    let url = super::authorize_url(
        &w,
        &client_id,
        &[("resource", &w.url("/stdio")), ("scope", "")],
    );
    let back = super::sign_in(&w, &mut Browser::new(), &url, "allow").await;
    let code = super::param(&back, "code").unwrap();
    let (status, _, first) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", super::REDIRECT),
            ("code_verifier", super::VERIFIER),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let access = first["access_token"].as_str().unwrap();
    let theirs = tool_text(
        &call_tool(&w, "/stdio", "whoami", access)
            .await
            .expect("the call as the user"),
    );
    assert!(theirs.len() > 10 && theirs != "(unset)", "{theirs}");
    let (status, second) = refresh(&w, &client_id, first["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    let (_, fixture_tokens) = signed_in(&w, &mut Browser::new(), &client_id).await;
    let (status, _) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the code replayed");
    let (status, _, _) = form(
        &w.url("/oauth/revoke"),
        &[
            ("token", second["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = support::clients::request_raw(
        Method::GET,
        &w.url("/oauth/callback?state=forged&code=forged-code"),
        &[],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    w.gw.shutdown().await;
    drop(capturing);

    let log = logs.text();
    let session_key = "ab".repeat(32);
    assert!(
        log.contains("TRACE") && log.contains("issued an access token"),
        "trace logging was on and saw the sign-in:\n{log}"
    );
    let secrets = [
        ("the code", code.as_str()),
        ("an access token", access),
        ("a refresh token", first["refresh_token"].as_str().unwrap()),
        (
            "a refreshed access token",
            second["access_token"].as_str().unwrap(),
        ),
        (
            "a refreshed refresh token",
            second["refresh_token"].as_str().unwrap(),
        ),
        (
            "another access token",
            fixture_tokens["access_token"].as_str().unwrap(),
        ),
        ("the provider's access token", theirs.as_str()),
        ("the gateway's secret at the provider", LOGIN_SECRET),
        ("the session key", session_key.as_str()),
    ];
    for (what, secret) in secrets {
        assert!(!log.contains(secret), "{what} was logged:\n{log}");
    }
    assert_eq!(
        jwts(&log),
        Vec::<String>::new(),
        "tokens (the provider's ID token?) were logged"
    );
}
