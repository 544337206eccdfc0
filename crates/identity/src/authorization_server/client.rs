//! A client of the gateway's authorization server: registered by RFC 7591
//! (the registration sealed into its `client_id`, so that every replica knows
//! it and nothing is stored), or named by the HTTPS URL of its Client ID
//! Metadata Document; and the redirect URIs a client may use (OAuth 2.1
//! §2.3.1, RFC 8252 §7), parsed as a browser parses them
//! ([`crate::urls::RedirectUri`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::OAuthError;
use crate::urls::{self, RedirectUri, Url};

/// How a client proves itself at the token endpoint (RFC 7591 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: PKCE only.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
        }
    }

    /// Every method the gateway supports, as its metadata lists them.
    pub const ALL: [AuthMethod; 3] = [
        AuthMethod::None,
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
    ];
}

/// What the gateway knows of a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub redirect_uris: Vec<RedirectUri>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    pub token_endpoint_auth_method: AuthMethod,
    /// Whether it may redeem refresh tokens (`grant_types` lists
    /// `refresh_token`).
    pub refresh: bool,
    /// The scopes it registered for (RFC 7591 §2 `scope`), if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Bounds on a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_redirect_uris: usize,
    /// The longest redirect URI, client name or client URI.
    pub max_text: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_redirect_uris: 10,
            max_text: 2048,
        }
    }
}

/// A registration request's metadata (RFC 7591 §2) read as a client, or the
/// `invalid_redirect_uri` / `invalid_client_metadata` error refusing it
/// (§3.2.2). Fields the gateway does not use are ignored; those it does are
/// held to what it supports.
pub fn register(metadata: &Value, limits: &Limits) -> Result<Client, OAuthError> {
    let Some(m) = metadata.as_object() else {
        return Err(metadata_error("the registration is not a JSON object"));
    };
    read(m, limits, false)
}

/// A Client ID Metadata Document fetched from `url` read as a client: its
/// `client_id` must be `url` exactly, and a client known only by a URL is
/// public (`none`): it has no secret, and `private_key_jwt` is not
/// supported.
pub fn from_metadata_document(
    url: &str,
    doc: &Value,
    limits: &Limits,
) -> Result<Client, OAuthError> {
    let Some(m) = doc.as_object() else {
        return Err(metadata_error(
            "the client metadata document is not a JSON object",
        ));
    };
    if m.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(metadata_error(
            "the client metadata document's client_id is not the URL it was fetched from",
        ));
    }
    for secret in ["client_secret", "client_secret_expires_at"] {
        if m.contains_key(secret) {
            return Err(metadata_error(format!(
                "a client metadata document may not carry `{secret}`"
            )));
        }
    }
    read(m, limits, true)
}

fn read(m: &Map<String, Value>, limits: &Limits, document: bool) -> Result<Client, OAuthError> {
    let redirect_uris = redirect_uris(m, limits)?;
    let method = auth_method(m, limits, document)?;
    let grant_types = grant_types(m)?;
    if let Some(types) = strings(m, "response_types")?
        && types.iter().any(|t| t != "code")
    {
        return Err(metadata_error("only the response type `code` is supported"));
    }
    let scope = text(m, limits, "scope")?;
    if let Some(s) = &scope
        && !s.split(' ').all(super::is_scope_token)
    {
        return Err(metadata_error("`scope` is not a list of scope tokens"));
    }
    let client_uri = text(m, limits, "client_uri")?;
    if let Some(u) = &client_uri
        && !Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "https" | "http"))
    {
        return Err(metadata_error("`client_uri` is not an http(s) URL"));
    }
    Ok(Client {
        redirect_uris,
        client_name: text(m, limits, "client_name")?,
        client_uri,
        token_endpoint_auth_method: method,
        refresh: grant_types.iter().any(|g| g == "refresh_token"),
        scope,
    })
}

/// The string member `name` of `m`, if any, at most `limits.max_text` bytes.
fn text(m: &Map<String, Value>, limits: &Limits, name: &str) -> Result<Option<String>, OAuthError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= limits.max_text => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(metadata_error(format!(
            "`{name}` is longer than {} bytes",
            limits.max_text
        ))),
        Some(_) => Err(metadata_error(format!("`{name}` is not a string"))),
    }
}

/// The member `name` of `m`, if any, an array of strings.
fn strings(m: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(all)) => all
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| metadata_error(format!("`{name}` is not an array of strings"))),
        Some(_) => Err(metadata_error(format!("`{name}` is not an array"))),
    }
}

/// `redirect_uris`: at least one, at most `limits.max_redirect_uris`, each
/// a [`RedirectUri`] of at most `limits.max_text` bytes.
fn redirect_uris(m: &Map<String, Value>, limits: &Limits) -> Result<Vec<RedirectUri>, OAuthError> {
    let redirect_uris = strings(m, "redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            "`redirect_uris` is missing or empty (the authorization code flow needs one)",
        ));
    }
    if redirect_uris.len() > limits.max_redirect_uris {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("more than {} redirect URIs", limits.max_redirect_uris),
        ));
    }
    redirect_uris
        .iter()
        .map(|uri| {
            if uri.len() > limits.max_text {
                return Err(OAuthError::new(
                    "invalid_redirect_uri",
                    format!("a redirect URI is longer than {} bytes", limits.max_text),
                ));
            }
            RedirectUri::parse(uri)
                .map_err(|why| OAuthError::new("invalid_redirect_uri", format!("{uri:?}: {why}")))
        })
        .collect()
}

/// `token_endpoint_auth_method`: one the gateway supports; a document's
/// client is public.
fn auth_method(
    m: &Map<String, Value>,
    limits: &Limits,
    document: bool,
) -> Result<AuthMethod, OAuthError> {
    Ok(
        match text(m, limits, "token_endpoint_auth_method")?.as_deref() {
            // RFC 7591 §2: the default is client_secret_basic; a document's client
            // is public.
            None if document => AuthMethod::None,
            None => AuthMethod::ClientSecretBasic,
            Some("none") => AuthMethod::None,
            Some("client_secret_basic") if !document => AuthMethod::ClientSecretBasic,
            Some("client_secret_post") if !document => AuthMethod::ClientSecretPost,
            Some(other) => {
                return Err(metadata_error(format!(
                    "token_endpoint_auth_method `{other}` is not supported{}",
                    if document {
                        " for a client known by its metadata document (only `none`)"
                    } else {
                        " (none, client_secret_basic, client_secret_post)"
                    }
                )));
            }
        },
    )
}

/// `grant_types`: those the gateway supports, the authorization code among
/// them (the default).
fn grant_types(m: &Map<String, Value>) -> Result<Vec<String>, OAuthError> {
    let grant_types =
        strings(m, "grant_types")?.unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    // A client redeeming enterprise assertions registers the JWT bearer
    // grant too; which clients may is the configuration's
    // (`enterprise_issuers.clients`), not the registration's.
    if let Some(other) = grant_types.iter().find(|g| {
        !matches!(
            g.as_str(),
            "authorization_code" | "refresh_token" | super::assertion::GRANT_TYPE
        )
    }) {
        return Err(metadata_error(format!(
            "grant type `{other}` is not supported (authorization_code, refresh_token, {})",
            super::assertion::GRANT_TYPE
        )));
    }
    if !grant_types.iter().any(|g| g == "authorization_code") {
        return Err(metadata_error(
            "`grant_types` must include authorization_code",
        ));
    }
    Ok(grant_types)
}

fn metadata_error(why: impl Into<String>) -> OAuthError {
    OAuthError::new("invalid_client_metadata", why)
}

/// The redirect URI of `client` that `asked` may stand for
/// ([`RedirectUri::admits`]: exactly, or on any port of a loopback IP
/// literal).
pub fn matches_redirect<'a>(client: &'a Client, asked: &RedirectUri) -> Option<&'a RedirectUri> {
    client.redirect_uris.iter().find(|r| r.admits(asked))
}

/// Whether `client_id` names its client by a URL (a Client ID Metadata
/// Document's, to be held to [`metadata_document_url`]) rather than by a
/// registration sealed into it: whether it parses as an absolute URL. A
/// sealed id (base64url text) never does.
pub fn names_a_document(client_id: &str) -> bool {
    Url::parse(client_id).is_ok()
}

/// `client_id` as a Client ID Metadata Document URL the gateway may fetch
/// ([`urls::client_id_url`]): the URL fetched.
pub fn metadata_document_url(client_id: &str) -> Result<Url, urls::UrlError> {
    urls::client_id_url(client_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redirect_uris_are_https_loopback_or_an_apps_own_scheme() {
        for ok in [
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418/callback",
            "http://localhost:6274/oauth/callback",
            "http://[::1]/cb",
            "com.example.app:/oauth2redirect",
            "cursor.app://callback",
        ] {
            assert_eq!(
                RedirectUri::parse(ok).map(|r| r.to_string()).as_deref(),
                Ok(ok)
            );
        }
        for bad in [
            "http://evil.example.com/cb",
            "https://example.com/cb#frag",
            "javascript:alert(1)",
            "data:text/html,hi",
            "https://user@example.com/cb",
            "/relative",
            "https:///nohost",
            "http://127.0.0.1.evil.com/cb",
            "http://127.0.0.1:1@evil.example/callback",
            "http://127.0.0.1:5555\\@evil.example/callback",
        ] {
            assert!(RedirectUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_loopback_redirect_matches_on_any_port_and_nothing_else_is_loose() {
        let c = register(
            &json!({"redirect_uris": ["http://127.0.0.1/callback", "https://app.example.com/cb"], "token_endpoint_auth_method": "none"}),
            &Limits::default(),
        )
        .unwrap();
        let matches_redirect = |c: &Client, asked: &str| {
            RedirectUri::parse(asked)
                .ok()
                .and_then(|a| matches_redirect(c, &a).cloned())
        };
        assert!(matches_redirect(&c, "http://127.0.0.1:5555/callback").is_some());
        assert!(matches_redirect(&c, "http://127.0.0.1:1@evil.example/callback").is_none());
        assert!(matches_redirect(&c, "http://127.0.0.1:5555\\@evil.example/callback").is_none());
        assert!(matches_redirect(&c, "http://127.0.0.1:5555/other").is_none());
        assert!(matches_redirect(&c, "https://app.example.com/cb").is_some());
        assert!(matches_redirect(&c, "https://app.example.com/cb/").is_none());
        assert!(matches_redirect(&c, "https://app.example.com:444/cb").is_none());
        assert!(matches_redirect(&c, "http://localhost:5555/callback").is_none());
    }

    #[test]
    fn registrations_are_held_to_what_is_supported() {
        let limits = Limits::default();
        let c = register(
            &json!({"redirect_uris": ["https://a.example/cb"], "client_name": "A", "grant_types": ["authorization_code", "refresh_token"], "unknown": 1}),
            &limits,
        )
        .unwrap();
        assert_eq!(c.token_endpoint_auth_method, AuthMethod::ClientSecretBasic);
        assert!(c.refresh);
        let err = |v: Value| register(&v, &limits).unwrap_err().error;
        assert_eq!(err(json!({})), "invalid_redirect_uri");
        assert_eq!(
            err(json!({"redirect_uris": ["http://a.example/cb"]})),
            "invalid_redirect_uri"
        );
        let many: Vec<String> = (0..11).map(|i| format!("https://a.example/{i}")).collect();
        assert_eq!(err(json!({"redirect_uris": many})), "invalid_redirect_uri");
        let uri = ["https://a.example/cb"];
        assert_eq!(
            err(json!({"redirect_uris": uri, "grant_types": ["client_credentials"]})),
            "invalid_client_metadata"
        );
        assert_eq!(
            err(json!({"redirect_uris": uri, "token_endpoint_auth_method": "private_key_jwt"})),
            "invalid_client_metadata"
        );
        assert_eq!(
            err(json!({"redirect_uris": uri, "response_types": ["token"]})),
            "invalid_client_metadata"
        );
        assert_eq!(
            err(json!({"redirect_uris": uri, "client_name": "x".repeat(3000)})),
            "invalid_client_metadata"
        );
        assert_eq!(err(json!([1])), "invalid_client_metadata");
    }

    #[test]
    fn a_metadata_document_names_itself_and_is_public() {
        let url = "https://app.example.com/oauth/client.json";
        let limits = Limits::default();
        let doc = json!({"client_id": url, "client_name": "App", "redirect_uris": ["https://app.example.com/cb"]});
        let c = from_metadata_document(url, &doc, &limits).unwrap();
        assert_eq!(c.token_endpoint_auth_method, AuthMethod::None);
        let other = json!({"client_id": "https://evil.example/c.json", "redirect_uris": ["https://app.example.com/cb"]});
        assert!(from_metadata_document(url, &other, &limits).is_err());
        let secret = json!({"client_id": url, "client_secret": "s", "redirect_uris": ["https://app.example.com/cb"]});
        assert!(from_metadata_document(url, &secret, &limits).is_err());
        assert_eq!(
            metadata_document_url(url).map(String::from).as_deref(),
            Ok(url)
        );
        for bad in [
            "http://app.example.com/c.json",
            "https://app.example.com",
            "https://app.example.com/",
            "https://app.example.com/a/../c.json",
            "https://u@app.example.com/c.json",
            "https://app.example.com/c.json#x",
        ] {
            assert!(metadata_document_url(bad).is_err(), "{bad}");
        }
    }
}
