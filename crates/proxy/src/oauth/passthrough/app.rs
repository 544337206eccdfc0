//! An app's OAuth: one protected resource, the app's URL, over its members'
//! upstreams. A client signs in to the app once and its token goes to every
//! streamable HTTP member, so the app's metadata is its members' documents,
//! which must name the same authorization servers, with `resource` set to
//! the app's URL; and a member's challenge reaches the client pointing at
//! that metadata, as a single mount's points at its own.

use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use serde_json::{Map, Value};

use super::challenge::point_challenges;
use super::metadata::{Fetch, document, upstream_doc};
use super::state::{AuthState, resource_url};
use mcp_ui_model::config::Mount;
use mcp_ui_model::outcome::Side;
use mcp_ui_model::reply::{self, Body};

/// The metadata an app serves, from its members' documents (`(member,
/// document)`, in member order): the first document, with `scopes_supported`
/// the union of all, or why the members cannot be one protected resource
/// (they name different `authorization_servers`). `None` when no member
/// publishes one. Pure.
pub fn united(
    app: &str,
    docs: &[(&str, Map<String, Value>)],
) -> Result<Option<Map<String, Value>>, Disunited> {
    let Some((first_name, first)) = docs.first() else {
        return Ok(None);
    };
    let servers = |d: &Map<String, Value>| {
        let mut s: Vec<String> = d
            .get("authorization_servers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|u| u.trim_end_matches('/').to_owned())
                    .collect()
            })
            .unwrap_or_default();
        s.sort();
        s.dedup();
        s
    };
    let want = servers(first);
    for (name, d) in &docs[1..] {
        let got = servers(d);
        if got != want {
            return Err(Disunited {
                app: app.to_owned(),
                member: (*name).to_owned(),
                first: (*first_name).to_owned(),
                got: brief(&got),
                want: brief(&want),
            });
        }
    }
    let mut out = first.clone();
    out.remove("resource");
    let mut scopes: Vec<Value> = Vec::new();
    for (_, d) in docs {
        for s in d
            .get("scopes_supported")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
    }
    if !scopes.is_empty() {
        out.insert("scopes_supported".into(), Value::Array(scopes));
    }
    Ok(Some(out))
}

/// Why an app's members cannot be one protected resource: two name
/// different authorization servers. The upstreams' (a client asking for the
/// app's metadata is answered 502); `check` reports it to the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disunited {
    pub app: String,
    /// The member whose servers differ from the first member's.
    pub member: String,
    pub first: String,
    /// Each one's servers, as a reason names them ([`brief`]).
    pub got: String,
    pub want: String,
}

impl Disunited {
    /// Whose fault it is: the members' upstreams'.
    pub fn side(&self) -> Side {
        Side::Upstream
    }
}

impl std::fmt::Display for Disunited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Disunited {
            app,
            member,
            first,
            got,
            want,
        } = self;
        write!(
            f,
            "app `{app}`: member `{member}` names authorization servers {got} but member \
             `{first}` names {want} (`authorization_servers` of their protected-resource \
             metadata); a client signs in to the app once, and one token for the app's URL \
             cannot be good at both"
        )
    }
}

impl std::error::Error for Disunited {}

/// At most this many authorization servers of a member are named in a
/// reason, each cut to [`BRIEF_CHARS`]: a member's document is the
/// upstream's, of any size, and the reason goes to the log and to an
/// anonymous client.
const BRIEF_SERVERS: usize = 4;
const BRIEF_CHARS: usize = 120;

/// `servers` as a reason names them: `["https://a", "https://b"]`, the
/// first few, each cut short, and how many more.
fn brief(servers: &[String]) -> String {
    let mut out: Vec<String> = servers
        .iter()
        .take(BRIEF_SERVERS)
        .map(|s| match s.char_indices().nth(BRIEF_CHARS) {
            Some((at, _)) => format!("{:?}", format!("{}…", &s[..at])),
            None => format!("{s:?}"),
        })
        .collect();
    if servers.len() > BRIEF_SERVERS {
        out.push(format!("and {} more", servers.len() - BRIEF_SERVERS));
    }
    format!("[{}]", out.join(", "))
}

/// Serve an app's protected-resource metadata (`members`: each member's
/// mount index and configuration).
pub(crate) async fn serve_app_prm(
    auth: &AuthState,
    app: &str,
    app_path: &str,
    members: &[(usize, Mount)],
    fetch: &Fetch<'_>,
    headers: &HeaderMap,
) -> Response<Body> {
    let Some(base) = auth.base(headers) else {
        return reply::text(StatusCode::BAD_REQUEST, "no valid Host header\n");
    };
    let mut docs = Vec::new();
    for (index, config) in members {
        if let Some(doc) = upstream_doc(auth, *index, config, fetch).await
            && let Ok(Value::Object(d)) = serde_json::from_slice(&doc.with_resource(""))
        {
            docs.push((config.name.as_str(), d));
        }
    }
    match united(app, &docs) {
        Ok(Some(mut doc)) => {
            auth.app_conflicts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(app);
            let resource = resource_url(&base, app_path);
            doc.insert("resource".into(), Value::String(resource));
            let bytes = serde_json::to_vec(&doc).expect("a JSON object serialises");
            document(auth, bytes.into())
        }
        Ok(None) => reply::text(
            StatusCode::NOT_FOUND,
            "not found: no member of this app publishes protected-resource metadata\n",
        ),
        Err(why) => {
            let why = why.to_string();
            // Once per change: an anonymous GET must not be a way to fill
            // the log.
            let mut logged = auth.app_conflicts.lock().unwrap_or_else(|p| p.into_inner());
            if logged.get(app) != Some(&why) {
                tracing::error!("{why}");
                logged.insert(app.to_owned(), why.clone());
            } else {
                tracing::debug!(
                    app,
                    "the app's members still name different authorization servers"
                );
            }
            drop(logged);
            let mut r = Response::new(reply::full(format!("{why}\n")));
            *r.status_mut() = StatusCode::BAD_GATEWAY;
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            r
        }
    }
}

/// Point every `WWW-Authenticate` of a member's answer at the app's
/// metadata `prm` (the member's mount pointed it at the member's own).
pub(crate) fn point_challenges_at(headers: &mut HeaderMap, prm: &str) {
    point_challenges(headers, prm, |_| {});
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn members_of_one_authorization_server_make_one_resource() {
        let a = doc(
            json!({"resource": "http://up-a/mcp", "authorization_servers": ["http://as/"],
            "scopes_supported": ["mcp:tools"], "resource_name": "A"}),
        );
        let b = doc(
            json!({"resource": "http://up-b/mcp", "authorization_servers": ["http://as"],
            "scopes_supported": ["mcp:tools", "notes:read"]}),
        );
        let u = united("suite", &[("a", a), ("b", b)]).unwrap().unwrap();
        assert_eq!(u.get("resource"), None);
        assert_eq!(u["resource_name"], "A");
        assert_eq!(u["scopes_supported"], json!(["mcp:tools", "notes:read"]));
        assert_eq!(united("suite", &[]).unwrap(), None);
    }

    #[test]
    fn members_of_different_authorization_servers_are_refused() {
        let a = doc(json!({"authorization_servers": ["http://as-1"]}));
        let b = doc(json!({"authorization_servers": ["http://as-2"]}));
        let why = united("suite", &[("a", a), ("b", b)])
            .unwrap_err()
            .to_string();
        for want in [
            "app `suite`",
            "member `b`",
            "member `a`",
            "`authorization_servers`",
        ] {
            assert!(why.contains(want), "{want} in {why}");
        }
    }

    #[test]
    fn the_reason_is_one_sentence() {
        let a = doc(json!({"authorization_servers": ["http://as-1"]}));
        let b = doc(json!({"authorization_servers": ["http://as-2"]}));
        let why = united("suite", &[("a", a), ("b", b)]).unwrap_err();
        assert_eq!(why.side(), Side::Upstream);
        assert_eq!(
            why.to_string(),
            "app `suite`: member `b` names authorization servers [\"http://as-2\"] but member \
             `a` names [\"http://as-1\"] (`authorization_servers` of their protected-resource \
             metadata); a client signs in to the app once, and one token for the app's URL \
             cannot be good at both"
        );
    }

    #[test]
    fn a_reason_names_a_few_servers_each_cut_short() {
        let long = format!("https://as.example.com/{}", "x".repeat(250_000));
        let many: Vec<String> = (0..1000).map(|i| format!("https://as-{i}")).collect();
        let a = doc(json!({ "authorization_servers": [long] }));
        let b = doc(json!({ "authorization_servers": many }));
        let why = united("suite", &[("a", a), ("b", b)])
            .unwrap_err()
            .to_string();
        assert!(why.len() < 1200, "{} bytes: {why}", why.len());
        assert!(why.contains("\"https://as-0\", \"https://as-1\""), "{why}");
        assert!(why.contains("and 996 more"), "{why}");
        assert!(why.contains("https://as.example.com/xxx"), "{why}");
        assert!(why.contains('…'), "{why}");
    }

    #[test]
    fn challenges_point_at_the_app() {
        let mut h = HeaderMap::new();
        h.append(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Bearer error="invalid_token", resource_metadata="http://gw/.well-known/oauth-protected-resource/a/mcp""#,
            ),
        );
        point_challenges_at(
            &mut h,
            "http://gw/.well-known/oauth-protected-resource/suite/mcp",
        );
        assert_eq!(
            h[header::WWW_AUTHENTICATE],
            r#"Bearer error="invalid_token", resource_metadata="http://gw/.well-known/oauth-protected-resource/suite/mcp""#
        );
    }
}
