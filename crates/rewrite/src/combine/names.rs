//! Which member a name belongs to, learnt from the listings the app
//! answered. A name is routed by these rules, in order:
//!
//! 1. a name as the app lists it (prefixed or not) goes to the member that
//!    listed it;
//! 2. a member's own name for one of its tools or prompts (what a widget
//!    of that member calls, since a widget knows its server's names, not
//!    the app's prefix) goes to that member when exactly one member uses it;
//! 3. anything else is unknown (or ambiguous, naming the members).
//!
//! Two members listing the same name (after their prefixes) is a
//! collision: the app refuses the listing, naming the name and both, and
//! a call of that name, until a first page of either no longer lists it.

use std::collections::HashMap;

/// Where a name leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The member, and the name it knows the item by.
    Member(usize, String),
    /// More than one member uses this name as its own.
    Ambiguous(Vec<usize>),
    /// Two members list this very name.
    Collided(Collision),
    Unknown,
}

/// Two members list the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    pub name: String,
    pub first: usize,
    pub second: usize,
}

/// The names of one kind (tools or prompts) the members listed.
#[derive(Debug, Default)]
pub struct Names {
    /// Listed name → (member, own name).
    listed: HashMap<String, (usize, String)>,
    /// Own name → the members using it.
    own: HashMap<String, Vec<usize>>,
    /// Listed names two members list.
    collided: HashMap<String, Collision>,
}

impl Names {
    /// Record a member's page of (listed, own) names; its first page
    /// replaces what the member listed before. A listed name another member
    /// holds is a collision (nothing of the page is recorded then).
    pub fn record(
        &mut self,
        member: usize,
        first_page: bool,
        names: &[(String, String)],
    ) -> Result<(), Collision> {
        // Every name of the page another member holds: each is refused on
        // call, the first is what the listing's error names.
        let clashes: Vec<Collision> = names
            .iter()
            .filter_map(|(listed, _)| {
                self.listed
                    .get(listed)
                    .filter(|(m, _)| *m != member)
                    .map(|(other, _)| Collision {
                        name: listed.clone(),
                        first: *other,
                        second: member,
                    })
            })
            .collect();
        if let Some(first) = clashes.first().cloned() {
            for c in clashes {
                self.collided.insert(c.name.clone(), c);
            }
            return Err(first);
        }
        if first_page {
            self.forget(member);
            // A collision of this member's that its new listing does not
            // repeat is over (one it repeats is found again on its page).
            self.collided.retain(|name, c| {
                (c.first != member && c.second != member)
                    || names.iter().any(|(listed, _)| listed == name)
            });
        }
        for (listed, own) in names {
            self.listed.insert(listed.clone(), (member, own.clone()));
            let users = self.own.entry(own.clone()).or_default();
            if !users.contains(&member) {
                users.push(member);
                users.sort_unstable();
            }
        }
        Ok(())
    }

    /// Forget what `member` listed.
    pub fn forget(&mut self, member: usize) {
        self.listed.retain(|_, (m, _)| *m != member);
        self.own.retain(|_, users| {
            users.retain(|m| *m != member);
            !users.is_empty()
        });
    }

    /// Where `name` leads (see the module's rules).
    pub fn owner(&self, name: &str) -> Owner {
        if let Some(c) = self.collided.get(name) {
            return Owner::Collided(c.clone());
        }
        if let Some((m, own)) = self.listed.get(name) {
            return Owner::Member(*m, own.clone());
        }
        match self.own.get(name).map(Vec::as_slice) {
            Some([m]) => Owner::Member(*m, name.to_owned()),
            Some(many) if many.len() > 1 => Owner::Ambiguous(many.to_vec()),
            _ => Owner::Unknown,
        }
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }
}

/// The message of a collision in `app` between members named `first` and
/// `second`.
pub fn collision_message(app: &str, noun: &str, name: &str, first: &str, second: &str) -> String {
    format!(
        "app `{app}`: {noun} `{name}` is offered by both `{first}` and `{second}`; give one of them a `prefix` in the app's `upstreams`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(names: &[(&str, &str)]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn routing_rules() {
        let mut n = Names::default();
        n.record(0, true, &pairs(&[("search", "search"), ("now", "now")]))
            .unwrap();
        n.record(
            1,
            true,
            &pairs(&[("notes_search", "search"), ("notes_add", "add")]),
        )
        .unwrap();
        assert_eq!(
            n.owner("search"),
            Owner::Member(0, "search".into()),
            "listed first"
        );
        assert_eq!(n.owner("notes_search"), Owner::Member(1, "search".into()));
        assert_eq!(
            n.owner("add"),
            Owner::Member(1, "add".into()),
            "a widget's own name"
        );
        assert_eq!(n.owner("nope"), Owner::Unknown);
        let mut m = Names::default();
        m.record(0, true, &pairs(&[("a_x", "x")])).unwrap();
        m.record(1, true, &pairs(&[("b_x", "x")])).unwrap();
        assert_eq!(m.owner("x"), Owner::Ambiguous(vec![0, 1]));
        // Two members listing one name: the listing fails, and so does a
        // call of the name, until a first page no longer lists it.
        let mut c = Names::default();
        c.record(0, true, &pairs(&[("x", "x")])).unwrap();
        let collision = c.record(1, true, &pairs(&[("x", "x")])).unwrap_err();
        assert_eq!(c.owner("x"), Owner::Collided(collision));
        c.record(1, true, &pairs(&[("y", "y")])).unwrap();
        assert_eq!(c.owner("x"), Owner::Member(0, "x".into()));
    }

    #[test]
    fn collisions_and_relisting() {
        let mut n = Names::default();
        n.record(0, true, &pairs(&[("search", "search")])).unwrap();
        let c = n
            .record(1, true, &pairs(&[("search", "search")]))
            .unwrap_err();
        assert_eq!(
            c,
            Collision {
                name: "search".into(),
                first: 0,
                second: 1
            }
        );
        // The same member listing again is no collision; a tool that moved
        // from one member to another is, until the first lists again.
        n.record(0, true, &pairs(&[("search", "search")])).unwrap();
        n.record(0, true, &pairs(&[("other", "other")])).unwrap();
        n.record(1, true, &pairs(&[("search", "search")])).unwrap();
        assert_eq!(n.owner("search"), Owner::Member(1, "search".into()));
        assert_eq!(
            collision_message("suite", "tool", "search", "notes", "tracker"),
            "app `suite`: tool `search` is offered by both `notes` and `tracker`; give one of them a `prefix` in the app's `upstreams`"
        );
    }
}
