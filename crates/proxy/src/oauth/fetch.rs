//! What the gateway asks identity providers over HTTP, in every OAuth role:
//! an issuer's metadata (RFC 8414, then OpenID Connect Discovery), its key
//! set, token introspection (RFC 7662), a provider's token and user-info
//! endpoints. Every URL was read once by the WHATWG parser
//! (`config::auth::issuer_url`, for the configuration and for every
//! endpoint a metadata document names), and the request goes where that
//! parse says: it is built from the parsed parts, never from the text read
//! again by another parser. Every answer is bounded in time and size
//! ([`mcp_ui_model::body`]); each provider is trusted by its own `ca_file`, or by
//! the system's roots.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{Map, Value};
use url::Url;

use mcp_ui_model::outcome::Side;
use mcp_ui_upstream::upstream::client::{Client, client_trusting, send};

/// Each request to a provider, and its answer, within this long.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read.
pub const MAX_BYTES: usize = 1024 * 1024;

/// An HTTP client for identity providers.
#[derive(Clone)]
pub struct Fetcher {
    client: Client,
}

/// The name a provider's requests go by in the client (its TLS settings,
/// its errors): its issuer, or the URL it is known by.
fn peer_name(anchor: &str) -> String {
    format!("auth:{anchor}")
}

/// How a request authenticates the gateway's client (RFC 6749 §2.3.1).
pub enum ClientAuth<'a> {
    None,
    /// HTTP Basic, each part form-encoded first.
    Basic {
        id: &'a str,
        secret: &'a str,
    },
    /// A bearer token (the user info endpoint).
    Bearer(&'a str),
}

impl Fetcher {
    /// A client trusting, for each provider (`anchor`, as later requests
    /// name it), its `ca_file` where one is given.
    pub fn new<'a>(
        connect_timeout: Duration,
        trusted: impl IntoIterator<Item = (&'a str, &'a PathBuf)>,
    ) -> Result<Fetcher, Vec<String>> {
        let settings: Vec<(&str, String, mcp_ui_model::tls::UpstreamTls)> = trusted
            .into_iter()
            .map(|(anchor, ca)| {
                let tls = mcp_ui_model::tls::UpstreamTls::trusting(ca.clone());
                (anchor, peer_name(anchor), tls)
            })
            .collect();
        let peers = settings.iter().map(|(anchor, name, tls)| {
            (
                format!("the identity provider {anchor}"),
                name.as_str(),
                tls,
            )
        });
        Ok(Fetcher {
            client: client_trusting(connect_timeout, peers)?,
        })
    }

    /// The JSON document at `url`, of the provider known as `anchor`.
    pub(crate) async fn get(
        &self,
        anchor: &str,
        url: &Url,
        auth: ClientAuth<'_>,
    ) -> Result<Value, String> {
        self.ask(anchor, Method::GET, url, None, auth).await
    }

    /// The JSON answer to the form `pairs` posted to `url`.
    pub(crate) async fn post_form(
        &self,
        anchor: &str,
        url: &Url,
        pairs: &[(&str, &str)],
        auth: ClientAuth<'_>,
    ) -> Result<Value, String> {
        let form = mcp_ui_identity::authorization_server::params::encode(pairs.iter().copied());
        self.ask(anchor, Method::POST, url, Some(form), auth).await
    }

    async fn ask(
        &self,
        anchor: &str,
        method: Method,
        url: &Url,
        form: Option<String>,
        auth: ClientAuth<'_>,
    ) -> Result<Value, String> {
        let uri = uri_of(url)?;
        let post = form.is_some();
        let mut req = Request::new(Full::new(form.map(Bytes::from).unwrap_or_default()));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        let h = req.headers_mut();
        if post {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
        }
        // GitHub answers its token endpoint form-encoded unless asked for
        // JSON, and its API refuses requests without a user agent.
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        h.insert(
            header::USER_AGENT,
            HeaderValue::from_static(concat!("mcp-ui-gateway/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(mut v) = authorization(&auth) {
            // Debug output of a sensitive value (and HPACK indexing) hides it.
            v.set_sensitive(true);
            h.insert(header::AUTHORIZATION, v);
        }
        let resp = send(&self.client, &peer_name(anchor), req, TIMEOUT)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status();
        let bounds = mcp_ui_model::body::Bounds::within(MAX_BYTES, TIMEOUT);
        let body = mcp_ui_model::body::read(resp.into_body(), bounds)
            .await
            .map_err(|cut| format!("{url}: {cut}"))?;
        if !status.is_success() {
            // A refusal names its OAuth error (RFC 6749 §5.2), for the log.
            let error = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| Some(v.get("error")?.as_str()?.chars().take(64).collect()))
                .map_or(String::new(), |e: String| format!(" ({e})"));
            return Err(format!("{url}: answered {status}{error}"));
        }
        serde_json::from_slice(&body).map_err(|_| format!("{url}: not JSON"))
    }

    /// The metadata of the issuer `issuer` (known as `anchor`): the first of
    /// [`metadata_urls`] that answers a document naming exactly this issuer
    /// (RFC 8414 §3.3, OpenID Connect Discovery §4.3).
    pub async fn discover(
        &self,
        anchor: &str,
        issuer: &str,
    ) -> Result<(Url, Map<String, Value>), DiscoveryError> {
        let parsed = mcp_ui_model::config::auth::issuer_url(issuer).map_err(|why| {
            DiscoveryError::NotAnIssuer {
                issuer: issuer.to_owned(),
                why: why.to_string(),
            }
        })?;
        let mut tried = Vec::new();
        for url in metadata_urls(&parsed) {
            match self.get(anchor, &url, ClientAuth::None).await {
                Ok(Value::Object(doc))
                    if doc.get("issuer").and_then(Value::as_str) == Some(issuer) =>
                {
                    return Ok((url, doc));
                }
                Ok(_) => tried.push(format!("{url}: names another issuer")),
                Err(why) => tried.push(why),
            }
        }
        Err(DiscoveryError::NotFound {
            issuer: issuer.to_owned(),
            tried,
        })
    }
}

/// Why an issuer's metadata was not found. It reaches a client as the
/// gateway's failure to check its token or sign it in, never as the
/// client's: [`DiscoveryError::side`] says whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryError {
    /// The issuer is not a URL an issuer may have: the operator's
    /// configuration, counted as the gateway's.
    NotAnIssuer { issuer: String, why: String },
    /// No metadata URL answered a document of this issuer: what each one
    /// tried answered, in order.
    NotFound { issuer: String, tried: Vec<String> },
}

impl DiscoveryError {
    /// Whose fault it is: the gateway's configuration, or the issuer that
    /// did not answer.
    pub fn side(&self) -> Side {
        match self {
            DiscoveryError::NotAnIssuer { .. } => Side::Gateway,
            DiscoveryError::NotFound { .. } => Side::Upstream,
        }
    }
}

impl std::fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiscoveryError::NotAnIssuer { issuer, why } => write!(f, "the issuer {issuer:?} {why}"),
            DiscoveryError::NotFound { issuer, tried } => write!(
                f,
                "no metadata of the issuer {issuer} was found ({})",
                tried.join("; ")
            ),
        }
    }
}

impl std::error::Error for DiscoveryError {}

/// The `Authorization` value of `auth`, if any.
fn authorization(auth: &ClientAuth<'_>) -> Option<HeaderValue> {
    use base64::Engine as _;
    let text = match auth {
        ClientAuth::None => return None,
        ClientAuth::Basic { id, secret } => {
            // RFC 6749 §2.3.1: each part form-encoded, then joined.
            let enc = |s: &str| {
                mcp_ui_identity::authorization_server::params::encode([("x", s)])[2..].to_owned()
            };
            let pair = format!("{}:{}", enc(id), enc(secret));
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        }
        ClientAuth::Bearer(token) => format!("Bearer {token}"),
    };
    HeaderValue::from_str(&text).ok()
}

/// The request target of `url`, built from the parts the WHATWG parser
/// found: scheme, host (an IPv6 address in brackets), an explicit port, and
/// the path with its query.
pub(crate) fn uri_of(url: &Url) -> Result<http::Uri, String> {
    let host = url.host_str().ok_or_else(|| format!("{url}: no host"))?;
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    http::Uri::builder()
        .scheme(url.scheme())
        .authority(authority)
        .path_and_query(path)
        .build()
        .map_err(|e| format!("{url}: {e}"))
}

/// The endpoint `key` of a metadata document `doc`, when it is a URL an
/// authorization server's endpoint may be (`config::auth::issuer_url`).
pub fn endpoint(doc: &Map<String, Value>, key: &str) -> Option<Url> {
    let text = doc.get(key)?.as_str()?;
    mcp_ui_model::config::auth::issuer_url(text).ok()
}

/// The metadata URLs of `issuer`, in the order they are tried: RFC 8414's
/// (the well-known path inserted before the issuer's path), then OpenID
/// Connect Discovery's inserted the same way, then appended to it.
pub fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |well_known: &str, path: &str| {
        let mut u = issuer.clone();
        u.set_path(&format!("{well_known}{path}"));
        u.set_query(None);
        u
    };
    let all = [
        at("/.well-known/oauth-authorization-server", path),
        at("/.well-known/openid-configuration", path),
        at("", &format!("{path}/.well-known/openid-configuration")),
    ];
    let mut unique: Vec<Url> = Vec::new();
    for u in all {
        if !unique.contains(&u) {
            unique.push(u);
        }
    }
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        metadata_urls(&Url::parse(issuer).unwrap())
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_put_it() {
        assert_eq!(
            urls("https://login.example.com"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://login.example.com/tenant/1/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://login.example.com/.well-known/openid-configuration/tenant/1",
                "https://login.example.com/tenant/1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_request_goes_where_the_parser_read_the_url() {
        let uri = |u: &str| uri_of(&Url::parse(u).unwrap()).unwrap().to_string();
        assert_eq!(
            uri("https://idp.example:8443/a/token?x=1"),
            "https://idp.example:8443/a/token?x=1"
        );
        assert_eq!(uri("http://[::1]:9/t"), "http://[::1]:9/t");
        assert_eq!(uri("https://IDP.example:443/t"), "https://idp.example/t");
    }
}
