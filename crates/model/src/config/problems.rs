//! What is wrong with a configuration, every problem at once, each where it
//! is: the file and line of a key in the file, the variable of one in the
//! environment, and for an unknown key the one most likely meant.
//!
//! Deserializing stops at the first problem, so the caller reads again
//! without the key at fault ([`without`]) until the rest reads, or a
//! problem cannot be taken out (a key missing, say).

use std::path::Path;

use figment::error::Kind;

use mcp_ui_overlay::spelling::nearest;

/// How many keys an "unknown key" message lists when none is close.
const KEYS_SHOWN: usize = 12;

/// One problem, in words: `file:line: key: reason`, or the variable's name.
pub fn describe(e: &figment::Error, file: Option<&Path>, text: &str, env_prefix: &str) -> String {
    let key = e.path.join(".");
    let reason = match &e.kind {
        Kind::UnknownField(name, expected) => unknown_key(name, expected),
        other => other.to_string(),
    };
    let from_env = e
        .metadata
        .as_ref()
        .is_some_and(|m| m.name.contains("environment"));
    match file {
        _ if from_env => format!(
            "environment variable {env_prefix}{}: {reason}",
            e.path.join("__").to_ascii_uppercase()
        ),
        Some(file) if from_file(e) => match key_line(text, &e.path) {
            Some(line) => format!("{}:{line}: {key}: {reason}", file.display()),
            None => format!("{}: {key}: {reason}", file.display()),
        },
        _ => format!("{key}: {reason}"),
    }
}

/// Whether the value at fault came from the configuration file.
pub(crate) fn from_file(e: &figment::Error) -> bool {
    e.metadata.as_ref().is_some_and(|m| m.name.contains("TOML"))
}

/// "unknown key `k`; did you mean `m`?", or with the keys there are.
fn unknown_key(name: &str, expected: &[&str]) -> String {
    // A key spelt close, or one the name begins (`max_body` for `max_body_bytes`).
    let near = nearest(name, expected).or_else(|| {
        let mut started = expected.iter().filter(|k| k.starts_with(name));
        started.next().filter(|_| started.next().is_none()).copied()
    });
    if let Some(near) = near {
        return format!("unknown key; did you mean `{near}`?");
    }
    let shown: Vec<String> = expected
        .iter()
        .take(KEYS_SHOWN)
        .map(|k| format!("`{k}`"))
        .collect();
    let more = expected.len().saturating_sub(KEYS_SHOWN);
    let more = if more > 0 {
        format!(", and {more} more")
    } else {
        String::new()
    };
    format!("unknown key; the keys here are {}{more}", shown.join(", "))
}

/// The line of the key at `path` in the TOML `text`: the first line that
/// assigns its last segment, after the header of its table when there is
/// one (`[limits]`, or the n-th `[[upstream]]` for `upstream.<n>.…`).
pub fn key_line(text: &str, path: &[String]) -> Option<usize> {
    let (key, parents) = path.split_last()?;
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut table = String::new();
    for (i, segment) in parents.iter().enumerate() {
        if let Ok(n) = segment.parse::<usize>() {
            let header = format!("[[{table}]]");
            let at = lines
                .iter()
                .enumerate()
                .skip(from)
                .filter(|(_, l)| l.trim() == header)
                .nth(n)?
                .0;
            from = at + 1;
            continue;
        }
        if !table.is_empty() {
            table.push('.');
        }
        table.push_str(segment);
        let last = i + 1 == parents.len();
        let header = format!("[{table}]");
        if let Some((at, _)) = lines
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, l)| l.trim() == header)
            .filter(|_| last)
        {
            from = at + 1;
        }
    }
    lines
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, line)| assigns(line, key))
        .map(|(i, _)| i + 1)
}

fn assigns(line: &str, key: &str) -> bool {
    let line = line.trim_start();
    let line = line
        .strip_prefix('"')
        .and_then(|l| l.strip_prefix(key))
        .and_then(|l| l.strip_prefix('"'))
        .or_else(|| line.strip_prefix(key));
    line.is_some_and(|rest| rest.trim_start().starts_with('='))
}

/// The TOML table `doc` without the key at `path`; whether there was one.
pub fn without(doc: &mut toml::Table, path: &[String]) -> bool {
    match path {
        [] => false,
        [key] => doc.remove(key).is_some(),
        [head, rest @ ..] => doc.get_mut(head).is_some_and(|v| without_in(v, rest)),
    }
}

fn without_in(value: &mut toml::Value, path: &[String]) -> bool {
    match value {
        toml::Value::Table(t) => without(t, path),
        toml::Value::Array(items) => path.split_first().is_some_and(|(n, rest)| {
            n.parse::<usize>()
                .ok()
                .and_then(|n| items.get_mut(n))
                .is_some_and(|v| without_in(v, rest))
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn keys_are_found_in_their_tables() {
        let text = "listn = \"x\"\n\n[limits]\nmax_body = 1\n\n[[upstream]]\nname = \"a\"\n\n[[upstream]]\nname = \"b\"\ncomand = \"c\"\n";
        assert_eq!(key_line(text, &path("listn")), Some(1));
        assert_eq!(key_line(text, &path("limits.max_body")), Some(4));
        assert_eq!(key_line(text, &path("upstream.1.comand")), Some(11));
        assert_eq!(key_line(text, &path("upstream.1.name")), Some(10));
        assert_eq!(key_line(text, &path("nowhere")), None);
    }

    #[test]
    fn a_key_is_taken_out_wherever_it_is() {
        let mut doc: toml::Table = toml::from_str(
            "listn = 1\n[limits]\nx = 1\n[[upstream]]\nname = \"a\"\ncomand = \"c\"\n",
        )
        .unwrap();
        assert!(without(&mut doc, &path("listn")));
        assert!(without(&mut doc, &path("limits.x")));
        assert!(without(&mut doc, &path("upstream.0.comand")));
        assert!(!without(&mut doc, &path("upstream.3.comand")));
        assert_eq!(
            toml::to_string(&doc).unwrap(),
            "[limits]\n\n[[upstream]]\nname = \"a\"\n"
        );
    }

    #[test]
    fn an_unknown_key_names_the_one_meant() {
        assert_eq!(
            unknown_key("listn", &["listen", "session_key"]),
            "unknown key; did you mean `listen`?"
        );
        assert_eq!(
            unknown_key("max_body", &["max_body_bytes", "max_message_bytes"]),
            "unknown key; did you mean `max_body_bytes`?"
        );
        assert_eq!(
            unknown_key("zzz", &["listen", "session_key"]),
            "unknown key; the keys here are `listen`, `session_key`"
        );
    }
}
