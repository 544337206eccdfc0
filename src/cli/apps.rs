//! `check` for `[[app]]` endpoints: the members' live tool names, with
//! their prefixes, must not collide (two members listing one name could
//! not be told apart by the app); and the members behind OAuth must be one
//! protected resource, naming the same authorization servers in their
//! live metadata (a client signs in to the app once).

use std::io::Write;
use std::time::Duration;

use mcp_ui_proxy::oauth::passthrough;

use mcp_ui_model::config::{App, Limits, Mount, Transport};
use mcp_ui_rewrite::combine::names::collision_message;
use mcp_ui_rewrite::combine::{Names, list};
use mcp_ui_upstream::probe::{self, Prober};

/// The collisions of every app's members' tools, one message each, as the
/// app would answer them; a member that cannot be listed is said too.
pub async fn collisions(
    apps: &[App],
    mounts: &[Mount],
    limits: &Limits,
    progress: &mut dyn Write,
) -> Vec<String> {
    let mut problems = Vec::new();
    for app in apps {
        let _ = writeln!(progress, "checking app '{}'", app.name);
        let mut names = Names::default();
        for (i, member) in app.members.iter().enumerate() {
            let Some(mount) = mounts.iter().find(|m| m.name == member.upstream) else {
                continue;
            };
            let listing = match probe::list_tools(mount, limits, Prober::Command).await {
                Ok(l) => l,
                // Behind OAuth: its names are not known without a token.
                Err(e) if e.requires_authorization() => {
                    let _ = writeln!(
                        progress,
                        "  member '{}' wants a token: its tool names are not checked",
                        member.upstream
                    );
                    continue;
                }
                Err(e) => {
                    problems.push(format!(
                        "app `{}`: member `{}` cannot be listed: {e}",
                        app.name, member.upstream
                    ));
                    continue;
                }
            };
            let Ok(page) =
                serde_json::value::to_raw_value(&serde_json::json!({ "tools": listing.tools }))
            else {
                continue;
            };
            let Some(page) = list::page(&page, list::Kind::Tools, &member.prefix) else {
                continue;
            };
            for pair in &page.names {
                if let Err(c) = names.record(i, false, std::slice::from_ref(pair)) {
                    problems.push(collision_message(
                        &app.name,
                        "tool",
                        &c.name,
                        &app.members[c.first].upstream,
                        &app.members[c.second].upstream,
                    ));
                }
            }
        }
    }
    problems
}

/// Whether each app's members behind OAuth name the same authorization
/// servers in their live protected-resource metadata; one message for each
/// app where they do not.
pub async fn auth_servers(apps: &[App], mounts: &[Mount], limits: &Limits) -> Vec<String> {
    let connect = Duration::from_secs(limits.request_timeout_secs.clamp(1, 10));
    let Ok(client) = mcp_ui_upstream::upstream::client::client_for(connect, mounts) else {
        return Vec::new();
    };
    let fetch = passthrough::Fetch {
        client: &client,
        timeout: connect,
    };
    let mut problems = Vec::new();
    for app in apps {
        let mut docs = Vec::new();
        for member in &app.members {
            let Some(mount) = mounts.get(member.mount) else {
                continue;
            };
            let Transport::Http { url } = &mount.transport else {
                continue;
            };
            if let Some(doc) = passthrough::metadata::fetch_upstream_doc(&fetch, url, None).await {
                docs.push((member.upstream.as_str(), doc));
            }
        }
        if let Err(why) = passthrough::app::united(&app.name, &docs) {
            problems.push(why.to_string());
        }
    }
    problems
}
