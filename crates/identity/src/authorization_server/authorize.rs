//! An authorization request (RFC 6749 §4.1.1, OAuth 2.1 §4.1.1) checked
//! before anything is shown or anyone is sent anywhere: the client's
//! redirect URI, PKCE with S256, the `resource` (RFC 8707) among the
//! gateway's protected endpoints, the scopes granted; and the redirects that
//! carry its answer, each with `iss` (RFC 9207), to the redirect URI as it
//! was checked ([`RedirectUri::with_query`]).

use serde::{Deserialize, Serialize};

use super::client::{Client, matches_redirect};
use super::params::{Params, encode};
use super::{OAuthError, pkce};
use crate::urls::{RedirectUri, names_resource};

/// A protected endpoint tokens may be asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Its resource URL (the gateway's `public_url` and the endpoint's
    /// path): the `resource` clients ask for and the tokens' audience.
    pub url: String,
    /// The scopes a token for it may carry.
    pub offered: Vec<String>,
    /// The scopes granted when a client asks for none it offers: those every
    /// request to it needs.
    pub default: Vec<String>,
}

/// The longest `state` accepted: it comes back in a URL.
pub const MAX_STATE: usize = 1024;

/// An authorization request that passed every check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub client_id: String,
    /// The redirect URI the answer goes to, as the client sent it (or the
    /// client's only one, when it sent none): the URI checked.
    pub redirect_uri: RedirectUri,
    /// Whether the client sent `redirect_uri` (then the token request must
    /// send it too, OAuth 2.1 §4.1.3).
    pub redirect_uri_sent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The S256 code challenge.
    pub code_challenge: String,
    /// The resource URL the token will be for.
    pub resource: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

/// Why an authorization request is refused, and where that is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The client or its redirect URI is not to be trusted: the user is told,
    /// and nobody is redirected anywhere (RFC 6749 §4.1.2.1).
    Shown(OAuthError),
    /// Anything else is sent to the client's redirect URI.
    Redirected {
        redirect_uri: Box<RedirectUri>,
        state: Option<String>,
        error: OAuthError,
    },
}

/// The `client_id` of a request, or the refusal shown when it has none.
pub fn client_id(params: &Params) -> Result<&str, Refusal> {
    match params.one("client_id") {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(Refusal::Shown(OAuthError::request(
            "the request names no client (`client_id`)",
        ))),
        Err(e) => Err(Refusal::Shown(e)),
    }
}

/// `params` checked as an authorization request by `client` (known by
/// `client_id`), for one of `resources`.
pub fn check(
    params: &Params,
    client_id: &str,
    client: &Client,
    resources: &[Resource],
) -> Result<Request, Refusal> {
    let sent = params.one("redirect_uri").map_err(Refusal::Shown)?;
    let redirect_uri = redirect_uri(sent, client)?;
    // From here on the client and its redirect URI are known: refusals go
    // back to it.
    let state = params.one("state").ok().flatten().map(str::to_owned);
    let refuse = |error: OAuthError| Refusal::Redirected {
        redirect_uri: Box::new(redirect_uri.clone()),
        state: state.clone(),
        error,
    };
    let one = |name: &str| params.one(name).map_err(refuse);
    if params.one("state").is_err() {
        return Err(refuse(OAuthError::request(
            "`state` is sent more than once",
        )));
    }
    if state.as_ref().is_some_and(|s| s.len() > MAX_STATE) {
        return Err(refuse(OAuthError::request(format!(
            "`state` is longer than {MAX_STATE} bytes"
        ))));
    }
    response_type(params).map_err(refuse)?;
    let code_challenge = code_challenge(params).map_err(refuse)?;
    let resource = pick_resource(&params.all("resource"), resources).map_err(refuse)?;
    let asked = one("scope")?;
    let scopes = grant_scopes(asked.or(client.scope.as_deref()), resource);
    Ok(Request {
        client_id: client_id.to_owned(),
        redirect_uri,
        redirect_uri_sent: sent.is_some(),
        state,
        code_challenge,
        resource: resource.url.clone(),
        scopes,
    })
}

/// The redirect URI a request is answered at: the one `sent`, which must be
/// one `client` registered, else the client's only one. Refused as shown:
/// there is nowhere safe to send the browser.
fn redirect_uri(sent: Option<&str>, client: &Client) -> Result<RedirectUri, Refusal> {
    match sent {
        Some(asked) => {
            let refused = |why: &str| {
                Refusal::Shown(OAuthError::request(format!(
                    "the redirect URI {asked:?} is not one this client registered{why}"
                )))
            };
            let parsed = RedirectUri::parse(asked).map_err(|why| refused(&format!(": {why}")))?;
            if matches_redirect(client, &parsed).is_none() {
                return Err(refused(""));
            }
            Ok(parsed)
        }
        None => match client.redirect_uris.as_slice() {
            [only] => Ok(only.clone()),
            _ => Err(Refusal::Shown(OAuthError::request(
                "the request names no redirect URI (`redirect_uri`), and the client registered several",
            ))),
        },
    }
}

/// `response_type`: `code`, the only one supported.
fn response_type(params: &Params) -> Result<(), OAuthError> {
    match params.one("response_type")? {
        Some("code") => Ok(()),
        Some(other) => Err(OAuthError::new(
            "unsupported_response_type",
            format!("the response type `{other}` is not supported (only `code`)"),
        )),
        None => Err(OAuthError::request("`response_type` is missing")),
    }
}

/// The PKCE code challenge (OAuth 2.1 §4.1.1): required, S256 only.
fn code_challenge(params: &Params) -> Result<String, OAuthError> {
    match (
        params.one("code_challenge")?,
        params.one("code_challenge_method")?,
    ) {
        (None, _) => Err(OAuthError::request(
            "PKCE is required: send `code_challenge` with `code_challenge_method=S256`",
        )),
        (Some(_), None | Some("plain")) => Err(OAuthError::request(
            "only the S256 code challenge method is supported (`code_challenge_method=S256`)",
        )),
        (Some(_), Some(m)) if m != "S256" => Err(OAuthError::request(format!(
            "the code challenge method `{m}` is not supported (only S256)"
        ))),
        (Some(c), Some(_)) if !pkce::valid_challenge(c) => Err(OAuthError::request(
            "`code_challenge` is not an S256 challenge (43 characters of base64url)",
        )),
        (Some(c), Some(_)) => Ok(c.to_owned()),
    }
}

/// The one resource asked for, which must be one of the gateway's
/// (RFC 8707 §2: `invalid_target` otherwise). None asked for is the only
/// one, when the gateway has one.
fn pick_resource<'a>(
    asked: &[&str],
    resources: &'a [Resource],
) -> Result<&'a Resource, OAuthError> {
    match (asked, resources) {
        ([], [only]) => Ok(only),
        ([], _) => Err(OAuthError::new(
            "invalid_target",
            "name the endpoint the token is for (`resource`): this gateway protects several",
        )),
        ([one], _) => resources
            .iter()
            .find(|r| names_resource(one, &r.url))
            .ok_or_else(|| {
                OAuthError::new(
                    "invalid_target",
                    format!("{one:?} is not an endpoint this gateway protects"),
                )
            }),
        _ => Err(OAuthError::new(
            "invalid_target",
            "a token is for one endpoint: send one `resource`",
        )),
    }
}

/// The scopes granted for `resource` when `asked` (space separated) is
/// asked for: those of `asked` it offers, in `asked`'s order; when that
/// leaves none (nothing asked, or only scopes such as `openid` that are the
/// identity provider's), the resource's default (RFC 6749 §3.3: the server
/// may grant other scopes than asked, and then says which).
pub fn grant_scopes(asked: Option<&str>, resource: &Resource) -> Vec<String> {
    let mut granted: Vec<String> = Vec::new();
    for s in asked.unwrap_or_default().split(' ') {
        if resource.offered.iter().any(|o| o == s) && !granted.iter().any(|g| g == s) {
            granted.push(s.to_owned());
        }
    }
    if granted.is_empty() {
        granted = resource.default.clone();
    }
    granted
}

/// `redirect_uri` with `pairs` added to its query (RFC 6749 §3.1.2: a
/// query it has is kept): for the gateway's own endpoints and the
/// provider's, whose URLs have no query (`issuer_url`); a client's redirect
/// URI is a [`RedirectUri`].
pub fn redirect_to(redirect_uri: &str, pairs: &[(&str, &str)]) -> String {
    let sep = if redirect_uri.contains('?') { '&' } else { '?' };
    format!("{redirect_uri}{sep}{}", encode(pairs.iter().copied()))
}

/// Where a refused request's client is sent: its redirect URI with `error`,
/// `error_description`, `state` and `iss`.
pub fn error_redirect(
    redirect_uri: &RedirectUri,
    state: Option<&str>,
    error: &OAuthError,
    issuer: &str,
) -> String {
    let mut pairs = vec![
        ("error", error.error),
        ("error_description", error.description.as_str()),
    ];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    pairs.push(("iss", issuer));
    redirect_uri.with_query(pairs)
}

/// Where an approved request's client is sent: its redirect URI with the
/// code, its `state` and `iss`.
pub fn code_redirect(request: &Request, code: &str, issuer: &str) -> String {
    let mut pairs = vec![("code", code)];
    if let Some(s) = &request.state {
        pairs.push(("state", s));
    }
    pairs.push(("iss", issuer));
    request.redirect_uri.with_query(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorization_server::client::{AuthMethod, Client};

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn client() -> Client {
        Client {
            redirect_uris: vec![RedirectUri::parse("https://app.example/cb").unwrap()],
            client_name: Some("App".into()),
            client_uri: None,
            token_endpoint_auth_method: AuthMethod::None,
            refresh: true,
            scope: None,
        }
    }

    fn resources() -> Vec<Resource> {
        vec![
            Resource {
                url: "https://gw.example/notes".into(),
                offered: vec!["notes:read".into(), "notes:write".into()],
                default: vec!["notes:read".into()],
            },
            Resource {
                url: "https://gw.example/files".into(),
                offered: vec![],
                default: vec![],
            },
        ]
    }

    fn ask(query: &str) -> Result<Request, Refusal> {
        let p = Params::parse(query.as_bytes());
        check(&p, "c1", &client(), &resources())
    }

    fn good() -> String {
        format!(
            "response_type=code&client_id=c1&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=xyz&code_challenge={CHALLENGE}&code_challenge_method=S256&resource=https%3A%2F%2Fgw.example%2Fnotes"
        )
    }

    fn error_of(r: Result<Request, Refusal>) -> (&'static str, bool) {
        match r.unwrap_err() {
            Refusal::Shown(e) => (e.error, false),
            Refusal::Redirected { error, .. } => (error.error, true),
        }
    }

    #[test]
    fn a_good_request_passes_with_the_scopes_it_may_have() {
        let r = ask(&format!("{}&scope=openid%20notes:write%20admin", good())).unwrap();
        assert_eq!(r.scopes, ["notes:write"]);
        assert_eq!(r.resource, "https://gw.example/notes");
        assert!(r.redirect_uri_sent);
        assert_eq!(ask(&good()).unwrap().scopes, ["notes:read"]);
        let url = code_redirect(&r, "CODE", "https://gw.example");
        assert_eq!(
            url,
            "https://app.example/cb?code=CODE&state=xyz&iss=https%3A%2F%2Fgw.example"
        );
    }

    #[test]
    fn a_bad_redirect_is_shown_and_everything_else_is_sent_back() {
        assert_eq!(
            error_of(ask(&good().replace("app.example%2Fcb", "evil.example%2Fcb"))),
            ("invalid_request", false)
        );
        assert_eq!(
            error_of(ask(&format!("{}&redirect_uri=x", good()))),
            ("invalid_request", false)
        );
        assert_eq!(
            error_of(ask(&good().replace("&code_challenge_method=S256", ""))),
            ("invalid_request", true)
        );
        assert_eq!(
            error_of(ask(&good().replace("S256", "plain"))),
            ("invalid_request", true)
        );
        assert_eq!(
            error_of(ask(&good().replace(CHALLENGE, "short"))),
            ("invalid_request", true)
        );
        assert_eq!(
            error_of(ask(
                &good().replace("response_type=code", "response_type=token")
            )),
            ("unsupported_response_type", true)
        );
        assert_eq!(
            error_of(ask(&good().replace("%2Fnotes", "%2Fother"))),
            ("invalid_target", true)
        );
        assert_eq!(
            error_of(ask(
                &good().replace("&resource=https%3A%2F%2Fgw.example%2Fnotes", "")
            )),
            ("invalid_target", true)
        );
        assert_eq!(
            error_of(ask(&format!(
                "{}&resource=https%3A%2F%2Fgw.example%2Ffiles",
                good()
            ))),
            ("invalid_target", true)
        );
        assert_eq!(
            error_of(ask(&format!("{}&state=again", good()))),
            ("invalid_request", true)
        );
    }

    #[test]
    fn a_loopback_redirect_is_answered_on_its_port_and_only_there() {
        let mut c = client();
        c.redirect_uris = vec![RedirectUri::parse("http://127.0.0.1/callback").unwrap()];
        let ask = |redirect: &str, extra: &str| {
            let sent = &encode([("x", redirect)])[2..];
            let q = good().replace("https%3A%2F%2Fapp.example%2Fcb", sent) + extra;
            check(&Params::parse(q.as_bytes()), "c1", &c, &resources())
        };
        let r = ask("http://127.0.0.1:5555/callback", "").unwrap();
        assert_eq!(
            code_redirect(&r, "C", "https://gw.example"),
            "http://127.0.0.1:5555/callback?code=C&state=xyz&iss=https%3A%2F%2Fgw.example"
        );
        let Err(Refusal::Redirected {
            redirect_uri,
            state,
            error,
        }) = ask("http://127.0.0.1:5555/callback", "&response_type=token")
        else {
            panic!("a refusal sent back");
        };
        assert!(
            error_redirect(
                &redirect_uri,
                state.as_deref(),
                &error,
                "https://gw.example"
            )
            .starts_with("http://127.0.0.1:5555/callback?error=invalid_request&")
        );
        for bad in [
            "http://127.0.0.1:1@evil.example/callback",
            "http://127.0.0.1:5555\\@evil.example/callback",
            "http://127.0.0.1:5555%2F@evil.example/callback",
            "http://2130706433:5555/callback",
            "http://127.0.0.1:5555/callback/",
            "http://localhost:5555/callback",
        ] {
            assert_eq!(error_of(ask(bad, "")), ("invalid_request", false), "{bad}");
        }
    }

    #[test]
    fn a_resource_is_named_as_a_browser_reads_it() {
        for named in [
            "https%3A%2F%2Fgw.example%2Fnotes%2F",
            "https%3A%2F%2FGW.example%2Fnotes",
        ] {
            let q = good().replace("https%3A%2F%2Fgw.example%2Fnotes", named);
            assert_eq!(ask(&q).unwrap().resource, "https://gw.example/notes");
        }
        let q = good().replace("%2Fnotes", "%2Fnotes%23x");
        assert_eq!(error_of(ask(&q)), ("invalid_target", true));
    }
}
