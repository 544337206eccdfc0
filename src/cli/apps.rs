//! `check` for `[[app]]` endpoints: the members' live tool names, with
//! their prefixes, must not collide (two members listing one name could
//! not be told apart by the app).

use std::io::Write;

use crate::combine::names::collision_message;
use crate::combine::{Names, list};
use crate::config::{App, Limits, Mount};
use crate::probe;

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
            let listing = match probe::list_tools(mount, limits).await {
                Ok(l) => l,
                Err(e) => {
                    problems.push(format!(
                        "app `{}`: member `{}` cannot be listed: {e}",
                        app.name, member.upstream
                    ));
                    continue;
                }
            };
            let page = serde_json::json!({ "tools": listing.tools });
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
