//! References as the bundler reads them: where one points, its
//! `?query#fragment`, the candidate URLs of a `srcset`, and a served file's
//! path as it goes in its URL.

use mcp_ui_wire::percent::{Plus, percent_decode};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::paths::normalize;

/// The `?query#fragment` of a reference.
pub(super) fn suffix(reference: &str) -> &str {
    reference.find(['?', '#']).map_or("", |at| &reference[at..])
}

/// The candidates of a `srcset`: a URL (up to whitespace, so a `data:` URL
/// keeps its commas; a trailing comma ends it) and its descriptor.
pub(super) fn srcset(value: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            return out;
        }
        let url_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let url = &rest[..url_end];
        if let Some(url) = url.strip_suffix(',') {
            out.push((url.trim_end_matches(','), ""));
            rest = &rest[url_end..];
            continue;
        }
        let after = &rest[url_end..];
        let descriptor_end = after.find(',').unwrap_or(after.len());
        out.push((url, after[..descriptor_end].trim()));
        rest = &after[descriptor_end..];
    }
}

/// A `#fragment` kept on a `data:` URI (an SVG sprite's `#id`).
pub(super) fn fragment(reference: &str) -> &str {
    reference.find('#').map_or("", |at| &reference[at..])
}

/// A module specifier that is neither relative, root-relative nor a URL.
pub(super) fn is_bare(specifier: &str) -> bool {
    !(specifier.starts_with("./")
        || specifier.starts_with("../")
        || specifier.starts_with('/')
        || has_scheme(specifier))
}

/// Where a reference points.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reference {
    /// A file of the widget folder, normalized relative path.
    Local(String),
    /// `http(s)://…` or protocol-relative `//…`.
    Remote,
    /// `data:`, `blob:` and other schemes, or a bare `#fragment`: nothing to
    /// fetch or inline.
    Opaque,
    Invalid(String),
}

pub(super) fn classify(reference: &str, dir: &str, base: &str) -> Reference {
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Reference::Remote;
    }
    if has_scheme(reference) || reference.starts_with('#') {
        return Reference::Opaque;
    }
    if reference.contains('\\') {
        return Reference::Invalid("use `/` as the path separator".into());
    }
    // `app.js?v=2` and `app.css#x` name the file before the `?`/`#`; a
    // `%20` in it is a space of the file's name.
    let path = reference.split(['?', '#']).next().unwrap_or_default();
    let Some(decoded) = percent_decode(path, Plus::Itself).utf8() else {
        return Reference::Invalid("is not UTF-8 once its %-escapes are decoded".into());
    };
    let (dir, path) = match decoded.strip_prefix('/') {
        Some(rooted) => (base, rooted),
        None => (dir, &*decoded),
    };
    match normalize(dir, path) {
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

/// What a served file's path keeps of itself in a URL: letters, digits,
/// `/` and `-_.~`; the rest is escaped, so the URL reads the same in an HTML
/// attribute, a CSS `url()` and a JavaScript string.
const PATH_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A served file's path as it goes in its URL: a space is `%20`, a `%` is
/// `%25`, so the path the browser asks for decodes to the file's name.
pub(crate) fn encode_path(path: &str) -> String {
    utf8_percent_encode(path, PATH_KEEPS).to_string()
}
