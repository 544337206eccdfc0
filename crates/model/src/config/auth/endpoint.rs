//! One endpoint's `auth` (a mount's or app's, over the top-level `[auth]`)
//! resolved into the [`Auth`] it requires, every setting held to its rule
//! and every problem named by its field (`upstream[0].auth.issuer`); and
//! the rules across the endpoints `[auth]` protects.

use std::collections::BTreeMap;

use super::{
    Auth, AuthConfig, AuthSetting, DEFAULT_ALGORITHMS, INTROSPECTION_CALLS_PER_MINUTE,
    INTROSPECTION_MAX_CONCURRENT_CALLS, Introspection, IntrospectionConfig, PROVIDER_ACCESS_TOKEN,
    RESERVED_HEADERS, is_scope_token, issuer_url,
};

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
    let Some(merged) = merged(top, own, at, own_issuer)? else {
        return Ok(None);
    };
    let field = |name: &str| format!("{at}auth.{name}");
    let mut problems = Vec::new();
    let issuer = issuer(merged.issuer.as_deref(), own_issuer, &field, &mut problems);
    let algorithms = algorithms(merged.algorithms, &field, &mut problems);
    let claims_to_headers = claims_to_headers(
        merged.claims_to_headers.clone().unwrap_or_default(),
        merged.forward_token,
        &field,
        &mut problems,
    );
    let claims_to_env = claims_to_env(
        merged.claims_to_env.clone().unwrap_or_default(),
        &field,
        &mut problems,
    );
    if merged.requests_per_minute == Some(0) {
        problems.push(format!(
            "{}: 0 would refuse every request; leave it unset for no limit",
            field("requests_per_minute")
        ));
    }
    let scopes = merged.scopes.unwrap_or_default();
    check_scopes(&scopes, &field, &mut problems);
    if let Some(aud) = &merged.audience
        && aud.is_empty()
    {
        problems.push(format!("{}: empty", field("audience")));
    }
    let introspection = merged
        .introspection
        .and_then(|c| introspection(c, env, &field, &mut problems));
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

/// The settings an endpoint is held to: `own` over `[auth]`; `None` for a
/// public endpoint.
fn merged(
    top: Option<&AuthConfig>,
    own: Option<&AuthSetting>,
    at: &str,
    own_issuer: Option<&str>,
) -> Result<Option<AuthConfig>, Vec<String>> {
    Ok(Some(match (top, own) {
        (_, Some(AuthSetting::Enabled(false))) | (None, None) => return Ok(None),
        (None, Some(AuthSetting::Enabled(true))) if own_issuer.is_none() => {
            return Err(vec![format!(
                "{at}auth: `true` needs an [auth] table with an issuer"
            )]);
        }
        (None, Some(AuthSetting::Enabled(true))) => AuthConfig::default(),
        (Some(top), None | Some(AuthSetting::Enabled(true))) => top.clone(),
        (top, Some(AuthSetting::Table(own))) => over(top.cloned().unwrap_or_default(), own),
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

/// A setting's full name.
type Field<'a> = &'a dyn Fn(&str) -> String;

/// The issuer: as written, else the gateway's own (`own_issuer`).
fn issuer(
    written: Option<&str>,
    own_issuer: Option<&str>,
    field: Field<'_>,
    problems: &mut Vec<String>,
) -> String {
    match (written, own_issuer) {
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
    }
}

/// The signature algorithms: as written, else [`DEFAULT_ALGORITHMS`]; none
/// symmetric, none unknown.
fn algorithms(
    written: Option<Vec<String>>,
    field: Field<'_>,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let algorithms =
        written.unwrap_or_else(|| DEFAULT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect());
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
    algorithms
}

/// `claims_to_headers`: header names the gateway and the protocol leave
/// alone; `authorization` only for the provider's token, and then not with
/// `forward_token`.
fn claims_to_headers(
    written: BTreeMap<String, String>,
    forward_token: Option<bool>,
    field: Field<'_>,
    problems: &mut Vec<String>,
) -> Vec<(http::HeaderName, String)> {
    let mut claims_to_headers = Vec::new();
    for (h, claim) in written {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Ok(name) if name == http::header::AUTHORIZATION && claim == PROVIDER_ACCESS_TOKEN => {
                if forward_token == Some(true) {
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
    claims_to_headers
}

/// `claims_to_env`: each an environment variable's name and a claim.
fn claims_to_env(
    written: BTreeMap<String, String>,
    field: Field<'_>,
    problems: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut claims_to_env = Vec::new();
    for (var, claim) in written {
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
    claims_to_env
}

/// `scopes`: each a scope token.
fn check_scopes(scopes: &[String], field: Field<'_>, problems: &mut Vec<String>) {
    for s in scopes {
        if !is_scope_token(s) {
            problems.push(format!(
                "{}: \"{s}\" is not a scope (printable ASCII without spaces, quotes or backslashes)",
                field("scopes")
            ));
        }
    }
}

/// The introspection client: its secret read (written, or from `env`), its
/// endpoint and its bounds; `None` when its secret cannot be had.
fn introspection(
    c: IntrospectionConfig,
    env: &dyn Fn(&str) -> Option<String>,
    field: Field<'_>,
    problems: &mut Vec<String>,
) -> Option<Introspection> {
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
