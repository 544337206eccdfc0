//! The references a script or a stylesheet makes to other files, with their
//! byte ranges, found by small tokenizers (strings, comments and regular
//! expressions are told apart; nothing is evaluated).

use std::ops::Range;

/// What a reference is, which decides how it must resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// `import … from "x"`, `import "x"`, `export … from "x"`.
    Import,
    /// `import("x")`.
    DynamicImport,
    /// `new URL("x", import.meta.url)`: relative to the script's own URL.
    ModuleUrl,
    /// A string literal starting with `/`: a root-relative URL when it names
    /// a file of the widget (a bundler's absolute asset path), else text.
    RootString,
    /// CSS `url(x)`.
    CssUrl,
    /// CSS `@import "x"` or `@import url(x)`.
    CssImport,
    /// `//# sourceMappingURL=x` or `/*# sourceMappingURL=x */`.
    SourceMap,
}

/// One reference: the specifier's byte range in the file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ref {
    pub kind: RefKind,
    pub range: Range<usize>,
    pub value: String,
}

/// A problem found while scanning, at a byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanProblem {
    pub offset: usize,
    pub reason: String,
}

const NOT_LITERAL: &str =
    "a dynamic import() whose specifier is not a string literal: what it loads cannot be checked";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    Punct(u8),
    Str(usize),
    Other,
}

/// The references of a JavaScript file (classic script or module).
/// A dynamic `import()` whose specifier is not one string literal is a
/// problem: what it loads cannot be known before it runs. A string starting
/// with `placeholder` (a bundler's stand-in for the asset base URL; `""`
/// for none) is root-relative, like one starting with `/`.
pub(crate) fn js_refs(src: &str, placeholder: &str) -> (Vec<Ref>, Vec<ScanProblem>) {
    let b = src.as_bytes();
    let mut s = JsScan {
        src,
        placeholder,
        refs: Vec::new(),
        problems: Vec::new(),
        toks: Vec::new(),
        strings: Vec::new(),
        templates: Vec::new(),
        depth: 0,
    };
    let mut i = 0;
    let n = b.len();
    while i < n {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = src[i..].find('\n').map_or(n, |e| i + e);
            source_map(src, i + 2, end, &mut s.refs);
            i = end;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = src[i + 2..].find("*/").map_or(n, |e| i + 2 + e);
            source_map(src, i + 2, end, &mut s.refs);
            i = (end + 2).min(n);
            continue;
        }
        if c == b'/' && regex_allowed(s.toks.last()) {
            i = skip_regex(b, i);
            s.toks.push(Tok::Other);
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (content_end, end) = skip_string(b, i, c);
            s.strings.push(i + 1..content_end);
            s.toks.push(Tok::Str(s.strings.len() - 1));
            i = end;
            s.check_string();
            continue;
        }
        if c == b'`' || (c == b'}' && s.templates.last() == Some(&s.depth)) {
            i = s.template(i, c);
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 {
            let start = i;
            while i < n
                && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80)
            {
                i += 1;
            }
            s.toks.push(src.get(start..i).map_or(Tok::Other, Tok::Word));
            continue;
        }
        s.punct(i, c);
        i += 1;
    }
    (s.refs, s.problems)
}

/// A JavaScript file being scanned: what was found so far, and the state
/// of its tokens.
struct JsScan<'a> {
    src: &'a str,
    placeholder: &'a str,
    refs: Vec<Ref>,
    problems: Vec<ScanProblem>,
    /// Significant tokens so far; strings index into `strings`.
    toks: Vec<Tok<'a>>,
    strings: Vec<Range<usize>>,
    /// Open template literals: the brace depth at which each `${` started.
    templates: Vec<usize>,
    depth: usize,
}

impl JsScan<'_> {
    /// Classifies the string literal just pushed.
    fn check_string(&mut self) {
        check_string(
            self.src,
            &self.toks,
            &self.strings,
            &mut self.refs,
            self.placeholder,
        );
    }

    /// Template text from `i` (its opening `` ` ``, or the `}` closing a
    /// substitution) up to its end or the next `${`: the index after it.
    fn template(&mut self, i: usize, c: u8) -> usize {
        let b = self.src.as_bytes();
        let n = b.len();
        if c == b'}' {
            self.templates.pop();
        }
        let open = i;
        let mut j = i + 1;
        let mut whole = c == b'`';
        loop {
            match b.get(j) {
                None => break,
                Some(b'\\') => j += 2,
                Some(b'`') => {
                    j += 1;
                    break;
                }
                Some(b'$') if b.get(j + 1) == Some(&b'{') => {
                    self.templates.push(self.depth);
                    whole = false;
                    j += 2;
                    break;
                }
                Some(_) => j += 1,
            }
        }
        let i = j.min(n);
        if whole && i - 1 > open && b[i - 1] == b'`' {
            // A template without substitutions is a plain string (how
            // some bundlers write every string).
            self.strings.push(open + 1..i - 1);
            self.toks.push(Tok::Str(self.strings.len() - 1));
            self.check_string();
        } else {
            if c == b'`'
                && matches!(
                    self.toks.as_slice(),
                    [.., Tok::Word("import"), Tok::Punct(b'(')]
                )
            {
                self.problems.push(ScanProblem {
                    offset: open,
                    reason: NOT_LITERAL.into(),
                });
            }
            self.toks.push(Tok::Other);
        }
        i
    }

    /// The punctuation `c` at `i`: braces counted, and a dynamic `import(`
    /// whose specifier is no string literal reported.
    fn punct(&mut self, i: usize, c: u8) {
        match c {
            b'{' => self.depth += 1,
            b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.toks.push(Tok::Punct(c));
        if let [.., Tok::Word("import"), Tok::Punct(b'(')] = self.toks.as_slice() {
            let prior = self.toks.len().checked_sub(3).map(|k| self.toks[k]);
            let next = self.src[i + 1..].trim_start().as_bytes().first().copied();
            if prior != Some(Tok::Punct(b'.')) && !matches!(next, Some(b'"' | b'\'' | b'`')) {
                self.problems.push(ScanProblem {
                    offset: i,
                    reason: NOT_LITERAL.into(),
                });
            }
        }
    }
}

/// Classifies the string literal just pushed by the tokens before it.
fn check_string(
    src: &str,
    toks: &[Tok<'_>],
    strings: &[Range<usize>],
    refs: &mut Vec<Ref>,
    placeholder: &str,
) {
    let Some(&Tok::Str(index)) = toks.last() else {
        return;
    };
    let range = strings[index].clone();
    let value = src.get(range.clone()).unwrap_or_default();
    let at = |back: usize| toks.len().checked_sub(back + 1).map(|k| toks[k]);
    let kind = match (at(3), at(2), at(1)) {
        (_, _, Some(Tok::Word("from"))) => Some(RefKind::Import),
        (_, prior, Some(Tok::Word("import"))) if prior != Some(Tok::Punct(b'.')) => {
            Some(RefKind::Import)
        }
        (prior, Some(Tok::Word("import")), Some(Tok::Punct(b'(')))
            if prior != Some(Tok::Punct(b'.')) =>
        {
            Some(RefKind::DynamicImport)
        }
        (Some(Tok::Word("new")), Some(Tok::Word("URL")), Some(Tok::Punct(b'(')))
            if after_comma(src, range.end).starts_with("import.meta.url") =>
        {
            Some(RefKind::ModuleUrl)
        }
        _ if is_rooted(value, placeholder) => Some(RefKind::RootString),
        _ => None,
    };
    if let Some(kind) = kind {
        refs.push(Ref {
            kind,
            range,
            value: value.to_owned(),
        });
    }
}

/// Whether a reference names a path from the widget's base: `/x` (not
/// `//host`), or `<placeholder>/x`.
pub(crate) fn is_rooted(value: &str, placeholder: &str) -> bool {
    match value
        .strip_prefix(placeholder)
        .filter(|_| !placeholder.is_empty())
    {
        Some(rest) => !rest.is_empty(),
        None => value.starts_with('/') && !value.starts_with("//") && value.len() > 1,
    }
}

/// What follows the `,` right after the string literal ending at `from`.
fn after_comma(src: &str, from: usize) -> &str {
    let rest = src.get(from..).unwrap_or_default();
    let rest = rest.trim_start_matches(['"', '\'', '`']).trim_start();
    rest.strip_prefix(',').map_or("", str::trim_start)
}

/// A `# sourceMappingURL=` comment between `from` and `to`.
fn source_map(src: &str, from: usize, to: usize, refs: &mut Vec<Ref>) {
    let Some(text) = src.get(from..to) else {
        return;
    };
    for marker in ["# sourceMappingURL=", "@ sourceMappingURL="] {
        if let Some(rest) = text.strip_prefix(marker) {
            let start = from + marker.len();
            let len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
            if len > 0 {
                refs.push(Ref {
                    kind: RefKind::SourceMap,
                    range: start..start + len,
                    value: rest[..len].to_owned(),
                });
            }
        }
    }
}

/// Whether a `/` after `last` starts a regular expression (not a division).
fn regex_allowed(last: Option<&Tok<'_>>) -> bool {
    match last {
        None => true,
        Some(Tok::Punct(p)) => !matches!(p, b')' | b']' | b'}'),
        Some(Tok::Word(w)) => matches!(
            *w,
            "return"
                | "typeof"
                | "instanceof"
                | "in"
                | "of"
                | "new"
                | "delete"
                | "void"
                | "throw"
                | "case"
                | "do"
                | "else"
                | "yield"
                | "await"
        ),
        Some(Tok::Str(_)) | Some(Tok::Other) => false,
    }
}

fn skip_regex(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    let mut class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                i += 1;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                return i;
            }
            b'\n' => return i,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The end of the content of the string literal opened at `start`, and the
/// offset just past the literal (an unclosed one ends at the line's end).
fn skip_string(b: &[u8], start: usize, quote: u8) -> (usize, usize) {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return (i, i + 1),
            b'\n' => return (i, i),
            _ => i += 1,
        }
    }
    (b.len(), b.len())
}

/// The references of a stylesheet: `url()`, `@import` and its source map.
pub(crate) fn css_refs(src: &str) -> Vec<Ref> {
    let b = src.as_bytes();
    let mut refs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e);
                source_map(src, i + 2, end, &mut refs);
                i = (end + 2).min(b.len());
            }
            b'"' | b'\'' => {
                let (content_end, end) = skip_string(b, i, b[i]);
                if import_before(src, i) {
                    push_css(src, RefKind::CssImport, i + 1, content_end, &mut refs);
                }
                i = end.max(i + 1);
            }
            b'u' | b'U'
                if b.get(i..i + 4)
                    .is_some_and(|w| w.eq_ignore_ascii_case(b"url(")) =>
            {
                let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-');
                let open = i + 4;
                let inner = src[open..].len() - src[open..].trim_start().len() + open;
                let (start, end, after) = match b.get(inner) {
                    Some(&q @ (b'"' | b'\'')) => {
                        let (content_end, e) = skip_string(b, inner, q);
                        (inner + 1, content_end, e)
                    }
                    _ => {
                        let e = src[inner..].find(')').map_or(b.len(), |e| inner + e);
                        let value_end = inner + src[inner..e].trim_end().len();
                        (inner, value_end, e)
                    }
                };
                if word_start {
                    let kind = if import_before(src, i) {
                        RefKind::CssImport
                    } else {
                        RefKind::CssUrl
                    };
                    push_css(src, kind, start, end, &mut refs);
                }
                i = after.max(i + 4);
            }
            _ => i += 1,
        }
    }
    refs
}

fn push_css(src: &str, kind: RefKind, start: usize, end: usize, refs: &mut Vec<Ref>) {
    let Some(value) = src.get(start..end).map(str::trim) else {
        return;
    };
    if value.is_empty() || value.starts_with('#') {
        return;
    }
    refs.push(Ref {
        kind,
        range: start..end,
        value: value.to_owned(),
    });
}

/// Whether `@import` (and only whitespace) comes right before `at`.
fn import_before(src: &str, at: usize) -> bool {
    let before = src.get(..at).unwrap_or_default().trim_end().as_bytes();
    before.len() >= 7 && before[before.len() - 7..].eq_ignore_ascii_case(b"@import")
}
