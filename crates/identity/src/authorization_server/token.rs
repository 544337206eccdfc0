//! A token request (RFC 6749 §3.2, OAuth 2.1 §4.1.3, §4.3) checked: how the
//! client authenticates (§2.3.1), and the code or refresh token it redeems,
//! as the gateway sealed them.

use headers::Authorization;
use headers::authorization::Basic;
use mcp_ui_wire::percent::{Plus, percent_decode};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::authorize::Request;
use super::client::{AuthMethod, Client};
use super::params::Params;
use super::{OAuthError, pkce};

/// How a client presented itself at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub client_id: String,
    pub secret: Option<String>,
    pub method: AuthMethod,
}

/// The client of a token request with `form`, and the value of its
/// `Authorization` header if any: HTTP Basic (its parts form-decoded,
/// RFC 6749 §2.3.1), `client_secret` in the form, or `client_id` alone (a
/// public client). More than one way is refused (§2.3).
pub fn presented(authorization: Option<&[u8]>, form: &Params) -> Result<Presented, OAuthError> {
    let invalid_client = |why: &str| OAuthError::new("invalid_client", why);
    let form_id = form.one("client_id")?;
    let form_secret = form.one("client_secret")?;
    let Some(header) = authorization else {
        return match (form_id, form_secret) {
            (Some(id), Some(secret)) => Ok(Presented {
                client_id: id.to_owned(),
                secret: Some(secret.to_owned()),
                method: AuthMethod::ClientSecretPost,
            }),
            (Some(id), None) => Ok(Presented {
                client_id: id.to_owned(),
                secret: None,
                method: AuthMethod::None,
            }),
            (None, _) => Err(invalid_client("the request names no client (`client_id`)")),
        };
    };
    if form_secret.is_some() {
        return Err(OAuthError::request(
            "the client authenticates twice (HTTP Basic and `client_secret`): use one",
        ));
    }
    let value = http::HeaderValue::from_bytes(header)
        .map_err(|_| invalid_client("the Authorization header is not text"))?;
    let basic = <Authorization<Basic> as headers::Header>::decode(&mut std::iter::once(&value))
        .map_err(|_| {
            invalid_client(
                "the token endpoint takes HTTP Basic client authentication (base64 of `id:secret`)",
            )
        })?;
    // RFC 6749 §2.3.1: each part is form-encoded before it is put in Basic.
    let decode = |part: &str, what: &str| {
        percent_decode(part, Plus::Space)
            .utf8()
            .map(|s| s.into_owned())
            .ok_or_else(|| invalid_client(&format!("the Basic credentials' {what} is not UTF-8")))
    };
    let id = decode(basic.0.username(), "client id")?;
    let secret = decode(basic.0.password(), "secret")?;
    if form_id.is_some_and(|f| f != id) {
        return Err(invalid_client(
            "`client_id` differs from the Basic credentials' client",
        ));
    }
    Ok(Presented {
        client_id: id,
        secret: Some(secret),
        method: AuthMethod::ClientSecretBasic,
    })
}

/// Whether `presented` authenticates `client`, whose secret is `secret`
/// (none for a public client): the method it registered, and the secret,
/// compared in constant time. `invalid_client` otherwise.
pub fn authenticate(
    presented: &Presented,
    client: &Client,
    secret: Option<&str>,
) -> Result<(), OAuthError> {
    let method = client.token_endpoint_auth_method;
    if presented.method != method {
        return Err(OAuthError::new(
            "invalid_client",
            format!(
                "the client registered `{}` and authenticated with `{}`",
                method.as_str(),
                presented.method.as_str()
            ),
        ));
    }
    match (method, presented.secret.as_deref(), secret) {
        (AuthMethod::None, _, _) => Ok(()),
        (_, Some(given), Some(expected))
            if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) =>
        {
            Ok(())
        }
        _ => Err(OAuthError::new(
            "invalid_client",
            "the client's secret is wrong",
        )),
    }
}

/// What an authorization code stands for, sealed into the code itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Code {
    /// Its id: a code is redeemed once.
    pub id: String,
    pub request: Request,
    /// The user, as the identity provider names them.
    pub subject: String,
    /// When the user signed in at the identity provider.
    pub auth_time: u64,
    pub expires_at: u64,
    /// The identity provider's tokens for the user, sealed, when an upstream
    /// needs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

/// The `grant_type=authorization_code` request `form` of client
/// `client_id` checked against the code it redeems (OAuth 2.1 §4.1.3).
pub fn redeem_code(
    form: &Params,
    client_id: &str,
    code: &Code,
    now: u64,
) -> Result<(), OAuthError> {
    let grant = |why: &str| OAuthError::new("invalid_grant", why);
    if now >= code.expires_at {
        return Err(grant("the authorization code has expired"));
    }
    if code.request.client_id != client_id {
        return Err(grant("the authorization code was issued to another client"));
    }
    match form.one("redirect_uri")? {
        Some(r) if r != code.request.redirect_uri => {
            return Err(grant(
                "`redirect_uri` is not the one of the authorization request",
            ));
        }
        None if code.request.redirect_uri_sent => {
            return Err(grant(
                "`redirect_uri` is required: the authorization request sent one",
            ));
        }
        _ => {}
    }
    let Some(verifier) = form.one("code_verifier")? else {
        return Err(OAuthError::request("`code_verifier` is missing (PKCE)"));
    };
    if !pkce::verify(verifier, &code.request.code_challenge) {
        return Err(grant("the code verifier does not match the code challenge"));
    }
    same_resource(form, &code.request.resource)
}

/// What a refresh token stands for, sealed into the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refresh {
    /// The id shared by every refresh token descended from one authorization
    /// (one sign-in): the store keeps one entry for it, whatever the number
    /// of rotations.
    pub family: String,
    /// Its place in the family: the first token is 0, each rotation's is one
    /// more. Only the family's latest generation may be redeemed; an older
    /// one is a replay (RFC 9700 §4.14.2).
    pub generation: u64,
    /// The store that keeps its family: a random id of the process whose
    /// memory keeps it, empty for a store the replicas share. Another
    /// process's memory cannot know the family.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub store: String,
    pub client_id: String,
    pub subject: String,
    pub resource: String,
    pub scopes: Vec<String>,
    pub auth_time: u64,
    pub expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

/// The `grant_type=refresh_token` request `form` of client `client_id`
/// checked against the refresh token it redeems; the scopes of the new
/// access token (RFC 6749 §6: at most those first granted).
pub fn redeem_refresh(
    form: &Params,
    client_id: &str,
    refresh: &Refresh,
    now: u64,
) -> Result<Vec<String>, OAuthError> {
    let grant = |why: &str| OAuthError::new("invalid_grant", why);
    if now >= refresh.expires_at {
        return Err(grant("the refresh token has expired"));
    }
    if refresh.client_id != client_id {
        return Err(grant("the refresh token was issued to another client"));
    }
    same_resource(form, &refresh.resource)?;
    match form.one("scope")? {
        None => Ok(refresh.scopes.clone()),
        Some(asked) => {
            let asked: Vec<String> = asked
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            match asked.iter().find(|s| !refresh.scopes.contains(s)) {
                Some(extra) => Err(OAuthError::new(
                    "invalid_scope",
                    format!("`{extra}` was not granted by the authorization this token continues"),
                )),
                None => Ok(asked),
            }
        }
    }
}

/// A token request's `resource`s, if any, must name the resource the grant
/// is for (RFC 8707 §2.2).
pub fn same_resource(form: &Params, granted: &str) -> Result<(), OAuthError> {
    match form.all("resource").as_slice() {
        [] => Ok(()),
        [one] if crate::urls::names_resource(one, granted) => Ok(()),
        [one] => Err(OAuthError::new(
            "invalid_target",
            format!("{one:?} is not the resource this grant is for"),
        )),
        _ => Err(OAuthError::new("invalid_target", "send one `resource`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn code() -> Code {
        Code {
            id: "k1".into(),
            request: Request {
                client_id: "c1".into(),
                redirect_uri: crate::urls::RedirectUri::parse("https://app.example/cb").unwrap(),
                redirect_uri_sent: true,
                state: None,
                code_challenge: CHALLENGE.into(),
                resource: "https://gw.example/notes".into(),
                scopes: vec!["notes:read".into()],
            },
            subject: "alice".into(),
            auth_time: 100,
            expires_at: 200,
            upstream: None,
        }
    }

    fn form(s: &str) -> Params {
        Params::parse(s.as_bytes())
    }

    #[test]
    fn clients_present_themselves_one_way() {
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("c%3A1:s%26x")
        );
        let p = presented(Some(basic.as_bytes()), &form("grant_type=x")).unwrap();
        assert_eq!(
            (p.client_id.as_str(), p.secret.as_deref(), p.method),
            ("c:1", Some("s&x"), AuthMethod::ClientSecretBasic)
        );
        assert!(presented(Some(basic.as_bytes()), &form("client_secret=s")).is_err());
        // The scheme in any case; `+` is a space and a raw `&` is itself (form
        // decoding of one value, not of a query); a secret with `:` is kept whole.
        let basic = |plain: &str, scheme: &str| {
            let b = format!(
                "{scheme} {}",
                base64::engine::general_purpose::STANDARD.encode(plain)
            );
            presented(Some(b.as_bytes()), &form("grant_type=x"))
        };
        let p = basic("a&b+c:s:t%3D", "bAsIc").unwrap();
        assert_eq!(
            (p.client_id.as_str(), p.secret.as_deref()),
            ("a&b c", Some("s:t="))
        );
        for (plain, scheme) in [("no-colon", "Basic"), ("c:s", "Bearer"), ("c:%FF", "Basic")] {
            assert_eq!(
                basic(plain, scheme).unwrap_err().error,
                "invalid_client",
                "{scheme} {plain}"
            );
        }
        assert_eq!(
            presented(Some(b"Basic !!!"), &form("grant_type=x"))
                .unwrap_err()
                .error,
            "invalid_client"
        );
        let post = presented(None, &form("client_id=c1&client_secret=s")).unwrap();
        assert_eq!(post.method, AuthMethod::ClientSecretPost);
        assert_eq!(
            presented(None, &form("client_id=c1")).unwrap().method,
            AuthMethod::None
        );
        assert_eq!(
            presented(None, &form("grant_type=x")).unwrap_err().error,
            "invalid_client"
        );
        let client = Client {
            redirect_uris: vec![],
            client_name: None,
            client_uri: None,
            token_endpoint_auth_method: AuthMethod::ClientSecretPost,
            refresh: false,
            scope: None,
        };
        assert!(authenticate(&post, &client, Some("s")).is_ok());
        assert_eq!(
            authenticate(&post, &client, Some("t")).unwrap_err().error,
            "invalid_client"
        );
        assert_eq!(
            authenticate(&p, &client, Some("s&x")).unwrap_err().error,
            "invalid_client"
        );
    }

    #[test]
    fn a_code_is_redeemed_by_its_client_with_its_verifier_for_its_resource() {
        let ok = format!("redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier={VERIFIER}");
        assert_eq!(redeem_code(&form(&ok), "c1", &code(), 150), Ok(()));
        let err = |f: &str, client: &str, now: u64| {
            redeem_code(&form(f), client, &code(), now)
                .unwrap_err()
                .error
        };
        assert_eq!(err(&ok, "c1", 200), "invalid_grant");
        assert_eq!(err(&ok, "c2", 150), "invalid_grant");
        assert_eq!(
            err(&ok.replace("app.example", "evil.example"), "c1", 150),
            "invalid_grant"
        );
        assert_eq!(
            err(&format!("code_verifier={VERIFIER}"), "c1", 150),
            "invalid_grant"
        );
        assert_eq!(err(&ok.replace("Xk", "Xj"), "c1", 150), "invalid_grant");
        assert_eq!(
            err(
                &format!("{ok}&resource=https%3A%2F%2Fgw.example%2Fother"),
                "c1",
                150
            ),
            "invalid_target"
        );
        assert_eq!(
            redeem_code(
                &form(&format!("{ok}&resource=https%3A%2F%2Fgw.example%2Fnotes")),
                "c1",
                &code(),
                150
            ),
            Ok(())
        );
    }

    #[test]
    fn a_refresh_keeps_to_its_grant() {
        let r = Refresh {
            family: "f1".into(),
            generation: 0,
            store: String::new(),
            client_id: "c1".into(),
            subject: "alice".into(),
            resource: "https://gw.example/notes".into(),
            scopes: vec!["notes:read".into(), "notes:write".into()],
            auth_time: 1,
            expires_at: 1000,
            upstream: None,
        };
        assert_eq!(redeem_refresh(&form(""), "c1", &r, 10).unwrap().len(), 2);
        assert_eq!(
            redeem_refresh(&form("scope=notes:read"), "c1", &r, 10).unwrap(),
            ["notes:read"]
        );
        assert_eq!(
            redeem_refresh(&form("scope=admin"), "c1", &r, 10)
                .unwrap_err()
                .error,
            "invalid_scope"
        );
        assert_eq!(
            redeem_refresh(&form(""), "c2", &r, 10).unwrap_err().error,
            "invalid_grant"
        );
        assert_eq!(
            redeem_refresh(&form(""), "c1", &r, 1000).unwrap_err().error,
            "invalid_grant"
        );
    }
}
