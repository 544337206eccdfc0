//! `[[app]]`: one MCP endpoint combining several upstreams, each still
//! served at its own path. Written as a name, an optional path and its
//! members, each a mount name or a table with a tool-name prefix:
//!
//! ```toml
//! [[app]]
//! name = "suite"
//! upstreams = ["time", { upstream = "notes", prefix = "notes_" }]
//! ```

use serde::{Deserialize, Serialize};

/// One app, as written in `[[app]]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    /// Name used in logs, errors, `serverInfo` and the default path.
    pub name: String,
    /// Path the app is served at. Default: `/<name>/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The upstreams it combines, by name, in the order their tools are
    /// listed.
    pub upstreams: Vec<MemberConfig>,
    /// What callers need to reach the app: `false` for anyone, a table
    /// overriding `[auth]`'s settings. Default: `[auth]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<super::auth::AuthSetting>,
}

/// A member: an upstream's name, or a table naming it with a prefix.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MemberConfig {
    Name(String),
    Table {
        upstream: String,
        /// Put before the member's tool and prompt names in the app's
        /// listings (a widget may still call a tool by its own name).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
    },
}

impl MemberConfig {
    fn upstream(&self) -> &str {
        match self {
            MemberConfig::Name(n) | MemberConfig::Table { upstream: n, .. } => n,
        }
    }

    fn prefix(&self) -> &str {
        match self {
            MemberConfig::Table {
                prefix: Some(p), ..
            } => p,
            _ => "",
        }
    }
}

/// A validated app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub name: String,
    pub path: String,
    pub members: Vec<Member>,
    /// How a `tools/call` refused for authorization is answered: the one
    /// `auth_challenge` its streamable HTTP members share, as written
    /// (`"http"` or `"in-band"`; see [`auth_rule`]).
    pub auth_challenge: &'static str,
    /// What its callers need (`None`: anyone may call).
    pub auth: Option<super::auth::Auth>,
}

/// A validated member of an app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The mount's name (and its overlays' name).
    pub upstream: String,
    /// Its index in the gateway's mounts.
    pub mount: usize,
    /// Put before its tool and prompt names; empty for none.
    pub prefix: String,
}

impl App {
    /// Its members' upstream names, in order.
    pub fn upstream_names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.upstream.as_str()).collect()
    }

    /// The app as overlay files see it: a file naming it gives its entries
    /// to the members that own them.
    pub fn overlay_scope(&self) -> mcp_ui_overlay::overlay::AppScope {
        mcp_ui_overlay::overlay::AppScope {
            name: self.name.clone(),
            members: self
                .members
                .iter()
                .map(|m| (m.upstream.clone(), m.prefix.clone()))
                .collect(),
        }
    }
}

/// An upstream's mount, as an app sees it: its name and path.
#[derive(Debug, Clone, Copy)]
pub struct MountRef<'a> {
    pub name: &'a str,
    pub path: &'a str,
    /// For a streamable HTTP upstream (the only kind that receives the
    /// client's credentials): its `auth_challenge` as written; `None`
    /// otherwise.
    pub challenge: Option<&'static str>,
}

/// Check `apps` against the `mounts` and resolve them (`reserved` says
/// which paths the gateway keeps for itself); every problem names its
/// field (`app[i].…`).
pub fn resolve(
    apps: &[AppConfig],
    mounts: &[MountRef<'_>],
    reserved: fn(&str) -> bool,
) -> Result<Vec<App>, Vec<String>> {
    let mut problems = Vec::new();
    let mut out: Vec<App> = Vec::new();
    for (i, app) in apps.iter().enumerate() {
        let at = format!("app[{i}]");
        check_name(app, &at, mounts, &out, &mut problems);
        let path = app_path(app, &at, mounts, &out, reserved, &mut problems);
        let members = members(app, &at, mounts, &mut problems);
        let auth_challenge = match auth_rule(&app.name, &members, mounts) {
            Ok(c) => c,
            Err((j, why)) => {
                problems.push(format!("{at}.upstreams[{j}]: {why}"));
                "http"
            }
        };
        out.push(App {
            name: app.name.clone(),
            path,
            members,
            auth_challenge,
            auth: None,
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// An app's name: the characters and length a session id can carry, and
/// no upstream's or earlier app's.
fn check_name(
    app: &AppConfig,
    at: &str,
    mounts: &[MountRef<'_>],
    earlier: &[App],
    problems: &mut Vec<String>,
) {
    let name_ok = !app.name.is_empty()
        && app
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !name_ok || app.name.len() > crate::session_id::MAX_MOUNT_NAME {
        problems.push(format!(
            "{at}.name: \"{}\" must be 1 to {} letters, digits, '-', '_' or '.'",
            app.name,
            crate::session_id::MAX_MOUNT_NAME
        ));
    }
    if mounts.iter().any(|m| m.name == app.name) || earlier.iter().any(|a| a.name == app.name) {
        problems.push(format!(
            "{at}.name: \"{}\" is used by an upstream or another app",
            app.name
        ));
    }
}

/// The path an app is served at: as written, else `/<name>/mcp`; none of
/// the gateway's own, an upstream's or an earlier app's.
fn app_path(
    app: &AppConfig,
    at: &str,
    mounts: &[MountRef<'_>],
    earlier: &[App],
    reserved: fn(&str) -> bool,
    problems: &mut Vec<String>,
) -> String {
    let path = app
        .path
        .clone()
        .unwrap_or_else(|| format!("/{}/mcp", app.name));
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        problems.push(format!(
            "{at}.path: \"{path}\" must start with '/' and hold no query"
        ));
    } else if reserved(&path) {
        problems.push(format!(
            "{at}.path: \"{path}\" is one of the gateway's own paths"
        ));
    }
    if let Some(m) = mounts.iter().find(|m| m.path == path) {
        problems.push(format!(
            "{at}.path: \"{path}\" is the path of upstream \"{}\"",
            m.name
        ));
    }
    if earlier.iter().any(|a| a.path == path) {
        problems.push(format!("{at}.path: \"{path}\" is used by another app"));
    }
    path
}

/// An app's members: each an upstream, once, with a prefix of the
/// characters a tool name may hold; at least one and at most
/// [`MAX_MEMBERS`].
fn members(
    app: &AppConfig,
    at: &str,
    mounts: &[MountRef<'_>],
    problems: &mut Vec<String>,
) -> Vec<Member> {
    if app.upstreams.is_empty() {
        problems.push(format!("{at}.upstreams: must name at least one upstream"));
    }
    let mut members: Vec<Member> = Vec::new();
    for (j, member) in app.upstreams.iter().enumerate() {
        let name = member.upstream();
        let Some(index) = mounts.iter().position(|m| m.name == name) else {
            problems.push(format!(
                "{at}.upstreams[{j}]: \"{name}\" is not the name of an [[upstream]]"
            ));
            continue;
        };
        if members.iter().any(|m| m.upstream == name) {
            problems.push(format!(
                "{at}.upstreams[{j}]: \"{name}\" is already a member"
            ));
            continue;
        }
        let prefix = member.prefix();
        if !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
        {
            problems.push(format!(
                "{at}.upstreams[{j}].prefix: \"{prefix}\" must be letters, digits, '-', '_', '.' or '/'"
            ));
        }
        members.push(Member {
            upstream: name.to_owned(),
            mount: index,
            prefix: prefix.to_owned(),
        });
    }
    if members.len() > MAX_MEMBERS {
        problems.push(format!(
            "{at}.upstreams: {} members, at most {MAX_MEMBERS}",
            members.len()
        ));
    }
    members
}

/// The auth rule of an app. A client signs in to an app once: it gets one
/// token, for the app's URL (the `resource` of the app's protected-resource
/// metadata), and that token goes to every streamable HTTP member (stdio and
/// legacy SSE members never receive the client's credentials). So those
/// members must accept that one audience, and must answer a refused call the
/// same way: they share one `auth_challenge`, which becomes the app's. The
/// first member that differs is refused (its index among the members and why).
/// Whether their live metadata agree (one authorization server for all) is
/// checked where it can be seen: `check`, and the app's metadata endpoint.
pub(crate) fn auth_rule(
    app: &str,
    members: &[Member],
    mounts: &[MountRef<'_>],
) -> Result<&'static str, (usize, String)> {
    let mut first: Option<(&str, &'static str)> = None;
    for (j, m) in members.iter().enumerate() {
        let Some(c) = mounts.get(m.mount).and_then(|r| r.challenge) else {
            continue;
        };
        match first {
            None => first = Some((&m.upstream, c)),
            Some((f, fc)) if fc != c => {
                return Err((
                    j,
                    format!(
                        "member \"{}\" of app \"{app}\" has auth_challenge = \"{}\" but member \"{f}\" has \"{}\"; \
                         a client signs in to an app once, so its streamable HTTP members must answer \
                         authorization challenges the same way",
                        m.upstream, c, fc
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(first.map_or("http", |(_, c)| c))
}

/// Most members an app has: its session id carries one session per member.
pub(crate) const MAX_MEMBERS: usize = 32;

/// An app reaches its members without their endpoints' own checks, so it
/// must require at least what each member requires: the same issuer, and
/// every scope the member asks for. The problems, naming the app and member.
pub(crate) fn covers_members<'a>(
    app: &App,
    auth_of: &dyn Fn(usize) -> Option<&'a super::auth::Auth>,
    at: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (j, member) in app.members.iter().enumerate() {
        let Some(needed) = auth_of(member.mount) else {
            continue;
        };
        let why = match &app.auth {
            None => Some("the app asks for no token".to_owned()),
            Some(a) if a.issuer != needed.issuer => {
                Some(format!("the app accepts tokens of {} instead", a.issuer))
            }
            Some(a) if a.anonymous && !needed.anonymous => {
                Some("the app lets callers without a token in (anonymous)".to_owned())
            }
            Some(a) => {
                let missing: Vec<&str> = needed
                    .scopes
                    .iter()
                    .filter(|s| !a.scopes.contains(s))
                    .map(String::as_str)
                    .collect();
                (!missing.is_empty())
                    .then(|| format!("the app does not require the scopes {}", missing.join(" ")))
            }
        };
        if let Some(why) = why {
            problems.push(format!(
                "{at}upstreams[{j}]: member \"{}\" requires a token of {}{}, and {why}: \
                 an app must require at least what each member does (its `auth`), \
                 or its members' tools are reachable past their own check",
                member.upstream,
                needed.issuer,
                match needed.scopes.is_empty() {
                    true => String::new(),
                    false => format!(" with scopes {}", needed.scopes.join(" ")),
                },
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigError, Resolved};

    fn config(toml: &str) -> Config {
        use figment::providers::{Format, Toml};
        figment::Figment::from(figment::providers::Serialized::defaults(Config::default()))
            .merge(Toml::string(toml))
            .extract()
            .unwrap()
    }

    const UPSTREAMS: &str = r#"
        [[upstream]]
        name = "time"
        command = "t"
        [[upstream]]
        name = "notes"
        url = "http://127.0.0.1:9/mcp"
    "#;

    #[test]
    fn members_by_name_or_with_a_prefix() {
        let c = config(&format!(
            "{UPSTREAMS}\n[[app]]\nname = \"suite\"\nupstreams = [\"time\", {{ upstream = \"notes\", prefix = \"n_\" }}]\n"
        ));
        let Resolved { mounts, apps, .. } = c.resolve().unwrap();
        assert_eq!(apps[0].path, "/suite/mcp");
        assert_eq!(mounts[0].path, "/time/mcp", "members keep their own path");
        assert_eq!(
            apps[0].members,
            vec![
                Member {
                    upstream: "time".into(),
                    mount: 0,
                    prefix: String::new()
                },
                Member {
                    upstream: "notes".into(),
                    mount: 1,
                    prefix: "n_".into()
                }
            ]
        );
    }

    const OAUTH_UPSTREAMS: &str = r#"
        [[upstream]]
        name = "a"
        url = "http://127.0.0.1:9/mcp"
        [[upstream]]
        name = "b"
        url = "http://127.0.0.1:10/mcp"
        auth_challenge = "in-band"
        [[upstream]]
        name = "c"
        sse_url = "http://127.0.0.1:11/sse"
        [[upstream]]
        name = "d"
        url = "http://127.0.0.1:12/mcp"
        auth_challenge = "in-band"
    "#;

    #[test]
    fn http_members_must_answer_challenges_the_same_way() {
        let c = config(&format!(
            "{OAUTH_UPSTREAMS}\n[[app]]\nname = \"suite\"\nupstreams = [\"c\", \"a\", \"b\"]\n"
        ));
        let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
            panic!()
        };
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        for want in [
            "app[0].upstreams[2]:",
            "member \"b\" of app \"suite\" has auth_challenge = \"in-band\"",
            "member \"a\" has \"http\"",
        ] {
            assert!(p.contains(want), "{want} in {p}");
        }
    }

    #[test]
    fn the_app_answers_challenges_as_its_http_members_do() {
        // A legacy SSE member never receives credentials: it takes no part.
        let c = config(&format!(
            "{OAUTH_UPSTREAMS}\n[[app]]\nname = \"suite\"\nupstreams = [\"c\", \"b\", \"d\"]\n\
             [[app]]\nname = \"plain\"\nupstreams = [\"c\"]\n"
        ));
        let apps = c.resolve().unwrap().apps;
        assert_eq!(apps[0].auth_challenge, "in-band");
        assert_eq!(apps[1].auth_challenge, "http");
    }

    #[test]
    fn problems_name_their_field() {
        let c = config(&format!(
            "{UPSTREAMS}\n[[app]]\nname = \"suite\"\npath = \"/time/mcp\"\nupstreams = [\"time\", \"nope\", \"time\"]\n[[app]]\nname = \"empty\"\nupstreams = []\n"
        ));
        let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
            panic!()
        };
        let text = problems.join("\n");
        for want in [
            "app[0].path: \"/time/mcp\" is the path of upstream \"time\"",
            "app[0].upstreams[1]: \"nope\" is not the name of an [[upstream]]",
            "app[0].upstreams[2]: \"time\" is already a member",
            "app[1].upstreams: must name at least one upstream",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }

    #[test]
    fn an_app_takes_no_upstream_name() {
        let mut c = config(UPSTREAMS);
        c.apps.push(AppConfig {
            name: "time".into(),
            path: None,
            upstreams: vec![MemberConfig::Name("notes".into())],
            auth: None,
        });
        let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
            panic!()
        };
        assert!(problems[0].contains("app[0].name"), "{problems:?}");
    }
}
