//! One app and what it has learnt from the listings it answered: which
//! member owns each tool, prompt and resource. Shared by every session of
//! the app in this process (listings are the same for every session, as
//! for render tools; a process that has not seen one lists again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_ui_model::config::App;

use mcp_ui_rewrite::combine::list::Kind;
use mcp_ui_rewrite::combine::names::{Collision, Names, Owner};

/// An app, served at its path.
#[derive(Debug)]
pub struct AppState {
    pub config: App,
    /// The widget domain Claude expects for the app, derived from the app's
    /// own public endpoint URL (the one Claude connects to, not a
    /// member's); `None` without a `public_url`.
    pub claude_domain: Option<Arc<str>>,
    tools: Mutex<Names>,
    prompts: Mutex<Names>,
    /// Resource URIs (listed resources and tools' widgets) → member.
    resources: Mutex<HashMap<String, usize>>,
    /// When the members' names were last listed to find an unknown one.
    learnt: Mutex<HashMap<Kind, Instant>>,
    /// Held while the members' names are listed to find an unknown one: a
    /// request for a name not known yet waits for a listing under way (which
    /// may name it) before it is told the name is unknown.
    pub(crate) learning: tokio::sync::Mutex<()>,
}

/// An unknown name makes the app list its members' names at most this
/// often (a client calling made-up names cannot make it list every time).
pub(crate) const LEARN_EVERY: Duration = Duration::from_secs(5);

impl AppState {
    pub fn new(config: App) -> Self {
        AppState {
            config,
            claude_domain: None,
            tools: Mutex::default(),
            prompts: Mutex::default(),
            resources: Mutex::default(),
            learnt: Mutex::default(),
            learning: tokio::sync::Mutex::const_new(()),
        }
    }

    /// This app, with Claude's widget domain for its endpoint.
    pub(crate) fn with_claude_domain(mut self, domain: Option<Arc<str>>) -> Self {
        self.claude_domain = domain;
        self
    }

    /// Whether to list the members' names of `kind` now, to find one not
    /// known (at most once every [`LEARN_EVERY`]); taking the turn if so.
    pub(crate) fn learn_turn(&self, kind: Kind, now: Instant) -> bool {
        let mut learnt = self.learnt.lock().unwrap_or_else(|e| e.into_inner());
        match learnt.get(&kind) {
            Some(at) if now.saturating_duration_since(*at) < LEARN_EVERY => false,
            _ => {
                learnt.insert(kind, now);
                true
            }
        }
    }

    /// A member's name.
    pub(crate) fn member_name(&self, member: usize) -> &str {
        self.config
            .members
            .get(member)
            .map_or("?", |m| m.upstream.as_str())
    }

    /// Record a member's listing page: names of tools and prompts, URIs of
    /// resources and of the tools' widgets.
    pub fn record(
        &self,
        kind: Kind,
        member: usize,
        first_page: bool,
        names: &[(String, String)],
        widget_uris: &[String],
    ) -> Result<(), Collision> {
        let names_of = match kind {
            Kind::Tools => &self.tools,
            Kind::Prompts => &self.prompts,
            Kind::Resources => {
                let mut map = self.resources.lock().unwrap_or_else(|e| e.into_inner());
                for (uri, _) in names {
                    map.insert(uri.clone(), member);
                }
                return Ok(());
            }
            Kind::Templates => return Ok(()),
        };
        if !widget_uris.is_empty() {
            let mut map = self.resources.lock().unwrap_or_else(|e| e.into_inner());
            for uri in widget_uris {
                map.insert(uri.clone(), member);
            }
        }
        let mut names_of = names_of.lock().unwrap_or_else(|e| e.into_inner());
        names_of.record(member, first_page, names)
    }

    /// Who owns a tool (`Kind::Tools`) or prompt (`Kind::Prompts`) name.
    pub fn owner(&self, kind: Kind, name: &str) -> Owner {
        let names = match kind {
            Kind::Tools => &self.tools,
            Kind::Prompts => &self.prompts,
            _ => return Owner::Unknown,
        };
        names.lock().unwrap_or_else(|e| e.into_inner()).owner(name)
    }

    /// The member a resource URI was listed by, when one was.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<usize> {
        let map = self.resources.lock().unwrap_or_else(|e| e.into_inner());
        map.get(uri).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_ui_model::config::{App, Member};

    #[test]
    fn unknown_names_are_looked_for_at_most_once_a_while() {
        let app = AppState::new(App {
            name: "suite".into(),
            path: "/suite/mcp".into(),
            members: vec![Member {
                upstream: "time".into(),
                mount: 0,
                prefix: String::new(),
            }],
            auth_challenge: "http",
            auth: None,
        });
        let t0 = Instant::now();
        assert!(app.learn_turn(Kind::Tools, t0));
        assert!(!app.learn_turn(Kind::Tools, t0 + Duration::from_secs(1)));
        assert!(app.learn_turn(Kind::Prompts, t0), "each kind has its turn");
        assert!(app.learn_turn(Kind::Tools, t0 + LEARN_EVERY));
    }
}
