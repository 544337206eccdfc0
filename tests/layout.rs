//! The source's shape, as ARCHITECTURE.md describes it: no file of the
//! product (the crates, the binary, the examples) grows past 500 lines and
//! no function past 80, where one concern has become several; no crate
//! hands another an error as a bare `String`; and percent-decoding happens
//! in one place (`mcp_ui_wire::percent`), so every URL part is decoded by
//! the same rules, each caller saying only what a `+` means to it. Only the
//! request path is handed the whole gateway; the rest receive its handles.
//! And every Rust file of `tests/` is a module of the one test binary,
//! `tests/gateway.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The product's sources: `src/`, `examples/` and each crate's `src/`.
fn product_sources() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("examples"), &mut files);
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/");
    for c in crates.flatten() {
        rust_files(&c.path().join("src"), &mut files);
    }
    assert!(files.len() > 100, "found only {} sources", files.len());
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Longest a product file may be, in lines.
const MAX_FILE_LINES: usize = 500;
/// Longest a function may be, from its `fn` to its closing brace.
const MAX_FN_LINES: usize = 80;

#[test]
fn no_file_grows_past_five_hundred_lines() {
    let long: Vec<String> = product_sources()
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p).ok()?.lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", relative(p)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these into modules by concern, as the rest are: {}",
        long.join(", ")
    );
}

#[test]
fn no_function_grows_past_eighty_lines() {
    let mut long = Vec::new();
    for p in product_sources() {
        let text = std::fs::read_to_string(&p).expect("readable source");
        for f in functions(&code_only(&text)) {
            if f.lines > MAX_FN_LINES {
                long.push(format!(
                    "{}:{} {} ({} lines)",
                    relative(&p),
                    f.line,
                    f.name,
                    f.lines
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these into the steps they take: {}",
        long.join(", ")
    );
}

#[test]
fn no_crate_hands_another_a_string_for_an_error() {
    let mut found = Vec::new();
    for p in product_sources() {
        if !relative(&p).starts_with("crates/") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("readable source");
        for f in functions(&code_only(&text)) {
            if f.public && returns_string_error(&f.signature) {
                found.push(format!("{}:{} {}", relative(&p), f.line, f.name));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a function another crate can call returns Result<_, String>: give its error a type \
         (or keep it within its crate, pub(crate)): {}",
        found.join(", ")
    );
}

#[test]
fn the_source_reader_finds_functions_and_their_lengths() {
    let text = r##"
pub fn a() -> Result<(), String> {
    let s = "fn not_me() { {";
    let c = '{';
    // fn nor_me() {
    /* fn nor_this() { /* nested */ } */
    let r = r#"}"#;
    fn inner<'a>(x: &'a str) -> &'a str { x }
}
pub(crate) fn b() -> Result<(), String>;
fn e(key: [u8; 16]) {}
pub async fn c(
    x: u8,
) -> Result<Vec<u8>, String> where u8: Copy {}
"##;
    let fns = functions(&code_only(text));
    let names: Vec<(&str, usize, bool)> = fns
        .iter()
        .map(|f| (f.name.as_str(), f.lines, f.public))
        .collect();
    assert_eq!(
        names,
        [
            ("a", 8, true),
            ("inner", 1, false),
            ("e", 1, false),
            ("c", 3, true)
        ]
    );
    assert!(returns_string_error(&fns[0].signature));
    assert!(returns_string_error(&fns[3].signature));
    assert!(!returns_string_error("fn d() -> Result<String, Error>"));
}

/// A function of a source file: where it starts, how long it is, whether
/// another crate may call it, and its signature.
struct Function {
    name: String,
    line: usize,
    lines: usize,
    public: bool,
    signature: String,
}

/// `text` with comments and the contents of string and character literals
/// blanked (newlines kept), so that what remains is code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !ident_before && raw_string_start(rest).is_some() {
            let (open, hashes) = raw_string_start(rest).expect("checked");
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + open;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| body + n + close.len());
            blank(&mut out, body, end - close.len().min(end));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter()
                    .skip(2)
                    .position(|&c| c == b'\'')
                    .map(|n| i + 2 + n)
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + width) == Some(&b'\'')).then_some(i + 1 + width)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: whole characters become spaces")
}

/// The length of a raw string's opening (`r#"`, `br"`, …) and its number
/// of `#`s, when `s` starts with one.
fn raw_string_start(s: &[u8]) -> Option<(usize, usize)> {
    let after_b = if s.first() == Some(&b'b') { 1 } else { 0 };
    if s.get(after_b) != Some(&b'r') {
        return None;
    }
    let hashes = s[after_b + 1..].iter().take_while(|&&c| c == b'#').count();
    (s.get(after_b + 1 + hashes) == Some(&b'"')).then_some((after_b + 2 + hashes, hashes))
}

/// The functions with a body in `code` (as [`code_only`] leaves it).
fn functions(code: &str) -> Vec<Function> {
    let b = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(n) = code[i..].find("fn ") {
        let at = i + n;
        i = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The signature ends at the body's `{` or a declaration's `;`
        // (not one of an array type's, `[u8; 16]`).
        let Some(end) = signature_end(&b[at..]).map(|n| at + n) else {
            break;
        };
        if b[end] == b';' {
            continue;
        }
        let mut depth = 0;
        let mut close = None;
        for (k, &c) in b.iter().enumerate().skip(end) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { break };
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        let head = code[line_start..at].trim();
        found.push(Function {
            name,
            line: line_of(at),
            lines: line_of(close) - line_of(at) + 1,
            public: head.split_whitespace().next() == Some("pub"),
            signature: code[at..end].to_owned(),
        });
    }
    found
}

/// Where a signature ends: its body's `{` or a declaration's `;`, outside
/// brackets and parentheses.
fn signature_end(s: &[u8]) -> Option<usize> {
    let mut depth = 0i32;
    for (k, &c) in s.iter().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' | b';' if depth == 0 => return Some(k),
            _ => {}
        }
    }
    None
}

/// Whether a signature's return type is a `Result` whose error is `String`.
fn returns_string_error(signature: &str) -> bool {
    let Some((_, ret)) = signature.split_once("->") else {
        return false;
    };
    let ret: String = ret
        .split(" where ")
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    ret.contains("Result<") && ret.trim_end_matches('>').ends_with(",String")
}

#[test]
fn percent_decoding_is_done_in_one_place() {
    let decoder = root().join("crates/wire/src/percent.rs");
    let elsewhere: Vec<String> = product_sources()
        .iter()
        .filter(|p| **p != decoder)
        .filter(|p| {
            std::fs::read_to_string(p).is_ok_and(|text| {
                text.contains("percent_decode_str")
                    || text.contains("percent_encoding::percent_decode")
            })
        })
        .map(|p| relative(p))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "decode with mcp_ui_wire::percent::percent_decode instead: {}",
        elsewhere.join(", ")
    );
}

/// The proxy crate's modules, beside the `gateway` module itself, that are
/// handed the whole gateway: the listener, the service stack and the router, which compose
/// it; and the request path that joins its handles for one request (the
/// endpoints, the relay and its context, an app's members, a round put in
/// place). Every other module receives the handles it reads (the ids, the
/// upstreams, pending requests, OAuth's roles, the metrics, the overlays),
/// so what a module can touch is said by its signatures.
const HANDED_THE_GATEWAY: [&str; 17] = [
    "server/listen.rs",
    "server/listen/accept.rs",
    "server/listen/worker.rs",
    "stack.rs",
    "router.rs",
    "endpoint.rs",
    "relay.rs",
    "relay/context.rs",
    "relay/member.rs",
    "relay/rounds.rs",
    "app_endpoint.rs",
    "app_endpoint/member.rs",
    "app_endpoint/oauth.rs",
    "app_endpoint/post.rs",
    "app_endpoint/post/context.rs",
    "app_endpoint/post/initialize.rs",
    "app_endpoint/stream.rs",
];

/// Whether `code` (comments and literals blanked) names the `Gateway` type
/// of the `gateway` module: `gateway::Gateway` or `gateway::{.., Gateway, ..}`.
fn names_the_gateway(code: &str) -> bool {
    let word = |w: &str| w == "Gateway";
    code.contains("gateway::Gateway")
        || code.match_indices("gateway::{").any(|(at, _)| {
            let group = &code[at..];
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(word)
        })
}

#[test]
fn only_the_request_path_is_handed_the_whole_gateway() {
    assert!(names_the_gateway(
        "use crate::gateway::{Gateway, MountState};"
    ));
    assert!(!names_the_gateway(
        "use crate::gateway::{Ids, MountState};\nfn f(_: Side) { Side::Gateway }"
    ));
    let src = root().join("crates/proxy/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut named = BTreeSet::new();
    for path in &files {
        let within = path.strip_prefix(&src).expect("under src");
        let within = within.to_string_lossy().replace('\\', "/");
        if within == "gateway.rs" || within.starts_with("gateway/") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("a source file");
        if names_the_gateway(&code_only(&text)) {
            named.insert(within);
        }
    }
    let allowed: BTreeSet<String> = HANDED_THE_GATEWAY.iter().map(|f| f.to_string()).collect();
    let beyond: Vec<&String> = named.difference(&allowed).collect();
    assert!(
        beyond.is_empty(),
        "these modules take the whole gateway; hand them the handles they read \
         (gateway::Ids, Upstreams, Pending, OAuth, Metrics, Live), or say in \
         HANDED_THE_GATEWAY why they join several: {beyond:?}"
    );
    let stale: Vec<&String> = allowed.difference(&named).collect();
    assert!(
        stale.is_empty(),
        "no longer handed the gateway; strike them: {stale:?}"
    );
}

/// The modules `text` declares (`mod name;`, `pub mod name;`).
fn declared_modules(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.trim().trim_start_matches("pub "))
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// The modules `dir` holds: each `NAME.rs` but `skip`, each folder with a `mod.rs`,
/// and each other folder with Rust files in it (as `NAME/`, which no `mod` line names).
fn modules_in(dir: &Path, skip: &[&str]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let (path, name) = (
            entry.path(),
            entry.file_name().to_string_lossy().into_owned(),
        );
        if skip.contains(&name.as_str()) {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".rs") {
            found.insert(stem.to_owned());
        } else if path.join("mod.rs").is_file() {
            found.insert(name);
        } else if path.is_dir() && !dir.join(format!("{name}.rs")).is_file() {
            let mut files = std::fs::read_dir(&path).unwrap().flatten();
            if files.any(|f| f.path().extension().is_some_and(|e| e == "rs")) {
                found.insert(format!("{name}/"));
            }
        }
    }
    found
}

/// `autotests = false` (Cargo.toml): tests/gateway.rs is the only test binary, so a
/// file its modules do not declare would compile nowhere and its tests never run.
#[test]
fn every_test_file_is_a_module_of_the_test_binary() {
    let tests = root().join("tests");
    // The fixture server is a [[bin]] of its own.
    let skip = ["gateway.rs", "fixture_server"];
    let mut pending = vec![(tests.join("gateway.rs"), tests.clone(), &skip[..])];
    while let Some((file, dir, skip)) = pending.pop() {
        let text = std::fs::read_to_string(&file).unwrap();
        let found = modules_in(&dir, skip);
        let declared = declared_modules(&text);
        let undeclared: Vec<&String> = found.difference(&declared).collect();
        assert!(
            undeclared.is_empty(),
            "{}: declare {undeclared:?} (`mod NAME;`, a folder with a mod.rs), or they never run",
            relative(&file),
        );
        for name in found {
            let (own, sub) = (dir.join(format!("{name}.rs")), dir.join(&name));
            if own.is_file() && sub.is_dir() {
                pending.push((own, sub, &[]));
            } else if sub.join("mod.rs").is_file() {
                pending.push((sub.join("mod.rs"), sub, &["mod.rs"]));
            }
        }
    }
}
