//! A mount file's text parsed into tool overlays and render tools, each
//! problem with the line the parser knew.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::overlay::format::{RenderTool, ToolOverlay, ToolsList};

/// A mount file, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MountFile<T> {
    /// Ignored; lets JSON editors find the schema.
    #[serde(rename = "$schema")]
    #[allow(dead_code)]
    schema: Option<String>,
    /// The mount these tools belong to; default: the file name's stem.
    upstream: Option<String>,
    #[serde(default = "BTreeMap::new")]
    tools: BTreeMap<String, T>,
    /// Gateway-owned render tools, by name.
    #[serde(default = "BTreeMap::new")]
    render: BTreeMap<String, RenderTool>,
    /// The freshness the mount's tool listing announces.
    tools_list: Option<ToolsList>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Format {
    Toml,
    Json,
}

pub(super) fn mount_format(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with('.') || !path.is_file() {
        return None;
    }
    match path.extension()?.to_str()? {
        "toml" => Some(Format::Toml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

/// A parse problem with whatever location the parser knew.
#[derive(Debug)]
pub(super) struct Located {
    pub(super) line: Option<usize>,
    pub(super) place: Option<String>,
    pub(super) reason: String,
}

impl Located {
    /// `offset_line` is the line the parsed text started at.
    pub(super) fn json(e: &serde_json::Error, offset_line: usize) -> Self {
        Located {
            line: (e.line() > 0).then(|| offset_line + e.line() - 1),
            place: None,
            reason: with_key_meant(strip_json_position(&e.to_string())),
        }
    }

    pub(super) fn toml(e: &toml::de::Error, source: &str) -> Self {
        let reason = e.message().trim_end().replace('\n', "; ");
        Located {
            line: e.span().map(|span| line_of(source, span.start)),
            place: None,
            // Some syntax errors (a control character in a comment) come
            // without a message.
            reason: if reason.is_empty() {
                "invalid TOML here (a character TOML does not allow?)".to_owned()
            } else {
                with_key_meant(reason)
            },
        }
    }

    /// From deserializing a `toml::Value`: no position, but the message ends
    /// with "in `a.b`", the key path inside the value.
    pub(super) fn toml_value(e: &toml::de::Error) -> Self {
        let text = e.to_string();
        let mut lines: Vec<&str> = text.trim_end().lines().collect();
        let place = lines
            .last()
            .and_then(|l| l.strip_prefix("in `"))
            .and_then(|l| l.strip_suffix('`'))
            .map(str::to_owned);
        if place.is_some() {
            lines.pop();
        }
        Located {
            line: None,
            place,
            reason: lines.join(" "),
        }
    }
}

/// The key a serde "unknown field `k`, expected …" message names.
fn unknown_key(reason: &str) -> Option<String> {
    let rest = reason.strip_prefix("unknown field `")?;
    Some(rest.split_once('`')?.0.to_owned())
}

/// A serde "unknown field `k`, expected one of `a`, `b`, …" message as the
/// key meant, when one is close ("unknown key `visiblity`; did you mean
/// `visibility`?"), else with the keys there are; any other message as it is.
fn with_key_meant(reason: String) -> String {
    let Some(key) = unknown_key(&reason) else {
        return reason;
    };
    let rest = &reason["unknown field `".len() + key.len() + 1..];
    // The expected keys are every other piece between backquotes.
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    match crate::overlay::validate::nearest(&key, &expected) {
        Some(near) => format!("unknown key `{key}`; did you mean `{near}`?"),
        None if expected.is_empty() => format!("unknown key `{key}`: this table takes none"),
        None => {
            let keys: Vec<String> = expected.iter().map(|k| format!("`{k}`")).collect();
            format!("unknown key `{key}`; the keys are {}", keys.join(", "))
        }
    }
}

/// serde_json appends " at line L column C"; the line is reported apart.
pub(super) fn strip_json_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_owned(),
        None => message.to_owned(),
    }
}

pub(super) struct ParsedTool {
    pub(super) name: String,
    /// Line where the tool's table starts.
    pub(super) line: Option<usize>,
    pub(super) tool: Result<ToolOverlay, Located>,
}

pub(super) type Parsed = (
    Option<String>,
    Vec<ParsedTool>,
    BTreeMap<String, RenderTool>,
    Option<ToolsList>,
);

/// A TOML mount file: the file's syntax and top-level keys first, then each
/// tool on its own so that every broken tool is reported.
pub(super) fn parse_toml(source: &str) -> Result<Parsed, Located> {
    // Plain values, not spans: a tool table that is only implied (by
    // `[tools.x.result]` or dotted keys) has no span of its own.
    let file: MountFile<toml::Value> =
        toml::from_str(source).map_err(|e| Located::toml(&e, source))?;
    let tools = file
        .tools
        .into_iter()
        .map(|(name, value)| {
            let line = tool_line(source, &name);
            let tool = ToolOverlay::deserialize(value).map_err(|e| {
                let mut e = Located::toml_value(&e);
                // An unknown key is shown at its own line, below the tool's.
                if let Some(key) = unknown_key(&e.reason) {
                    let from = line.unwrap_or(1).saturating_sub(1);
                    e.line = key_line_from(source, &key, from).or(line);
                }
                e.reason = with_key_meant(e.reason);
                e
            });
            ParsedTool { name, line, tool }
        })
        .collect();
    Ok((file.upstream, tools, file.render, file.tools_list))
}

/// The first line that names tool `name` under `tools` (a table header or a
/// dotted key), for error messages.
pub(super) fn tool_line(source: &str, name: &str) -> Option<usize> {
    table_line(source, "tools", name)
}

/// The first line that names `name` under the top-level `table`, in TOML
/// (`[render.x]`, `render.x.title = …`) or JSON (`"x": {` after `"render"`).
pub(super) fn table_line(source: &str, table: &str, name: &str) -> Option<usize> {
    let json = format!("\"{name}\"");
    if source.trim_start().starts_with('{') {
        let start = source.find(&format!("\"{table}\""))?;
        let at = start + source[start..].find(&json)?;
        return Some(line_of(source, at));
    }
    let forms = [
        format!("{table}.{name}"),
        format!("{table}.\"{name}\""),
        format!("{table}.'{name}'"),
    ];
    source.lines().enumerate().find_map(|(i, line)| {
        let line = line.trim_start().trim_start_matches('[').trim_start();
        forms.iter().find_map(|form| {
            let rest = line.strip_prefix(form.as_str())?;
            let next = rest.trim_start().chars().next();
            matches!(next, None | Some(']' | '.' | '=')).then_some(i + 1)
        })
    })
}

/// A JSON mount file. Each tool is parsed from its own slice of the text, so
/// its errors keep their line.
pub(super) fn parse_json(source: &str) -> Result<Parsed, Located> {
    let file: MountFile<&RawValue> =
        serde_json::from_str(source).map_err(|e| Located::json(&e, 1))?;
    let tools = file
        .tools
        .into_iter()
        .map(|(name, raw)| {
            // `raw` borrows from `source`: its address gives its offset.
            let offset = (raw.get().as_ptr() as usize).saturating_sub(source.as_ptr() as usize);
            let first = line_of(source, offset.min(source.len()));
            let tool = serde_json::from_str(raw.get()).map_err(|e| Located::json(&e, first));
            ParsedTool {
                name,
                line: Some(first),
                tool,
            }
        })
        .collect();
    Ok((file.upstream, tools, file.render, file.tools_list))
}

/// 1-based line of byte `offset` in `text`.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A best-effort line for a manifest key path such as `csp.frame_domains[0]`:
/// the first line that assigns its last key, else one that assigns a key
/// before it (a value in an inline table, `domain = { claude = "…" }`).
pub(super) fn key_line(source: &str, place: &str) -> Option<usize> {
    key_line_from(source, place, 0)
}

/// [`key_line`], looking from line index `from` (0-based) on.
fn key_line_from(source: &str, place: &str, from: usize) -> Option<usize> {
    let assigns = |line: &str, key: &str| {
        let line = line.trim_start().trim_start_matches('"');
        line.strip_prefix(key).is_some_and(|rest| {
            rest.trim_start()
                .trim_start_matches('"')
                .trim_start()
                .starts_with(['=', ':'])
        })
    };
    place.rsplit('.').find_map(|segment| {
        let key = segment.split('[').next()?;
        source
            .lines()
            .skip(from)
            .position(|line| assigns(line, key))
            .map(|i| from + i + 1)
    })
}
