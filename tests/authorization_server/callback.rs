//! The provider's answer at `/oauth/callback`, attacked: an answer carrying another login's
//! `state` (with that login's cookie renamed to match), another issuer's `iss` or none
//! (RFC 9207 mix-up) against the real provider; and, from a hostile provider no real one
//! can be made to be (a stand-in here), ID tokens without the nonce, with another nonce,
//! issuer or audience. Each is refused end to end, and nothing secret reaches the log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use support::browser_agent::{Browser, encode_form, hidden_field, query_of};
use support::clients::request_raw;
use support::peers::setup;
use support::upstreams::{BoxResponse, Upstream, spawn_server};

use super::{
    LOGIN_CLIENT, REDIRECT, World, authorize_url, param, public_client, redeem, support, world,
};

/// The gateway's login under way in a browser, stopped where the provider sends the user
/// back: its cookie (name and value) and the callback URL the provider redirected to.
struct Login {
    cookie: (String, String),
    callback: String,
}

/// Start a login of `client_id` in a fresh browser: the consent page allowed, then the
/// provider's answer taken (not followed) at the gateway's callback.
async fn login(w: &World, client_id: &str) -> Login {
    let mut browser = Browser::new();
    let (status, _, page, at) = browser
        .navigate(&authorize_url(w, client_id, &[]), REDIRECT)
        .await;
    assert_eq!(status, StatusCode::OK, "the consent page at {at}");
    let ticket = hidden_field(&page, "ticket").expect("the consent page's form");
    let form = encode_form(&[("ticket", &ticket), ("decision", "allow")]);
    let (status, h, _, _) = browser
        .request(Method::POST, &w.url("/oauth/authorize"), Some(&form))
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = h
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next()?.split_once('='))
        .find(|(name, _)| name.starts_with("mcp_ui_login_"))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .expect("the login cookie");
    let to_provider = h.get("location").unwrap().to_str().unwrap().to_owned();
    let (_, _, _, callback) = browser
        .navigate(&to_provider, &w.url("/oauth/callback"))
        .await;
    assert!(
        callback.starts_with(&w.url("/oauth/callback?")),
        "{callback}"
    );
    Login { cookie, callback }
}

/// `url` with its query's `name` set to `value` (`None`: removed).
fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let (base, _) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<(String, String)> = query_of(url)
        .into_iter()
        .filter(|(k, _)| k != name)
        .collect();
    if let Some(v) = value {
        pairs.push((name.to_owned(), v.to_owned()));
    }
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    format!("{base}?{}", encode_form(&pairs))
}

/// The gateway's answer to the provider's answer `callback`, sent with `cookie`: its
/// status and where it sends the browser (if anywhere).
async fn answer(callback: &str, cookie: &(String, String)) -> (StatusCode, Option<String>) {
    let header = format!("{}={}", cookie.0, cookie.1);
    let (status, h, _) = request_raw(Method::GET, callback, &[("cookie", &header)], "").await;
    let to = h
        .get("location")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    (status, to)
}

/// With the real provider: an answer whose `state` is another login's, presented with that
/// other login's cookie renamed to the name this state looks for, is refused (the sealed
/// login names its own state); an answer naming another issuer, or none although the
/// provider says it always sends one (RFC 9207), goes back to the client as
/// `access_denied`, never as a code; the untouched answer gives a code.
#[tokio::test]
async fn an_answer_for_another_login_or_from_another_issuer_is_refused() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;
    let (_, discovery) = super::get_json(&w._idp.discovery_url()).await;
    assert_eq!(
        discovery["authorization_response_iss_parameter_supported"], true,
        "{discovery}"
    );
    let client_id = public_client(&w).await;

    // Two logins; the first one's code and cookie, under the second one's state.
    let (first, second) = (login(&w, &client_id).await, login(&w, &client_id).await);
    let state = param(&second.callback, "state").unwrap();
    let forged = with_param(&first.callback, "state", Some(&state));
    let renamed = (second.cookie.0.clone(), first.cookie.1.clone());
    let (status, to) = answer(&forged, &renamed).await;
    assert_eq!(
        (status, to.as_deref()),
        (StatusCode::BAD_REQUEST, None),
        "an answer to another login's state"
    );
    // Each login's own answer, with its own cookie, gives a code.
    for l in [&first, &second] {
        let (status, to) = answer(&l.callback, &l.cookie).await;
        assert_eq!(status, StatusCode::FOUND);
        let to = to.unwrap();
        assert!(
            to.starts_with(REDIRECT) && param(&to, "code").is_some(),
            "{to}"
        );
    }

    // Mix-up (RFC 9207): another issuer named, or none.
    for iss in [Some("http://127.0.0.1:1"), None] {
        let l = login(&w, &client_id).await;
        let (status, to) = answer(&with_param(&l.callback, "iss", iss), &l.cookie).await;
        assert_eq!(status, StatusCode::FOUND, "iss {iss:?}");
        let to = to.unwrap();
        assert!(to.starts_with(REDIRECT), "{to}");
        let error = param(&to, "error");
        assert_eq!(error.as_deref(), Some("access_denied"), "iss {iss:?}: {to}");
        assert_eq!(param(&to, "code"), None, "iss {iss:?}: {to}");
    }
    w.gw.shutdown().await;
}

/// What the stand-in provider's ID token gets wrong.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lie {
    Nothing,
    NoNonce,
    OtherNonce,
    OtherIssuer,
    OtherAudience,
}

#[derive(Default)]
struct Said {
    issuer: String,
    lie: Option<Lie>,
    /// The nonce of each code it gave.
    nonces: HashMap<String, String>,
    /// Every token it issued.
    tokens: Vec<String>,
}

/// A hostile OpenID provider: discovery, an authorization endpoint that signs anyone in at
/// once (back to the `redirect_uri` with a code, the state and its `iss`), and a token
/// endpoint answering an access token, a refresh token and an ID token whose claims the
/// test chooses. Its ID tokens carry no valid signature: the gateway reads them from the
/// provider's TLS-checked token endpoint (OpenID Connect Core §3.1.3.7 rule 6) and checks
/// their claims.
struct StandIn {
    server: Upstream,
    said: Arc<Mutex<Said>>,
}

impl StandIn {
    async fn start() -> StandIn {
        let said = Arc::new(Mutex::new(Said::default()));
        let state = said.clone();
        let server = spawn_server(
            tokio_util::sync::CancellationToken::new(),
            "",
            move |req: hyper::Request<hyper::body::Incoming>| {
                let state = state.clone();
                async move { stand_in_answer(&state, req).await }
            },
        )
        .await
        .unwrap();
        said.lock().unwrap().issuer = server.base_url();
        StandIn { server, said }
    }

    fn issuer(&self) -> String {
        self.server.base_url()
    }

    fn lie(&self, lie: Lie) {
        self.said.lock().unwrap().lie = Some(lie);
    }

    fn tokens(&self) -> Vec<String> {
        self.said.lock().unwrap().tokens.clone()
    }
}

fn json_answer(status: StatusCode, v: &Value) -> BoxResponse {
    let mut r = hyper::Response::new(
        http_body_util::Full::new(Bytes::from(v.to_string()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
}

async fn stand_in_answer(
    said: &Mutex<Said>,
    req: hyper::Request<hyper::body::Incoming>,
) -> BoxResponse {
    let path = req.uri().path().to_owned();
    let query = query_of(&req.uri().to_string());
    let issuer = said.lock().unwrap().issuer.clone();
    match path.as_str() {
        "/.well-known/openid-configuration" | "/.well-known/oauth-authorization-server" => {
            json_answer(
                StatusCode::OK,
                &json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "response_types_supported": ["code"],
                    "authorization_response_iss_parameter_supported": true,
                }),
            )
        }
        "/authorize" => {
            let get = |k: &str| {
                query
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let code = format!("stand-in-code-{}", rand::random::<u64>());
            said.lock()
                .unwrap()
                .nonces
                .insert(code.clone(), get("nonce"));
            let back = format!(
                "{}?{}",
                get("redirect_uri"),
                encode_form(&[("code", &code), ("state", &get("state")), ("iss", &issuer)])
            );
            let mut r = json_answer(StatusCode::FOUND, &json!({}));
            r.headers_mut().insert("location", back.parse().unwrap());
            r
        }
        "/token" => {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let form = support::browser_agent::form_pairs(&String::from_utf8_lossy(&body));
            let code = form
                .iter()
                .find(|(k, _)| k == "code")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let mut s = said.lock().unwrap();
            let Some(nonce) = s.nonces.remove(&code) else {
                return json_answer(StatusCode::BAD_REQUEST, &json!({"error": "invalid_grant"}));
            };
            let id_token = id_token(&issuer, &nonce, s.lie.unwrap_or(Lie::Nothing));
            let n = rand::random::<u64>();
            let (access, refresh) = (
                format!("stand-in-access-{n}"),
                format!("stand-in-refresh-{n}"),
            );
            s.tokens
                .extend([access.clone(), refresh.clone(), id_token.clone()]);
            json_answer(
                StatusCode::OK,
                &json!({"access_token": access, "refresh_token": refresh,
                        "token_type": "Bearer", "expires_in": 3600, "id_token": id_token}),
            )
        }
        _ => json_answer(StatusCode::NOT_FOUND, &json!({"error": "not_found"})),
    }
}

/// An ID token of `issuer` for the gateway's client at the provider, with `nonce`, but for
/// what `lie` changes.
fn id_token(issuer: &str, nonce: &str, lie: Lie) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut claims = json!({"iss": issuer, "aud": LOGIN_CLIENT, "sub": "mallory",
                            "iat": now, "exp": now + 300, "nonce": nonce});
    match lie {
        Lie::Nothing => {}
        Lie::NoNonce => {
            claims.as_object_mut().unwrap().remove("nonce");
        }
        Lie::OtherNonce => claims["nonce"] = "a-nonce-of-another-login".into(),
        Lie::OtherIssuer => claims["iss"] = "https://login.attacker.example".into(),
        Lie::OtherAudience => claims["aud"] = "another-client".into(),
    }
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.{}",
        part(&json!({"alg": "RS256", "typ": "JWT", "kid": "stand-in"})),
        part(&claims),
        URL_SAFE_NO_PAD.encode(b"not a signature")
    )
}

/// A provider that lies in its ID token, each way in turn: the sign-in goes back to the
/// client as an error naming what was wrong, never as a code. The same provider telling
/// the truth signs the user in, and none of its tokens reaches the log.
#[tokio::test]
async fn id_tokens_a_hostile_provider_makes_up_are_refused() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let (logs, _capture) = super::logs::capture();
    let provider = StandIn::start().await;
    let issuer = provider.issuer();
    let w = world(&peers, |a| a.provider.issuer = Some(issuer.clone())).await;
    let client_id = public_client(&w).await;
    for (lie, why) in [
        (Lie::NoNonce, "has no nonce"),
        (Lie::OtherNonce, "nonce is not the one sent"),
        (Lie::OtherIssuer, "from another issuer"),
        (Lie::OtherAudience, "for another client"),
    ] {
        provider.lie(lie);
        let l = login(&w, &client_id).await;
        let (status, to) = answer(&l.callback, &l.cookie).await;
        assert_eq!(status, StatusCode::FOUND, "{lie:?}");
        let to = to.unwrap();
        assert!(to.starts_with(REDIRECT), "{lie:?}: {to}");
        assert_eq!(param(&to, "code"), None, "{lie:?} was accepted: {to}");
        assert_eq!(param(&to, "error").as_deref(), Some("server_error"), "{to}");
        let said = param(&to, "error_description").unwrap_or_default();
        assert!(said.contains(why), "{lie:?}: {said}");
    }
    provider.lie(Lie::Nothing);
    let l = login(&w, &client_id).await;
    let (_, to) = answer(&l.callback, &l.cookie).await;
    let to = to.unwrap();
    let code = param(&to, "code").unwrap_or_else(|| panic!("the honest answer: {to}"));
    let (status, tokens) = redeem(&w, &client_id, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(
        super::claims(tokens["access_token"].as_str().unwrap())["sub"],
        "mallory"
    );
    w.gw.shutdown().await;
    let log = logs.text();
    let tokens = provider.tokens();
    assert_eq!(tokens.len(), 15, "5 token answers");
    for t in tokens.iter().chain([&code]) {
        assert!(!log.contains(t.as_str()), "logged: {t}\n{log}");
    }
}
