//! Local scripts and stylesheets inlined into the one HTML document a host
//! renders.

use super::scan::{AssetError, Element, Kind, find_ci, last_ci, scan};

/// What [`inline_assets`] produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The single HTML document.
    pub html: String,
    /// Script and stylesheet URLs left in place because they are remote
    /// (`http(s)://…` or `//…`), with their byte offsets in the entry: their
    /// origins must be in `csp.resource_domains` or the host blocks them.
    pub remote: Vec<(usize, String)>,
}

/// Replaces `<script src="local.js"></script>` by `<script>…</script>` and
/// `<link rel="stylesheet" href="local.css">` by `<style>…</style>`.
///
/// `read` receives the asset's path relative to the widget folder, already
/// normalized and known not to leave it lexically (`entry_dir` is the entry
/// document's folder, relative to the widget folder, `""` for the top);
/// symlinks are the reader's to check. Remote and `data:` URLs stay as they
/// are. Classic `defer` scripts move to the end of `<body>`, where an inline
/// script runs at about the moment a deferred one would.
pub fn inline_assets(
    html: &str,
    entry_dir: &str,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Inlined, Vec<AssetError>> {
    let mut out = String::with_capacity(html.len());
    let mut deferred = String::new();
    let mut remote = Vec::new();
    let mut errors = Vec::new();
    let mut copied = 0;
    for element in scan(html) {
        let element = match element {
            Ok(element) => element,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        let Some(reference) = element.reference() else {
            continue;
        };
        let resolved = match classify(reference, entry_dir) {
            Reference::Remote => {
                remote.push((element.start, reference.to_owned()));
                continue;
            }
            Reference::Opaque => continue,
            Reference::Invalid(reason) => {
                errors.push(error_at(element.start, &element, reference, reason));
                continue;
            }
            Reference::Local(path) => path,
        };
        let content = match read(&resolved) {
            Ok(content) => content,
            Err(reason) => {
                errors.push(error_at(element.start, &element, reference, reason));
                continue;
            }
        };
        out.push_str(&html[copied..element.start]);
        copied = element.end;
        let replacement = element.inline(&content);
        if element.is_deferred_script() {
            deferred.push_str(&replacement);
        } else {
            out.push_str(&replacement);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    out.push_str(&html[copied..]);
    if !deferred.is_empty() {
        match find_ci(&out, "</body", 0).map(|first| last_ci(&out, "</body", first)) {
            Some(at) => out.insert_str(at, &deferred),
            None => out.push_str(&deferred),
        }
    }
    Ok(Inlined { html: out, remote })
}

fn error_at(offset: usize, element: &Element<'_>, reference: &str, reason: String) -> AssetError {
    let what = match element.kind {
        Kind::Script => "script src",
        Kind::Stylesheet => "stylesheet href",
    };
    AssetError {
        offset,
        reason: format!("{what} \"{reference}\": {reason}"),
    }
}

/// Where a `src`/`href` points.
#[derive(Debug, PartialEq, Eq)]
enum Reference {
    /// A file of the widget folder, normalized relative path.
    Local(String),
    /// `http(s)://…` or protocol-relative `//…`.
    Remote,
    /// `data:`, `blob:` and other schemes: nothing to fetch or inline.
    Opaque,
    Invalid(String),
}

fn classify(reference: &str, entry_dir: &str) -> Reference {
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Reference::Remote;
    }
    if has_scheme(reference) {
        return Reference::Opaque;
    }
    if reference.starts_with('/') {
        return Reference::Invalid(
            "absolute paths are not allowed; write a path relative to the widget folder".into(),
        );
    }
    if reference.contains('\\') {
        return Reference::Invalid("use `/` as the path separator".into());
    }
    // `app.js?v=2` and `app.css#x` name the file before the `?`/`#`.
    let path = reference.split(['?', '#']).next().unwrap_or_default();
    match normalize(entry_dir, path) {
        Ok(path) => Reference::Local(path),
        Err(reason) => Reference::Invalid(reason),
    }
}

fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
}

/// Joins `path` to `base` and folds `.` and `..`, refusing to climb above the
/// widget folder.
pub fn normalize(base: &str, path: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("leaves the widget folder".into());
                }
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("names no file".into());
    }
    Ok(parts.join("/"))
}
