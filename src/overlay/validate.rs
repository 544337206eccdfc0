//! The rules an overlay must pass beyond its syntax, as pure functions that
//! return every problem found with the key path it sits at, so loading and
//! the offline `check` command report the same things in the same words.
//! Rules that need the upstream's live `tools/list` (file parameters) are in
//! [`crate::rewrite`], which sees that list.

use std::collections::BTreeSet;

use super::format::{RenderTool, SecurityScheme, ToolOverlay, WidgetManifest};
use super::set::MountOverlays;
use super::widget;

/// ChatGPT's limit on `openai/toolInvocation/invoking` and `invoked`.
pub const STATUS_TEXT_MAX_CHARS: usize = 64;

/// One broken rule: where (a key path such as `csp.connect_domains[1]`) and
/// why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: String,
    pub reason: String,
}

impl Problem {
    fn new(place: impl Into<String>, reason: impl Into<String>) -> Self {
        Problem {
            place: place.into(),
            reason: reason.into(),
        }
    }
}

/// Checks a tool overlay. `widget_exists` says whether a widget folder of
/// that name exists.
pub fn tool(tool: &ToolOverlay, widget_exists: &dyn Fn(&str) -> bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(name) = &tool.widget
        && !widget_exists(name)
    {
        problems.push(Problem::new(
            "widget",
            format!("no widget folder `widgets/{name}`"),
        ));
    }
    if let Some(visibility) = &tool.visibility {
        if visibility.is_empty() {
            problems.push(Problem::new(
                "visibility",
                "empty: no one could call the tool; list \"model\", \"app\" or both",
            ));
        }
        duplicates(
            "visibility",
            visibility.iter().map(|a| a.as_str()),
            &mut problems,
        );
    }
    for (key, text) in [("invoking", &tool.invoking), ("invoked", &tool.invoked)] {
        if let Some(text) = text
            && let Err(reason) = status_text(text)
        {
            problems.push(Problem::new(key, reason));
        }
    }
    if let Some(schemes) = &tool.security_schemes {
        security_schemes(schemes, &mut problems);
    }
    names("file_params", &tool.file_params, &mut problems);
    if let Some(schema) = &tool.output_schema
        && schema.get("type").and_then(|t| t.as_str()) != Some("object")
    {
        problems.push(Problem::new(
            "output_schema.type",
            "must be \"object\": MCP structured content is always an object",
        ));
    }
    names(
        "result.widget_only",
        &tool.result.widget_only,
        &mut problems,
    );
    let required = tool
        .output_schema
        .as_ref()
        .and_then(|s| s.get("required"))
        .and_then(|r| r.as_array());
    for key in &tool.result.widget_only {
        if required.is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key))) {
            problems.push(Problem::new(
                "result.widget_only",
                format!(
                    "`{key}` is moved out of structuredContent, so output_schema cannot require it"
                ),
            ));
        }
    }
    problems
}

/// Checks a render tool `name` of a mount whose tool overlays are `mount`
/// (its input schema may come from a data tool's overlay).
pub fn render(
    name: &str,
    render: &RenderTool,
    mount: &MountOverlays,
    widget_exists: &dyn Fn(&str) -> bool,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    if mount.tool(name).is_some() {
        problems.push(Problem::new(
            "",
            format!("`{name}` is also overlaid as `[tools.{name}]`, an upstream tool; a render tool needs a name of its own"),
        ));
    }
    if !widget_exists(&render.widget) {
        problems.push(Problem::new(
            "widget",
            format!("no widget folder `widgets/{}`", render.widget),
        ));
    }
    if render.data_tools.is_empty() {
        problems.push(Problem::new(
            "data_tools",
            "empty: name the upstream tool(s) whose results this tool renders",
        ));
    }
    names("data_tools", &render.data_tools, &mut problems);
    if render.data_tools.iter().any(|t| t == name) {
        problems.push(Problem::new(
            "data_tools",
            "a render tool cannot be its own data tool",
        ));
    }
    for (key, text) in [("invoking", &render.invoking), ("invoked", &render.invoked)] {
        if let Some(text) = text
            && let Err(reason) = status_text(text)
        {
            problems.push(Problem::new(key, reason));
        }
    }
    for (key, schema) in [
        ("input_schema", &render.input_schema),
        ("output_schema", &render.output_schema),
    ] {
        if let Some(schema) = schema
            && schema.get("type").and_then(|t| t.as_str()) != Some("object")
        {
            problems.push(Problem::new(
                format!("{key}.type"),
                "must be \"object\": tool arguments and structured content are objects",
            ));
        }
    }
    if mount.render_input_schema(render).is_none() {
        problems.push(Problem::new(
            "input_schema",
            "missing, and no data tool's overlay declares an output_schema to take it from",
        ));
    }
    problems
}

fn security_schemes(schemes: &[SecurityScheme], problems: &mut Vec<Problem>) {
    if schemes.is_empty() {
        problems.push(Problem::new(
            "security_schemes",
            "empty; omit the key to keep the upstream's, or list {type = \"noauth\"}",
        ));
    }
    let kinds = schemes.iter().map(|s| match s {
        SecurityScheme::Noauth {} => "noauth",
        SecurityScheme::Oauth2 { .. } => "oauth2",
    });
    duplicates("security_schemes", kinds, problems);
    for (i, scheme) in schemes.iter().enumerate() {
        let SecurityScheme::Oauth2 { scopes } = scheme else {
            continue;
        };
        for (j, scope) in scopes.iter().enumerate() {
            if scope.is_empty()
                || scope.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
            {
                problems.push(Problem::new(
                    format!("security_schemes[{i}].scopes[{j}]"),
                    "an OAuth scope is one token without spaces, quotes or backslashes",
                ));
            }
        }
    }
}

/// Non-empty, distinct names.
fn names(place: &str, names: &[String], problems: &mut Vec<Problem>) {
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            problems.push(Problem::new(format!("{place}[{i}]"), "empty name"));
        }
    }
    duplicates(place, names.iter().map(String::as_str), problems);
}

fn duplicates<'a>(place: &str, items: impl Iterator<Item = &'a str>, problems: &mut Vec<Problem>) {
    let mut seen = BTreeSet::new();
    for item in items {
        if !seen.insert(item) {
            problems.push(Problem::new(place, format!("`{item}` is listed twice")));
        }
    }
}

/// Checks a widget manifest.
pub fn manifest(manifest: &WidgetManifest) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Err(reason) = entry(manifest.entry()) {
        problems.push(Problem::new("entry", reason));
    }
    if let Some(value) = &manifest.domain
        && let Err(reason) = domain(value)
    {
        problems.push(Problem::new("domain", reason));
    }
    if let Some(modes) = &manifest.display_modes {
        if modes.is_empty() {
            problems.push(Problem::new("display_modes", "empty; omit the key instead"));
        }
        duplicates(
            "display_modes",
            modes.iter().map(|m| m.as_str()),
            &mut problems,
        );
    }
    if let Some(csp) = &manifest.csp {
        let lists = [
            ("connect_domains", &csp.connect_domains),
            ("resource_domains", &csp.resource_domains),
            ("frame_domains", &csp.frame_domains),
            ("base_uri_domains", &csp.base_uri_domains),
            ("redirect_domains", &csp.redirect_domains),
        ];
        for (key, list) in lists {
            for (i, value) in list.iter().flatten().enumerate() {
                if let Err(reason) = origin(value) {
                    problems.push(Problem::new(format!("csp.{key}[{i}]"), reason));
                }
            }
        }
    }
    problems
}

fn entry(path: &str) -> Result<(), String> {
    if path.starts_with('/') || path.contains('\\') {
        return Err("must be a path relative to the widget folder, with `/` separators".into());
    }
    widget::normalize("", path).map(drop)
}

/// `invoking`/`invoked`: at most [`STATUS_TEXT_MAX_CHARS`] characters.
pub fn status_text(text: &str) -> Result<(), String> {
    let chars = text.chars().count();
    if chars > STATUS_TEXT_MAX_CHARS {
        return Err(format!(
            "{chars} characters; ChatGPT allows at most {STATUS_TEXT_MAX_CHARS}"
        ));
    }
    if text.contains(['\n', '\r']) {
        return Err("a status text is one line".into());
    }
    Ok(())
}

/// A widget folder name: it becomes the host part of `ui://<name>/…`, so it
/// is kept to lowercase letters, digits, `-` and `_`.
pub fn widget_name(name: &str) -> Result<(), String> {
    let valid = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "widget folder `{name}`: names are 1 to 63 of a-z, 0-9, `-` and `_`, starting with a letter or digit (the name is the host of its ui:// URI)"
        ))
    }
}

/// Characters that would let a value break out of its place in a
/// Content-Security-Policy header (the reference host drops such entries).
const CSP_UNSAFE: [(char, &str); 7] = [
    (';', "`;`"),
    ('\r', "a carriage return"),
    ('\n', "a line feed"),
    ('\'', "a `'`"),
    ('"', "a `\"`"),
    (' ', "a space"),
    (',', "a `,`"),
];

/// A CSP origin: `scheme://host[:port]`, where the host may start with the
/// wildcard label `*.`. Bare `*`, paths and anything that could inject a
/// CSP directive are refused.
pub fn origin(value: &str) -> Result<(), String> {
    if value == "*" || value.ends_with("://*") {
        return Err(
            "a bare `*` allows every origin (and ChatGPT rejects it); list the origins".into(),
        );
    }
    injection(value)?;
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(format!(
            "`{value}` is not an origin; write scheme://host[:port], e.g. https://api.example.com"
        ));
    };
    scheme_name(scheme)?;
    if let Some(cut) = rest.find(['/', '?', '#']) {
        return Err(format!(
            "`{value}` has a path; an origin is scheme://host[:port] only (try `{scheme}://{}`)",
            &rest[..cut]
        ));
    }
    let host = host_port(rest)?;
    if host.starts_with('[') {
        // An IPv6 literal, already checked by `host_port`.
        return Ok(());
    }
    let host = host.strip_prefix("*.").unwrap_or(host);
    hostname(host)
}

/// `_meta.ui.domain`: an origin (ChatGPT's form) or a bare hostname
/// (Claude's form); never a wildcard.
pub fn domain(value: &str) -> Result<(), String> {
    injection(value)?;
    if value.contains('*') {
        return Err("a widget domain cannot be a wildcard".into());
    }
    match value.split_once("://") {
        Some(_) => origin(value),
        None => hostname(value),
    }
}

fn injection(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("empty".into());
    }
    for (c, name) in CSP_UNSAFE {
        if value.contains(c) {
            return Err(format!(
                "contains {name}, which could inject into the Content-Security-Policy"
            ));
        }
    }
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("contains whitespace or a control character".into());
    }
    Ok(())
}

fn scheme_name(scheme: &str) -> Result<(), String> {
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{scheme}` is not a scheme (lowercase, e.g. https or wss)"
        ))
    }
}

/// Splits off and checks an optional `:port`; returns the host.
fn host_port(authority: &str) -> Result<&str, String> {
    if authority.contains('@') {
        return Err("an origin carries no user name or password".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let Some((addr, after)) = v6.split_once(']') else {
                return Err("unclosed `[` in an IPv6 address".into());
            };
            if addr.is_empty()
                || !addr
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
            {
                return Err(format!("`[{addr}]` is not an IPv6 address"));
            }
            return match after.strip_prefix(':') {
                None if after.is_empty() => Ok(authority),
                Some(port) => self::port(port).map(|()| authority),
                None => Err(format!("unexpected `{after}` after the IPv6 address")),
            };
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if let Some(port) = port {
        self::port(port)?;
    }
    Ok(host)
}

fn port(port: &str) -> Result<(), String> {
    match port.parse::<u16>() {
        Ok(n) if n > 0 && port.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(format!("`{port}` is not a port (1 to 65535)")),
    }
}

fn hostname(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("no host".into());
    }
    if host.len() > 253 {
        return Err("host name longer than 253 characters".into());
    }
    for label in host.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            let hint = if label.contains('*') {
                " (a wildcard is only allowed as the whole first label, `*.`)"
            } else {
                ""
            };
            return Err(format!("`{host}` is not a host name{hint}"));
        }
    }
    Ok(())
}

/// The origin (`scheme://host[:port]`, lowercased) of a remote URL, with
/// protocol-relative `//host/…` read as https (widget sandboxes are https).
pub fn url_origin(url: &str) -> Option<String> {
    let (scheme, rest) = match url.strip_prefix("//") {
        Some(rest) => ("https".to_owned(), rest),
        None => {
            let (scheme, rest) = url.split_once("://")?;
            (scheme.to_ascii_lowercase(), rest)
        }
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    (!authority.is_empty()).then(|| format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// Whether `origin` (from [`url_origin`]) is covered by one of `allowed`,
/// honouring `*.` wildcards (which, as in CSP, match subdomains only).
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        if pattern == origin {
            return true;
        }
        let Some((scheme, host)) = pattern.split_once("://*.") else {
            return false;
        };
        let Some(rest) = origin
            .strip_prefix(scheme)
            .and_then(|r| r.strip_prefix("://"))
        else {
            return false;
        };
        rest.strip_suffix(host)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::{Audience, Csp, DisplayMode, ResultShaping, SecurityScheme};

    #[test]
    fn status_text_is_limited_to_64_characters() {
        let cases: [(String, bool); 6] = [
            (String::new(), true),
            ("Checking the clock…".into(), true),
            ("a".repeat(64), true),
            ("é".repeat(64), true), // characters, not bytes
            ("a".repeat(65), false),
            ("two\nlines".into(), false),
        ];
        for (text, ok) in cases {
            assert_eq!(status_text(&text).is_ok(), ok, "{text:?}");
        }
        let reason = status_text(&"x".repeat(70)).unwrap_err();
        assert!(
            reason.contains("70 characters") && reason.contains("64"),
            "{reason}"
        );
    }

    #[test]
    fn csp_origins() {
        let cases = [
            ("https://api.example.com", Ok(())),
            ("https://api.example.com:8443", Ok(())),
            ("https://*.example.com", Ok(())),
            ("wss://live.example.com", Ok(())),
            ("http://localhost:3000", Ok(())),
            ("http://127.0.0.1:8080", Ok(())),
            ("http://[::1]:8080", Ok(())),
            ("*", Err("bare `*`")),
            ("https://*", Err("bare `*`")),
            ("api.example.com", Err("not an origin")),
            ("https://example.com/", Err("has a path")),
            ("https://example.com/app", Err("has a path")),
            ("https://example.com; script-src *", Err("`;`")),
            ("https://example.com\r\nX: y", Err("carriage return")),
            ("https://example.com\n", Err("line feed")),
            ("'self'", Err("a `'`")),
            ("\"https://example.com\"", Err("a `\"`")),
            ("https://exa mple.com", Err("a space")),
            ("https://a.com,https://b.com", Err("a `,`")),
            ("https://api.*.example.com", Err("wildcard")),
            ("https://*example.com", Err("wildcard")),
            ("HTTPS://example.com", Err("not a scheme")),
            ("https://example.com:0", Err("not a port")),
            ("https://example.com:99999", Err("not a port")),
            ("https://user@example.com", Err("user name")),
            ("https://-bad.example.com", Err("not a host name")),
            ("https://", Err("no host")),
            ("", Err("empty")),
        ];
        for (value, expected) in cases {
            match (origin(value), expected) {
                (Ok(()), Ok(())) => {}
                (Err(reason), Err(part)) => assert!(reason.contains(part), "{value:?}: {reason}"),
                (got, want) => panic!("{value:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn widget_domain_accepts_both_host_forms() {
        assert!(domain("https://widgets.example.com").is_ok());
        assert!(domain("0123456789abcdef0123456789abcdef.claudemcpcontent.com").is_ok());
        assert!(domain("https://*.example.com").is_err());
        assert!(domain("example.com/path").is_err());
        assert!(domain("https://example.com;").is_err());
    }

    #[test]
    fn widget_names() {
        for ok in ["clock", "task-list", "v2_board", "3d"] {
            assert!(widget_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Clock", "-x", "a.b", "a b", "é", &"a".repeat(64)] {
            assert!(widget_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn remote_asset_origins() {
        assert_eq!(
            url_origin("https://CDN.example.com/x.js?v=1").as_deref(),
            Some("https://cdn.example.com")
        );
        assert_eq!(
            url_origin("//cdn.example.com:444/x.js").as_deref(),
            Some("https://cdn.example.com:444")
        );
        let allowed = [
            "https://cdn.example.com".to_owned(),
            "https://*.static.net".to_owned(),
        ];
        assert!(origin_allowed("https://cdn.example.com", &allowed));
        assert!(origin_allowed("https://a.b.static.net", &allowed));
        assert!(!origin_allowed("https://static.net", &allowed));
        assert!(!origin_allowed("http://cdn.example.com", &allowed));
        assert!(!origin_allowed("https://evil-static.net", &allowed));
    }

    fn no_widgets(_: &str) -> bool {
        false
    }

    fn places(problems: &[Problem]) -> Vec<&str> {
        problems.iter().map(|p| p.place.as_str()).collect()
    }

    #[test]
    fn tool_rules() {
        let schema = serde_json::json!({ "type": "object", "required": ["secret"] });
        let tool = ToolOverlay {
            widget: Some("missing".into()),
            visibility: Some(vec![Audience::App, Audience::App]),
            invoking: Some("x".repeat(65)),
            invoked: Some("Done".into()),
            security_schemes: Some(vec![
                SecurityScheme::Noauth {},
                SecurityScheme::Oauth2 {
                    scopes: vec!["a b".into()],
                },
            ]),
            file_params: vec!["file".into(), "file".into()],
            output_schema: schema.as_object().cloned(),
            result: ResultShaping {
                structured_from_text: true,
                widget_only: vec!["secret".into()],
            },
            ..ToolOverlay::default()
        };
        let problems = tool_problems(&tool);
        assert_eq!(
            places(&problems),
            [
                "widget",
                "visibility",
                "invoking",
                "security_schemes[1].scopes[0]",
                "file_params",
                "result.widget_only"
            ]
        );
        let empty = ToolOverlay {
            visibility: Some(vec![]),
            security_schemes: Some(vec![]),
            output_schema: serde_json::json!({ "type": "array" }).as_object().cloned(),
            ..ToolOverlay::default()
        };
        assert_eq!(
            places(&tool_problems(&empty)),
            ["visibility", "security_schemes", "output_schema.type"]
        );
        assert!(tool_problems(&ToolOverlay::default()).is_empty());
    }

    fn tool_problems(t: &ToolOverlay) -> Vec<Problem> {
        tool(t, &no_widgets)
    }

    #[test]
    fn manifest_rules() {
        let manifest = WidgetManifest {
            entry: Some("../index.html".into()),
            domain: Some("https://*.x.com".into()),
            display_modes: Some(vec![DisplayMode::Inline, DisplayMode::Inline]),
            csp: Some(Csp {
                connect_domains: Some(vec!["https://ok.example.com".into(), "*".into()]),
                redirect_domains: Some(vec!["https://x.com/path".into()]),
                ..Csp::default()
            }),
            ..WidgetManifest::default()
        };
        assert_eq!(
            places(&super::manifest(&manifest)),
            [
                "entry",
                "domain",
                "display_modes",
                "csp.connect_domains[1]",
                "csp.redirect_domains[0]"
            ]
        );
        assert!(super::manifest(&WidgetManifest::default()).is_empty());
    }
}
