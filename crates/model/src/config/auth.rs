//! `[auth]`: the gateway as an OAuth 2.1 resource server for servers that
//! have none. Set at the top level for every mount and app, and per
//! `[[upstream]]` or `[[app]]` (`auth = { … }` overriding what it sets,
//! `auth = false` for a public endpoint):
//!
//! ```toml
//! [auth]
//! issuer = "https://login.example.com/"   # discovered: OpenID Connect, else RFC 8414
//! scopes = ["mcp"]                          # every request needs them
//! ```

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[auth]` as written (at the top level, or a mount's or app's table).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The authorization server whose tokens are accepted, as its metadata
    /// names itself (`https://`, or `http://` on a loopback address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The audience tokens must name. Default: the endpoint's resource URL
    /// (`public_url` and its path, RFC 8707), which is what clients ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Signature algorithms accepted. Default: RS256, RS384, RS512, PS256,
    /// PS384, PS512, ES256, ES384, EdDSA. `none` and the HMAC ones are
    /// refused: a key set is public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithms: Option<Vec<String>>,
    /// Clock skew tolerated on a token's times. Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_secs: Option<u64>,
    /// Scopes every request needs (and that the endpoint's metadata and
    /// challenges ask for). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Opaque tokens are checked by the issuer's RFC 7662 introspection
    /// endpoint, with this client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<IntrospectionConfig>,
    /// Let a caller without a token in: `initialize`, the listings, the
    /// widgets and the tools whose overlay lists `noauth` among their
    /// `security_schemes` (ChatGPT's mixed auth); every other request is
    /// challenged. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<bool>,
    /// Requests a minute each caller (a verified subject; callers without a
    /// token together) may send to an endpoint; past it, 429 with
    /// `Retry-After`. Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// Headers the upstream gets with the verified caller's claims, header
    /// name to claim name (`{ "x-user" = "sub", "x-email" = "email" }`); a
    /// client's own header of such a name never reaches the upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims_to_headers: Option<std::collections::BTreeMap<String, String>>,
    /// For a stdio upstream with `sessions = "conversation"`: environment
    /// variables of each caller's own process, variable to claim name
    /// (`{ MCP_USER = "sub" }`): a single-user server knows its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims_to_env: Option<std::collections::BTreeMap<String, String>>,
    /// Log each verified caller (issuer, subject, client) with its request
    /// id, at `info`. Default false: logs name no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_callers: Option<bool>,
    /// Pass the client's token on to the upstream. Default false: a token
    /// is for the gateway's audience, and an upstream that is no resource of
    /// that audience must not get it (no token passthrough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_token: Option<bool>,
    /// A PEM bundle of the certificate authorities to trust for the issuer
    /// instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// The client the gateway introspects opaque tokens with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionConfig {
    pub client_id: String,
    /// The secret, written here (prefer `client_secret_env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The environment variable holding the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The endpoint. Default: the issuer metadata's `introspection_endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Introspection calls a minute to the issuer, whichever endpoint asks
    /// (a token already answered costs none); past it a token the gateway
    /// has no answer for gets 503 with `Retry-After`. Default
    /// [`INTROSPECTION_CALLS_PER_MINUTE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_minute: Option<u32>,
    /// Introspection calls to the issuer in progress at once; the others
    /// wait their turn (at most a few seconds, then 503). Default
    /// [`INTROSPECTION_MAX_CONCURRENT_CALLS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_calls: Option<u32>,
}

/// Introspection calls a minute to one issuer, when `calls_per_minute` is
/// unset: ten a second, in bursts of up to a minute's worth.
pub const INTROSPECTION_CALLS_PER_MINUTE: u32 = 600;
/// Introspection calls to one issuer at once, when `max_concurrent_calls`
/// is unset.
pub const INTROSPECTION_MAX_CONCURRENT_CALLS: u32 = 8;

/// A mount's or app's `auth`: `false` (public), or a table over `[auth]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AuthSetting {
    /// `auth = false`: anyone may call; `auth = true`: as `[auth]` says.
    Enabled(bool),
    /// What it sets overrides `[auth]`.
    Table(Box<AuthConfig>),
}

/// What an endpoint requires of its callers, every rule checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub issuer: String,
    /// `None`: the endpoint's resource URL.
    pub audience: Option<String>,
    /// The accepted algorithms' names (`RS256`, …; none symmetric).
    pub algorithms: Vec<String>,
    pub leeway_secs: u64,
    pub scopes: Vec<String>,
    pub introspection: Option<Introspection>,
    pub anonymous: bool,
    pub requests_per_minute: Option<u32>,
    /// Header to claim name.
    pub claims_to_headers: Vec<(http::HeaderName, String)>,
    /// Environment variable to claim name.
    pub claims_to_env: Vec<(String, String)>,
    pub log_callers: bool,
    pub forward_token: bool,
    pub ca_file: Option<PathBuf>,
}

impl Auth {
    /// Whether it passes the provider's token for the user on
    /// ([`PROVIDER_ACCESS_TOKEN`]).
    pub fn wants_provider_token(&self) -> bool {
        self.claims_to_headers
            .iter()
            .map(|(_, c)| c)
            .chain(self.claims_to_env.iter().map(|(_, c)| c))
            .any(|c| c == PROVIDER_ACCESS_TOKEN)
    }
}

/// The introspection client, its secret read, and the bounds on its calls.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    pub client_id: String,
    pub client_secret: String,
    pub endpoint: Option<String>,
    pub calls_per_minute: u32,
    pub max_concurrent_calls: u32,
}

impl std::fmt::Debug for Introspection {
    // The secret is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("client_id", &self.client_id)
            .field("endpoint", &self.endpoint)
            .field("calls_per_minute", &self.calls_per_minute)
            .field("max_concurrent_calls", &self.max_concurrent_calls)
            .finish_non_exhaustive()
    }
}

/// The pseudo-claim naming the user's access token at the identity provider
/// the gateway signed them in with (`[authorization_server]`): mapped by
/// `claims_to_headers` or `claims_to_env`, it reaches the upstream, which
/// then acts as that user at the provider. It is the only claim that may be
/// put in `authorization` (as `Bearer …`).
pub const PROVIDER_ACCESS_TOKEN: &str = "provider_access_token";

/// Headers a claim may not be put in: the protocol's and the gateway's own.
const RESERVED_HEADERS: [&str; 12] = [
    "authorization",
    "host",
    "content-type",
    "content-length",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "traceparent",
    "tracestate",
];

/// The algorithms accepted when none are named.
pub const DEFAULT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// What `own` (a mount's or app's `auth`, at `at`) and the top-level
/// `[auth]` make of an endpoint's auth: `None` for a public one. Every
/// problem names its field.
///
/// `own_issuer` is the gateway's own issuer when it is an authorization
/// server (`[authorization_server]`): the issuer of an endpoint that names
/// none. It is `public_url`, checked (and reported, when wrong or missing)
/// as `public_url`, so an endpoint taking it is not held to it again: its
/// `issuer` is not what the operator would have to correct.
pub fn resolve(
    top: Option<&AuthConfig>,
    own: Option<&AuthSetting>,
    at: &str,
    own_issuer: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Auth>, Vec<String>> {
    let merged = match (top, own) {
        (_, Some(AuthSetting::Enabled(false))) | (None, None) => return Ok(None),
        (None, Some(AuthSetting::Enabled(true))) if own_issuer.is_none() => {
            return Err(vec![format!(
                "{at}auth: `true` needs an [auth] table with an issuer"
            )]);
        }
        (None, Some(AuthSetting::Enabled(true))) => AuthConfig::default(),
        (Some(top), None | Some(AuthSetting::Enabled(true))) => top.clone(),
        (top, Some(AuthSetting::Table(own))) => over(top.cloned().unwrap_or_default(), own),
    };
    let field = |name: &str| format!("{at}auth.{name}");
    let mut problems = Vec::new();
    let issuer = match (merged.issuer.as_deref(), own_issuer) {
        (None, None) => {
            problems.push(format!(
                "{}: missing (the authorization server whose tokens are accepted)",
                field("issuer")
            ));
            String::new()
        }
        (None, Some(own)) => own.to_owned(),
        (Some(i), _) => {
            if let Err(why) = issuer_url(i) {
                problems.push(format!("{}: \"{i}\" {why}", field("issuer")));
            }
            i.to_owned()
        }
    };
    let algorithms = merged
        .algorithms
        .unwrap_or_else(|| DEFAULT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect());
    if algorithms.is_empty() {
        problems.push(format!("{}: empty; name at least one", field("algorithms")));
    }
    for a in &algorithms {
        if a.eq_ignore_ascii_case("none") || a.to_ascii_uppercase().starts_with("HS") {
            problems.push(format!(
                "{}: \"{a}\" is refused: a token must be signed with the issuer's private key (the key set is public)",
                field("algorithms")
            ));
        } else if !DEFAULT_ALGORITHMS.contains(&a.as_str()) {
            problems.push(format!(
                "{}: \"{a}\" is not one of {}",
                field("algorithms"),
                DEFAULT_ALGORITHMS.join(", ")
            ));
        }
    }
    let mut claims_to_headers = Vec::new();
    for (h, claim) in merged.claims_to_headers.clone().unwrap_or_default() {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) if name == http::header::AUTHORIZATION && claim == PROVIDER_ACCESS_TOKEN => {
                if merged.forward_token == Some(true) {
                    problems.push(format!(
                        "{}: \"authorization\" carries the provider's token, so the client's cannot be forwarded too (forward_token)",
                        field("claims_to_headers")
                    ));
                }
                claims_to_headers.push((name, claim));
            }
            Ok(name) if RESERVED_HEADERS.contains(&name.as_str()) => problems.push(format!(
                "{}: \"{h}\" is a header the gateway or the protocol sets itself",
                field("claims_to_headers")
            )),
            Ok(name) if !claim.is_empty() => claims_to_headers.push((name, claim)),
            _ => problems.push(format!(
                "{}: \"{h}\" = \"{claim}\" is not a header name and a claim name",
                field("claims_to_headers")
            )),
        }
    }
    let mut claims_to_env = Vec::new();
    for (var, claim) in merged.claims_to_env.clone().unwrap_or_default() {
        let ok = var
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
            && var
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            && !claim.is_empty();
        match ok {
            true => claims_to_env.push((var, claim)),
            false => problems.push(format!(
                "{}: \"{var}\" = \"{claim}\" is not an environment variable (A-Z, 0-9, _) and a claim name",
                field("claims_to_env")
            )),
        }
    }
    if merged.requests_per_minute == Some(0) {
        problems.push(format!(
            "{}: 0 would refuse every request; leave it unset for no limit",
            field("requests_per_minute")
        ));
    }
    let scopes = merged.scopes.unwrap_or_default();
    for s in &scopes {
        if !is_scope_token(s) {
            problems.push(format!(
                "{}: \"{s}\" is not a scope (printable ASCII without spaces, quotes or backslashes)",
                field("scopes")
            ));
        }
    }
    if let Some(aud) = &merged.audience
        && aud.is_empty()
    {
        problems.push(format!("{}: empty", field("audience")));
    }
    let introspection = match merged.introspection {
        None => None,
        Some(c) => {
            let secret = match (&c.client_secret, &c.client_secret_env) {
                (Some(s), None) => Some(s.clone()),
                (None, Some(var)) => {
                    let read = env(var);
                    if read.is_none() {
                        problems.push(format!(
                            "{}: the environment variable {var} is not set",
                            field("introspection.client_secret_env")
                        ));
                    }
                    read
                }
                (Some(_), Some(_)) => {
                    problems.push(format!(
                        "{}: set client_secret or client_secret_env, not both",
                        field("introspection")
                    ));
                    None
                }
                (None, None) => {
                    problems.push(format!(
                        "{}: missing (or client_secret_env)",
                        field("introspection.client_secret")
                    ));
                    None
                }
            };
            if c.client_id.is_empty() {
                problems.push(format!("{}: empty", field("introspection.client_id")));
            }
            if let Some(e) = &c.endpoint
                && let Err(why) = issuer_url(e)
            {
                problems.push(format!(
                    "{}: \"{e}\" {why}",
                    field("introspection.endpoint")
                ));
            }
            for (name, value) in [
                ("calls_per_minute", c.calls_per_minute),
                ("max_concurrent_calls", c.max_concurrent_calls),
            ] {
                if value == Some(0) {
                    problems.push(format!(
                        "{}: 0 would refuse every opaque token; leave it unset for the default",
                        field(&format!("introspection.{name}"))
                    ));
                }
            }
            secret.map(|client_secret| Introspection {
                client_id: c.client_id,
                client_secret,
                endpoint: c.endpoint,
                calls_per_minute: c.calls_per_minute.unwrap_or(INTROSPECTION_CALLS_PER_MINUTE),
                max_concurrent_calls: c
                    .max_concurrent_calls
                    .unwrap_or(INTROSPECTION_MAX_CONCURRENT_CALLS),
            })
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Some(Auth {
        issuer,
        audience: merged.audience,
        algorithms,
        leeway_secs: merged.clock_skew_secs.unwrap_or(60),
        scopes,
        introspection,
        anonymous: merged.anonymous.unwrap_or(false),
        requests_per_minute: merged.requests_per_minute,
        claims_to_headers,
        claims_to_env,
        log_callers: merged.log_callers.unwrap_or(false),
        forward_token: merged.forward_token.unwrap_or(false),
        ca_file: merged.ca_file,
    }))
}

/// An endpoint `[auth]` protects, for the rules across endpoints: where its
/// settings are (`upstream[0].`), what it is called (`upstream "notes"`)
/// and what it requires.
pub struct Protected<'a> {
    pub at: String,
    pub label: String,
    pub auth: &'a Auth,
}

/// The rules across the endpoints `[auth]` protects.
///
/// - The audience a token must name is the endpoint's URL under
///   `public_url`, or `audience`: never one made of the request's `Host`,
///   which the caller writes (a token another resource server was given
///   would pass with that server's name in `Host`). Without `public_url`,
///   every protected endpoint needs its `audience`.
/// - An issuer's introspection calls are bounded once, whichever endpoint
///   asks: the endpoints introspecting at one issuer must agree on the
///   bounds.
pub fn across_endpoints(public_url: Option<&str>, protected: &[Protected<'_>]) -> Vec<String> {
    let mut problems = Vec::new();
    let unnamed: Vec<&str> = protected
        .iter()
        .filter(|p| p.auth.audience.is_none())
        .map(|p| p.label.as_str())
        .collect();
    if public_url.is_none() && !unnamed.is_empty() {
        problems.push(format!(
            "public_url: missing; [auth] protects {}, whose tokens must name the endpoint's URL as their audience, and without public_url that URL would be made of each request's Host header, which the caller writes: set the URL clients reach the gateway at, such as public_url = \"https://gw.example.com\" (for a local try: public_url = \"http://127.0.0.1:8787\"), or the audience tokens are issued for (auth.audience)",
            unnamed.join(", ")
        ));
    }
    // Per issuer, the first endpoint introspecting there and its bounds.
    let mut first: std::collections::HashMap<&str, (&str, &Introspection)> = Default::default();
    for p in protected {
        let Some(mine) = &p.auth.introspection else {
            continue;
        };
        let Some(&(theirs, other)) = first.get(p.auth.issuer.as_str()) else {
            first.insert(&p.auth.issuer, (&p.label, mine));
            continue;
        };
        for (name, a, b) in [
            (
                "calls_per_minute",
                mine.calls_per_minute,
                other.calls_per_minute,
            ),
            (
                "max_concurrent_calls",
                mine.max_concurrent_calls,
                other.max_concurrent_calls,
            ),
        ] {
            if a != b {
                problems.push(format!(
                    "{}auth.introspection.{name}: {a}, but {b} for {} at the same issuer ({}): an issuer's introspection calls are bounded once, whichever endpoint asks; set the same on both",
                    p.at, theirs, p.auth.issuer
                ));
            }
        }
    }
    problems
}

/// `own`'s settings over `top`'s.
fn over(top: AuthConfig, own: &AuthConfig) -> AuthConfig {
    let own = own.clone();
    AuthConfig {
        issuer: own.issuer.or(top.issuer),
        audience: own.audience.or(top.audience),
        algorithms: own.algorithms.or(top.algorithms),
        clock_skew_secs: own.clock_skew_secs.or(top.clock_skew_secs),
        scopes: own.scopes.or(top.scopes),
        introspection: own.introspection.or(top.introspection),
        anonymous: own.anonymous.or(top.anonymous),
        requests_per_minute: own.requests_per_minute.or(top.requests_per_minute),
        claims_to_headers: own.claims_to_headers.or(top.claims_to_headers),
        claims_to_env: own.claims_to_env.or(top.claims_to_env),
        log_callers: own.log_callers.or(top.log_callers),
        forward_token: own.forward_token.or(top.forward_token),
        ca_file: own.ca_file.or(top.ca_file),
    }
}

/// Whether `s` is a scope token (RFC 6749 §3.3: printable ASCII but space,
/// `"` and `\`).
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

/// `text` as the URL of an authorization server or one of its endpoints:
/// `https://`, or `http://` on a loopback address (OAuth 2.1 §1.5); no user
/// information, query or fragment; and written as a browser reads it (the
/// WHATWG URL Standard; a host without a path may go without its `/`), so
/// that the URL checked is the URL fetched, whichever parser fetches it.
pub fn issuer_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|_| "is not a URL".to_owned())?;
    let read = url.as_str();
    if read != text && !(url.path() == "/" && read.strip_suffix('/') == Some(text)) {
        return Err(format!("is not written as a browser reads it ({read:?})"));
    }
    if !url.has_host() {
        return Err("has no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must have no user information".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must have no query or fragment".into());
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err("must be https:// (http:// only on a loopback address)".into()),
    }
}

#[cfg(test)]
mod tests;
