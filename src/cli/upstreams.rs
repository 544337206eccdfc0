//! Which upstreams `check` and `init` work on, from the flags they share
//! with `serve` ([`OneUpstream`]), and the `check` command line `init` ends
//! with, so that copying it checks what `init` just wrote.

use std::collections::BTreeMap;
use std::path::Path;

use super::args::OneUpstream;
use super::list;
use mcp_ui_model::config::{Mount, StdioCommand, Transport};

/// The mounts `check` checks, from the `mounts` the configuration and the
/// flags give. `--name NAME` without an upstream on the command line names
/// a configured upstream; offline it may name any: the files of an upstream
/// are checked without one, so a name is all `check --offline` needs. `Err`
/// is for a usage error.
pub fn for_check(
    one: &OneUpstream,
    mut mounts: Vec<Mount>,
    offline: bool,
) -> Result<Vec<Mount>, String> {
    let Some(name) = one.name.as_deref().filter(|_| !one.given()) else {
        return Ok(mounts);
    };
    if mounts.iter().any(|m| m.name == name) {
        return Ok(mounts);
    }
    if !offline {
        return Err(format!(
            "no upstream named '{name}' is configured (configured: {}); give its --upstream URL, --upstream-sse URL or `-- COMMAND`, or check its files alone with --offline",
            list(mounts.iter().map(|m| &m.name))
        ));
    }
    mounts.push(unreached(name));
    Ok(mounts)
}

/// A mount known by its name only, for `check --offline`, which never
/// contacts an upstream: its transport is a command that is never run.
fn unreached(name: &str) -> Mount {
    Mount {
        name: name.to_owned(),
        path: format!("/{name}/mcp"),
        transport: Transport::Stdio(StdioCommand {
            program: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        }),
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
        cache: Default::default(),
        auth: None,
    }
}

/// `mcp-ui-gateway check` with the flags `init` was given that say which
/// configuration, overlay directory and upstream to use, quoted for a POSIX
/// shell.
pub fn check_command(config: Option<&Path>, overlays: Option<&Path>, one: &OneUpstream) -> String {
    let mut words: Vec<String> = vec!["mcp-ui-gateway".into(), "check".into()];
    let mut flag = |name: &str, value: &str| {
        words.push(name.into());
        words.push(shell_word(value));
    };
    if let Some(config) = config {
        flag("--config", &config.to_string_lossy());
    }
    if let Some(overlays) = overlays {
        flag("--overlays", &overlays.to_string_lossy());
    }
    if let Some(name) = &one.name {
        flag("--name", name);
    }
    if let Some(url) = &one.upstream {
        flag("--upstream", url);
    }
    if let Some(url) = &one.upstream_sse {
        flag("--upstream-sse", url);
    }
    if !one.command.is_empty() {
        words.push("--".into());
        words.extend(one.command.iter().map(|w| shell_word(w)));
    }
    words.join(" ")
}

/// `word` as one word of a POSIX shell command line: as it is when nothing
/// in it is special, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn named(name: &str) -> OneUpstream {
        OneUpstream {
            name: Some(name.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_name_alone_picks_a_configured_upstream_or_offline_any() {
        let configured = vec![unreached("demo")];
        let mounts = for_check(&named("demo"), configured.clone(), false).unwrap();
        assert_eq!(mounts.len(), 1);
        let err = for_check(&named("time"), configured.clone(), false).unwrap_err();
        assert!(
            err.starts_with("no upstream named 'time' is configured (configured: 'demo')"),
            "{err}"
        );
        assert!(err.contains("--offline"), "{err}");
        let mounts = for_check(&named("time"), configured.clone(), true).unwrap();
        let names: Vec<&str> = mounts.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["demo", "time"]);
        // With an upstream on the command line, the name is that upstream's.
        let given = OneUpstream {
            command: vec!["server".into()],
            ..named("time")
        };
        assert_eq!(for_check(&given, configured, false).unwrap().len(), 1);
    }

    #[test]
    fn a_url_flag_takes_a_url_and_one_upstream_at_most() {
        let one = OneUpstream {
            upstream: Some("time".into()),
            command: vec!["server".into()],
            ..Default::default()
        };
        let err = one.upstream("/mcp").unwrap_err();
        assert!(
            err.starts_with("--upstream takes the URL of an upstream")
                && err.ends_with("use --name time"),
            "{err}"
        );
        let both = OneUpstream {
            upstream_sse: Some("http://127.0.0.1:1/sse".into()),
            command: vec!["server".into()],
            ..Default::default()
        };
        assert!(
            both.upstream("/mcp")
                .unwrap_err()
                .starts_with("give one upstream")
        );
        let url = OneUpstream {
            upstream: Some("http://127.0.0.1:1/mcp".into()),
            name: Some("web".into()),
            ..Default::default()
        };
        let config = url.upstream("/mcp").unwrap().unwrap();
        assert_eq!(config.name, "web");
        assert_eq!(config.url.as_deref(), Some("http://127.0.0.1:1/mcp"));
        assert!(OneUpstream::default().upstream("/mcp").unwrap().is_none());
    }

    #[test]
    fn the_check_command_repeats_the_flags_quoted() {
        let one = OneUpstream {
            name: Some("time".into()),
            command: vec!["python".into(), "-m".into(), "mcp_server_time".into()],
            ..Default::default()
        };
        let dir = PathBuf::from("my overlays");
        assert_eq!(
            check_command(Some(Path::new("gw.toml")), Some(&dir), &one),
            "mcp-ui-gateway check --config gw.toml --overlays 'my overlays' --name time -- python -m mcp_server_time"
        );
        let one = OneUpstream {
            upstream: Some("http://127.0.0.1:3001/mcp?a=1&b=it's".into()),
            ..Default::default()
        };
        assert_eq!(
            check_command(None, None, &one),
            "mcp-ui-gateway check --upstream 'http://127.0.0.1:3001/mcp?a=1&b=it'\\''s'"
        );
        assert_eq!(
            check_command(None, None, &OneUpstream::default()),
            "mcp-ui-gateway check"
        );
        assert_eq!(shell_word(""), "''");
    }
}
