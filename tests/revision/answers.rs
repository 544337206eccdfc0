//! Answers in the revision's form for 2025 upstreams: what the revision adds
//! (`resultType`; `ttlMs` and `cacheScope` from the mount's settings, and for the tool
//! listing from its overlay file's `tools_list`), and every other byte of the
//! upstream's result as a 2025 client gets it through the gateway.

use serde_json::{Map, Value, json};

use super::{Answer, Findings, Front, Kind, Servers, ask_method, post};
use crate::support::peers::setup;

/// The keys the revision adds to a result.
const ADDED: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// The mount's freshness settings and the hints they give.
struct Hints {
    suffix: &'static str,
    toml: &'static str,
    ttl_ms: u64,
    scope: &'static str,
}

const HINTS: [Hints; 2] = [
    Hints {
        suffix: "",
        toml: "",
        ttl_ms: 0,
        scope: "private",
    },
    Hints {
        suffix: "-cached",
        toml: "cache_ttl_ms = 60000\ncache_scope = \"public\"\n",
        ttl_ms: 60000,
        scope: "public",
    },
];

/// The calls compared with a 2025 client's, for each upstream kind.
fn calls(kind: Kind) -> Vec<(&'static str, Value)> {
    match kind {
        Kind::Time => vec![("tools/list", json!({}))],
        _ => vec![
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}),
            ),
            ("resources/list", json!({})),
            ("resources/read", json!({"uri": "legacy://counter"})),
            ("resources/templates/list", json!({})),
            ("prompts/list", json!({})),
        ],
    }
}

fn cacheable(method: &str) -> bool {
    matches!(
        method,
        "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// A 2025 client's session through the gateway: its id.
async fn open_2025(url: &str) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "revision-test-2025", "version": "1"}}});
    let answer = post(url, &[], &init).await?;
    answer.ok()?;
    let sid = answer
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("initialize answered without a session id: {answer}"))?
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [("mcp-session-id", sid.as_str())];
    // Its answer is a bare 202 (no JSON), which `post` reports as an error: ignored.
    let _ = post(url, &headers, &initialized).await;
    Ok(sid)
}

/// What the revision's answer adds to the 2025 one: `Err` when anything else differs,
/// byte for byte.
fn added_only(new: &Answer, old: &Answer) -> Result<Map<String, Value>, String> {
    let (Some(new_raw), Some(old_raw)) = (new.raw_result(), old.raw_result()) else {
        return Err(format!("not two results: 2026-07-28 {new}; 2025 {old}"));
    };
    let head = old_raw
        .strip_suffix('}')
        .ok_or_else(|| format!("the 2025 result is not an object: {old_raw}"))?;
    let rest = new_raw.strip_prefix(head).ok_or_else(|| {
        format!(
            "the upstream's bytes differ:\n      2025:       {old_raw}\n      2026-07-28: {new_raw}"
        )
    })?;
    let rest = rest.strip_prefix(',').unwrap_or(rest);
    let added: Map<String, Value> = serde_json::from_str(&format!("{{{rest}"))
        .map_err(|e| format!("what follows the upstream's bytes is not members ({e}): {rest}"))?;
    match added.keys().all(|k| ADDED.contains(&k.as_str())) {
        true => Ok(added),
        false => Err(format!("more than {ADDED:?} added: {rest}")),
    }
}

/// What `result` (2026-07-28) says wrong of `method`'s form under `hints`.
fn form(method: &str, result: &Value, hints: &Hints) -> Result<(), String> {
    if result["resultType"] != "complete" {
        return Err(format!("resultType is {}: {result}", result["resultType"]));
    }
    match cacheable(method) {
        true if result["ttlMs"] != hints.ttl_ms || result["cacheScope"] != hints.scope => {
            Err(format!(
                "ttlMs/cacheScope are {}/{}, not {}/{:?}",
                result["ttlMs"], result["cacheScope"], hints.ttl_ms, hints.scope
            ))
        }
        false if result.get("ttlMs").is_some() || result.get("cacheScope").is_some() => {
            Err(format!("a {method} result is not cacheable: {result}"))
        }
        _ => Ok(()),
    }
}

/// Every result a 2025 upstream gives a client of the revision through the gateway
/// carries `resultType: "complete"`; the listings and `resources/read` carry `ttlMs` and
/// `cacheScope`, the defaults (0, "private") and, on a mount with `cache_ttl_ms = 60000`
/// and `cache_scope = "public"`, those; `tools/call` neither. Everything else is the
/// upstream's result byte for byte, as a 2025 client gets it through the gateway for the
/// same call. The listings an upstream lacks (mcp-server-time has no prompts or
/// resources) are empty, and a read of what does not exist is 400 `-32602` with
/// `data.uri`. On legacy_server.py over stdio, legacy SSE and streamable HTTP, and
/// mcp-server-time over stdio.
#[tokio::test]
async fn answers_take_the_revision_form() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio, Kind::Time, Kind::Sse, Kind::Http];
    let servers = Servers::start(&peers, &kinds).await;
    let mut tables = String::new();
    for kind in kinds {
        for hints in &HINTS {
            let mount = format!("{}{}", kind.mount(), hints.suffix);
            tables.push_str(&servers.table(&peers, kind, &mount, hints.toml));
        }
    }
    let front = Front::start(&peers, "2025 upstreams, two mounts each", None, &tables).await;
    let mut findings = Findings::default();
    for kind in kinds {
        for hints in &HINTS {
            let mount = format!("{}{}", kind.mount(), hints.suffix);
            let url = front.url_of(&mount);
            let at = format!("{} at /{mount}", kind.label());
            let Some(sid) = findings.note(format!("{at}: 2025 session"), open_2025(&url).await)
            else {
                continue;
            };
            let session = [
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            for (i, (method, params)) in calls(kind).into_iter().enumerate() {
                let id = 10 + i as u64;
                let what = format!("{at}: {method} {params}");
                let new = ask_method(&url, id, method, params.clone()).await;
                let Some(new) = findings.note(&what, new) else {
                    continue;
                };
                let Some(result) = findings.note(&what, new.ok().cloned()) else {
                    continue;
                };
                findings.note(&what, form(method, &result, hints));
                let old = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                if let Some(old) = findings.note(
                    format!("{what} (2025 client)"),
                    post(&url, &session, &old).await,
                ) {
                    findings.note(&what, added_only(&new, &old));
                }
            }
            let mut lists = vec![];
            if kind == Kind::Time {
                lists = vec![
                    ("prompts/list", "prompts"),
                    ("resources/list", "resources"),
                    ("resources/templates/list", "resourceTemplates"),
                ];
            }
            for (i, (method, array)) in lists.into_iter().enumerate() {
                let what = format!("{at}: {method} (the gateway's, the upstream has none)");
                let answer = ask_method(&url, 30 + i as u64, method, json!({})).await;
                let verdict = answer.and_then(|a| {
                    let r = a.ok()?;
                    match r[array] == json!([]) {
                        true => form(method, r, hints),
                        false => Err(format!("not an empty {array}: {a}")),
                    }
                });
                findings.note(&what, verdict);
            }
            let missing = match kind {
                Kind::Time => "file:///nowhere",
                _ => "legacy://missing",
            };
            let what = format!("{at}: resources/read of {missing}");
            let answer = ask_method(&url, 40, "resources/read", json!({"uri": missing})).await;
            let verdict = answer.and_then(|a| {
                a.refused(400, -32602, &json!(40))?;
                match a.body["error"]["data"]["uri"] == missing {
                    true => Ok(()),
                    false => Err(format!("no data.uri: {a}")),
                }
            });
            findings.note(&what, verdict);
            let what = format!("{at}: server/discover");
            let answer = ask_method(&url, 50, "server/discover", json!({})).await;
            let verdict = answer.and_then(|a| form("tools/list", a.ok()?, hints));
            findings.note(&what, verdict);
        }
    }
    findings.assert_none(&front, "answers of 2025 upstreams in the revision's form");
    front.gateway.stop().await;
}

/// The tool listing's `ttlMs` and `cacheScope` of `url`, asked with id `id`.
async fn listing_hints(url: &str, id: u64, method: &str) -> Result<(Value, Value), String> {
    let a = ask_method(url, id, method, json!({})).await?;
    let r = a.ok()?;
    Ok((r["ttlMs"].clone(), r["cacheScope"].clone()))
}

/// A tool listing changes with the overlays: the mount file's `tools_list` sets its
/// `ttlMs` and `cacheScope` (the mount's other answers keep the mount's settings), and
/// a file written while the gateway runs takes effect with the reload.
#[tokio::test]
async fn an_overlay_file_sets_the_freshness_of_its_tool_listing() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let servers = Servers::start(&peers, &[Kind::Stdio]).await;
    let overlays = tempfile::tempdir().unwrap();
    let file = overlays.path().join("stdio.toml");
    std::fs::write(&file, "tools_list = { ttl_ms = 5000 }\n").unwrap();
    let mut tables = servers.table(&peers, Kind::Stdio, "stdio", HINTS[1].toml);
    tables.push_str(&servers.table(&peers, Kind::Stdio, "plain", ""));
    let front = Front::start(
        &peers,
        "a mount file's tools_list",
        Some(overlays.path()),
        &tables,
    )
    .await;
    let url = front.url_of("stdio");
    let mut findings = Findings::default();
    let expect = |got: Result<(Value, Value), String>, ttl: u64, scope: &str| {
        got.and_then(|(t, s)| match t == ttl && s == scope {
            true => Ok(()),
            false => Err(format!("ttlMs/cacheScope are {t}/{s}, not {ttl}/{scope}")),
        })
    };
    let tools = listing_hints(&url, 1, "tools/list").await;
    findings.note(
        "tools/list under tools_list = { ttl_ms = 5000 }",
        expect(tools, 5000, "private"),
    );
    let plain = listing_hints(&front.url_of("plain"), 2, "tools/list").await;
    findings.note(
        "tools/list of a mount without a file",
        expect(plain, 0, "private"),
    );
    let resources = listing_hints(&url, 2, "resources/list").await;
    findings.note(
        "resources/list keeps the mount's",
        expect(resources, 60000, "public"),
    );
    std::fs::write(
        &file,
        "[tools_list]\nttl_ms = 7000\ncache_scope = \"public\"\n",
    )
    .unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut last = Err("not asked".to_owned());
    for id in 3.. {
        last = expect(listing_hints(&url, id, "tools/list").await, 7000, "public");
        if last.is_ok() || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    findings.note(
        "tools/list after the file was rewritten (ttl_ms = 7000, public)",
        last,
    );
    findings.assert_none(&front, "a mount file's tools_list");
    front.gateway.stop().await;
}
