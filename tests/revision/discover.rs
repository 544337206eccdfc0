//! `server/discover` for every kind of 2025 upstream: written by the gateway from the
//! upstream's `initialize` answer, in the revision's form, with capabilities that say
//! what answers; as a client of the revision asks it and as two hosts do.

use serde_json::{Value, json};

use super::{
    Answer, Findings, Front, Kind, META_CAPABILITIES, META_CLIENT_INFO, META_SERVER_INFO,
    META_VERSION, REVISION, Servers, ask, meta, post,
};
use crate::support::peers::setup;

/// Who asks.
#[derive(Clone, Copy, Debug)]
enum Asker {
    /// A client of the revision: its headers and `_meta`.
    Revision,
    /// Claude's connector: `server/discover` with only its User-Agent (no MCP header)
    /// and claude-ai's `_meta` (tests/host_replays.rs, `claude_never_echoes`).
    Claude,
    /// OpenAI's scanner: ChatGPT's User-Agent, a 2025 `MCP-Protocol-Version` and the
    /// revision's `_meta` with the UI extension, as ChatGPT's tool plane sends them.
    Scanner,
}

impl Asker {
    fn meta(self) -> Value {
        match self {
            Asker::Revision => meta(json!({})),
            Asker::Claude => json!({
                META_VERSION: REVISION,
                META_CLIENT_INFO: {"name": "claude-ai", "version": "0.1.0"},
                META_CAPABILITIES: {},
            }),
            Asker::Scanner => json!({
                META_VERSION: REVISION,
                META_CLIENT_INFO: {"name": "openai-mcp", "version": "1.0.0"},
                META_CAPABILITIES: {"extensions": {"io.modelcontextprotocol/ui":
                    {"mimeTypes": ["text/html;profile=mcp-app"]}}},
            }),
        }
    }

    async fn send(self, url: &str, id: u64, method: &str, params: Value) -> Result<Answer, String> {
        let mut params = params;
        params["_meta"] = self.meta();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self {
            Asker::Revision => ask(url, &body).await,
            Asker::Claude => post(url, &[("user-agent", "Claude-User")], &body).await,
            Asker::Scanner => {
                let headers = [
                    ("user-agent", "openai-mcp/1.0.0"),
                    ("mcp-protocol-version", "2025-11-25"),
                ];
                post(url, &headers, &body).await
            }
        }
    }
}

/// What a `server/discover` result lacks of the revision's form, for `kind`.
fn discover_form(kind: Kind, result: &Value) -> Result<(), String> {
    let mut wrong = Vec::new();
    let versions = result["supportedVersions"].as_array();
    if !versions.is_some_and(|v| v.iter().any(|v| v == REVISION)) {
        wrong.push(format!("supportedVersions lacks {REVISION}"));
    }
    let info = &result["_meta"][META_SERVER_INFO];
    if info["name"] != kind.server_name() || !info["version"].is_string() {
        wrong.push(format!(
            "_meta[{META_SERVER_INFO}] is {info}, not {}'s name and version",
            kind.server_name()
        ));
    }
    if result["resultType"] != "complete" {
        wrong.push(format!("resultType is {}", result["resultType"]));
    }
    if result["ttlMs"] != 0 || result["cacheScope"] != "private" {
        wrong.push(format!(
            "ttlMs/cacheScope are {}/{}, not the defaults 0/\"private\"",
            result["ttlMs"], result["cacheScope"]
        ));
    }
    if !result["capabilities"].is_object() {
        wrong.push("no capabilities object".into());
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}; result: {result}", wrong.join("; "))),
    }
}

/// Each capability, the methods it declares and the array each answers with.
const LISTINGS: &[(&str, &str, &str)] = &[
    ("tools", "tools/list", "tools"),
    ("prompts", "prompts/list", "prompts"),
    ("resources", "resources/list", "resources"),
    ("resources", "resources/templates/list", "resourceTemplates"),
];

/// A capability is declared exactly when its methods answer: each listing answers a
/// result with its array when declared and 404 `-32601` when not; `completion/complete`
/// likewise with `completions`.
async fn capabilities_match(
    asker: Asker,
    url: &str,
    capabilities: &Value,
    findings: &mut Findings,
    what: &str,
) {
    for (i, (capability, method, array)) in LISTINGS.iter().enumerate() {
        let id = 200 + i as u64;
        let declared = capabilities.get(*capability).is_some();
        let answer = asker.send(url, id, method, json!({})).await;
        let verdict = answer.and_then(|a| match declared {
            true => match a.ok()?[*array].is_array() {
                true => Ok(()),
                false => Err(format!("declared, but answers without {array:?}: {a}")),
            },
            false => a
                .refused(404, -32601, &json!(id))
                .map(|_| ())
                .map_err(|e| format!("not declared, so -32601 was due: {e}")),
        });
        findings.note(format!("{what}: {capability} ({method})"), verdict);
    }
    let complete = json!({"ref": {"type": "ref/prompt", "name": "none"},
        "argument": {"name": "a", "value": "b"}});
    let answer = asker.send(url, 250, "completion/complete", complete).await;
    let verdict = answer.and_then(|a| match capabilities.get("completions").is_some() {
        true => a.ok().map(|_| ()),
        false => a
            .refused(404, -32601, &json!(250))
            .map(|_| ())
            .map_err(|e| format!("completions not declared, so -32601 was due: {e}")),
    });
    findings.note(format!("{what}: completion/complete"), verdict);
}

/// `server/discover` on every kind of 2025 upstream (legacy_server.py over stdio, legacy
/// SSE, and streamable HTTP with and without sessions; mcp-server-time over stdio) is
/// answered 200 in the revision's form: `supportedVersions` with 2026-07-28, the
/// upstream's `serverInfo` in `_meta`, `resultType`, `ttlMs` and `cacheScope`; its
/// capabilities say what answers (tools, prompts and resources answer their listings, and
/// `completion/complete`, not declared, answers 404 `-32601`). The same for Claude's
/// connector (no MCP header at all) and for OpenAI's scanner, which asks every listing
/// discover declares: each is a result.
#[tokio::test]
async fn discover_for_every_upstream_kind() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [
        Kind::Stdio,
        Kind::Time,
        Kind::Sse,
        Kind::Http,
        Kind::Stateless,
    ];
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::of(&peers, &servers, &kinds, None, "").await;
    let mut findings = Findings::default();
    for kind in kinds {
        let url = front.url(kind);
        for asker in [Asker::Revision, Asker::Claude, Asker::Scanner] {
            let what = format!("{} ({asker:?})", kind.label());
            let answer = asker.send(&url, 1, "server/discover", json!({})).await;
            let Some(result) = findings.note(
                format!("{what}: server/discover"),
                answer.and_then(|a| a.ok().cloned()),
            ) else {
                continue;
            };
            findings.note(
                format!("{what}: server/discover"),
                discover_form(kind, &result),
            );
            if !matches!(asker, Asker::Claude) {
                capabilities_match(asker, &url, &result["capabilities"], &mut findings, &what)
                    .await;
            }
        }
    }
    findings.assert_none(&front, "server/discover for 2025 upstreams");
    front.gateway.stop().await;
}
