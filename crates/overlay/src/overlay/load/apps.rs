//! Overlay files that name an app (`[[app]]`) instead of an upstream: each
//! `[tools.NAME]` and `[render.NAME]` goes to the member that lists NAME in
//! the app, decided from the app's configuration alone (the loader has no
//! live tool lists):
//!
//! 1. a member whose `prefix` NAME starts with (the longest such prefix):
//!    the entry is that member's, under NAME without the prefix;
//! 2. otherwise the app's only member without a prefix, under NAME;
//! 3. otherwise it is an error: several members without a prefix make NAME
//!    ambiguous, and with none the name reaches no member.
//!
//! The entries then join the member's own overlays, exactly as if its own
//! file (`<member>.toml`) held them.

/// An app endpoint, as overlay files see it: its name and its members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppScope {
    /// The app's name, which an overlay file may name like an upstream's.
    pub name: String,
    /// Its members in order: each upstream's name and its prefix (empty for
    /// none).
    pub members: Vec<(String, String)>,
}

impl AppScope {
    /// The member that owns the listed name `name`, and the member's own
    /// name for it; the reason when no single member does.
    pub(crate) fn member_of(&self, name: &str) -> Result<(&str, String), String> {
        let mut best: Vec<&(String, String)> = Vec::new();
        for member in &self.members {
            let prefix = member.1.as_str();
            if prefix.is_empty() || name.len() <= prefix.len() || !name.starts_with(prefix) {
                continue;
            }
            match best.first() {
                Some(b) if b.1.len() > prefix.len() => {}
                Some(b) if b.1.len() == prefix.len() => best.push(member),
                _ => best = vec![member],
            }
        }
        if let [(upstream, prefix)] = best.as_slice() {
            return Ok((upstream, name[prefix.len()..].to_owned()));
        }
        if best.len() > 1 {
            return Err(format!(
                "app `{}`: members {} share the prefix `{}`, so `{name}` could be a tool of either; write it in the member's own file",
                self.name,
                quoted(best.iter().map(|m| m.0.as_str())),
                best[0].1
            ));
        }
        let bare: Vec<&str> = self
            .members
            .iter()
            .filter(|m| m.1.is_empty())
            .map(|m| m.0.as_str())
            .collect();
        match bare.as_slice() {
            [one] => Ok((one, name.to_owned())),
            [] => Err(format!(
                "app `{}`: `{name}` starts with no member's prefix ({}), so no member lists it",
                self.name,
                quoted(self.members.iter().map(|m| m.1.as_str()))
            )),
            several => Err(format!(
                "app `{}` has several members without a prefix ({}), so `{name}` could be a tool of any of them; write it in the member's own file ({}) or give the members a `prefix`",
                self.name,
                quoted(several.iter().copied()),
                several
                    .iter()
                    .map(|m| format!("`{m}.toml`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// A render tool's data tools, written as the app lists them, as the
    /// member `upstream` (prefix `prefix`) names them.
    pub(crate) fn member_names(
        &self,
        upstream: &str,
        names: &[String],
    ) -> Result<Vec<String>, String> {
        let prefix = self
            .members
            .iter()
            .find(|m| m.0 == upstream)
            .map_or("", |m| m.1.as_str());
        names
            .iter()
            .map(|name| match name.strip_prefix(prefix) {
                Some(own) if !own.is_empty() => Ok(own.to_owned()),
                _ => Err(format!(
                    "`{name}` is not a tool of member `{upstream}` as app `{}` lists it (its names start with `{prefix}`); a render tool's data tools are its member's",
                    self.name
                )),
            })
            .collect()
    }
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::AppScope;

    fn app(members: &[(&str, &str)]) -> AppScope {
        AppScope {
            name: "suite".into(),
            members: members
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_prefix_names_the_member_and_is_removed() {
        let a = app(&[("time", ""), ("notes", "notes_"), ("n2", "notes_x_")]);
        assert_eq!(a.member_of("notes_list").unwrap(), ("notes", "list".into()));
        // The longest prefix wins.
        assert_eq!(a.member_of("notes_x_add").unwrap(), ("n2", "add".into()));
        // The prefix alone is no tool name: the unprefixed member's.
        assert_eq!(a.member_of("notes_").unwrap(), ("time", "notes_".into()));
        assert_eq!(
            a.member_of("get_current_time").unwrap(),
            ("time", "get_current_time".into())
        );
    }

    #[test]
    fn several_unprefixed_members_make_a_bare_name_ambiguous() {
        let a = app(&[("time", ""), ("everything", ""), ("notes", "n_")]);
        let e = a.member_of("echo").unwrap_err();
        assert!(e.contains("several members without a prefix (`time`, `everything`)"));
        assert!(e.contains("`time.toml`, `everything.toml`"), "{e}");
        assert_eq!(a.member_of("n_x").unwrap(), ("notes", "x".into()));
    }

    #[test]
    fn with_every_member_prefixed_an_unmatched_name_is_unknown() {
        let a = app(&[("time", "t_"), ("notes", "n_")]);
        let e = a.member_of("echo").unwrap_err();
        assert!(
            e.contains("starts with no member's prefix (`t_`, `n_`)"),
            "{e}"
        );
    }

    #[test]
    fn a_shared_prefix_is_ambiguous() {
        let a = app(&[("a", "x_"), ("b", "x_")]);
        let e = a.member_of("x_y").unwrap_err();
        assert!(e.contains("share the prefix `x_`"), "{e}");
    }

    #[test]
    fn data_tools_lose_their_members_prefix() {
        let a = app(&[("time", ""), ("notes", "notes_")]);
        let names = vec!["notes_list".to_owned()];
        assert_eq!(a.member_names("notes", &names).unwrap(), vec!["list"]);
        let e = a.member_names("notes", &["list".to_owned()]).unwrap_err();
        assert!(e.contains("not a tool of member `notes`"), "{e}");
        assert_eq!(
            a.member_names("time", &["list".to_owned()]).unwrap(),
            vec!["list"]
        );
    }
}
