//! A widget's domain per host, end to end: sessions opened with the
//! `initialize` requests of ChatGPT and Claude (`tests/hosts/`) through the
//! gateway, in front of a stdio upstream (the bundled demo) and a streamable
//! HTTP one (the fixture), each see the domain in their host's form in
//! `resources/read` and `resources/list`, and the same widget URI in
//! `tools/list`. Sessionless (2026-07-28) requests are judged by the client
//! named in their `_meta`.

use std::path::Path;

use hyper::StatusCode;
use hyper::header::HeaderMap;
use mcp_ui_model::config::{AppConfig, Config, MemberConfig};
use serde_json::{Value, json};
use support::clients::{parse_sse, post_json};
use support::gateway::{self as gw, TestGateway};
use support::upstreams::{HttpFlavor, start_http};

use crate::support;

const PUBLIC_URL: &str = "https://gw.example.com";
const CHATGPT: &str = "https://board.example.com";
const OTHER: &str = "board.example.org";

/// Claude's domain for each mount: the first 32 hex digits of the SHA-256 of
/// its public endpoint URL, computed apart with
/// `python3 -c 'import hashlib; print(hashlib.sha256(b"<URL>").hexdigest()[:32])'`.
const CLAUDE_DEMO: &str = "d09f65ea923dca2e741f25e808b9685b.claudemcpcontent.com"; // https://gw.example.com/demo/mcp
const CLAUDE_FIXTURE: &str = "7f6f5115050caa55099736b1a5536223.claudemcpcontent.com"; // https://gw.example.com/fixture/mcp
const CLAUDE_APP: &str = "d955f199333d6c37bc6c4837a80f2113.claudemcpcontent.com"; // https://gw.example.com/wapp/mcp

fn recorded(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hosts")
        .join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// An overlay directory: one widget with per-host domains (none for
/// Claude, whose is derived), rendered by a tool of each upstream.
fn overlays(dir: &Path) {
    let widget = dir.join("widgets/board");
    std::fs::create_dir_all(&widget).unwrap();
    std::fs::write(widget.join("index.html"), "<p>board</p>").unwrap();
    std::fs::write(
        widget.join("widget.toml"),
        format!(
            "domain = {{ chatgpt = \"{CHATGPT}\", other = \"{OTHER}\" }}\nprefers_border = true\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("demo.toml"),
        "[tools.list_tasks]\nwidget = \"board\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("fixture.toml"),
        "[tools.echo]\nwidget = \"board\"\n",
    )
    .unwrap();
}

/// The JSON-RPC response in an answer, JSON or SSE (the one with an id).
fn response(headers: &HeaderMap, body: &[u8]) -> Value {
    let sse = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !sse {
        return serde_json::from_slice(body).unwrap();
    }
    parse_sse(body)
        .iter()
        .filter_map(|e| e.json().ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {}", String::from_utf8_lossy(body)))
}

/// A client session: its id, and the protocol version it settled on.
struct Session {
    url: String,
    id: String,
    version: String,
}

impl Session {
    /// `initialize` with `body` (and `user_agent`, if any), then
    /// `notifications/initialized`.
    async fn open(url: &str, body: &Value, user_agent: Option<&str>) -> Session {
        let mut headers = Vec::new();
        if let Some(agent) = user_agent {
            headers.push(("user-agent", agent));
        }
        let (status, h, b) = post_json(url, &headers, body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&b));
        let id = h.get("mcp-session-id").expect("a session id");
        let version = response(&h, &b)["result"]["protocolVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let session = Session {
            url: url.to_owned(),
            id: id.to_str().unwrap().to_owned(),
            version,
        };
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let (status, _, _) = post_json(url, &session.headers(), note.to_string()).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        session
    }

    /// Later requests carry no `User-Agent`: the session id says who the
    /// host is.
    fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", self.version.as_str()),
        ]
    }

    async fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (status, h, b) = post_json(&self.url, &self.headers(), body.to_string()).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{method}: {}",
            String::from_utf8_lossy(&b)
        );
        let message = response(&h, &b);
        assert!(message.get("result").is_some(), "{method}: {message}");
        message["result"].clone()
    }

    /// The widget URI `tool` lists, and the `_meta` of that widget in
    /// `resources/read` and in `resources/list` (which must agree).
    async fn widget(&self, tool: &str) -> (String, Value) {
        let list = self.request(1, "tools/list", json!({})).await;
        let tool = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("{tool} not listed: {list}"));
        let uri = tool["_meta"]["ui"]["resourceUri"]
            .as_str()
            .unwrap()
            .to_owned();
        let read = self
            .request(2, "resources/read", json!({ "uri": uri }))
            .await;
        let meta = read["contents"][0]["_meta"].clone();
        let listed = self.request(3, "resources/list", json!({})).await;
        let entry = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == uri.as_str())
            .unwrap_or_else(|| panic!("{uri} not in resources/list: {listed}"));
        assert_eq!(entry["_meta"], meta, "list entry and read content agree");
        (uri, meta)
    }
}

/// `(ui.domain, openai/widgetDomain)`.
fn domains(meta: &Value) -> (Option<&str>, Option<&str>) {
    (
        meta["ui"]["domain"].as_str(),
        meta["openai/widgetDomain"].as_str(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_sees_the_widget_domain_in_its_form() {
    let fixture = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    overlays(dir.path());
    let gateway = TestGateway::start_with(Config {
        upstreams: vec![gw::demo_stdio("demo"), gw::http("fixture", &fixture.url)],
        overlays: dir.path().to_owned(),
        public_url: Some(PUBLIC_URL.into()),
        // An app over both: Claude connects to the app's URL, and its
        // widget domain is hashed from that URL, not a member's.
        apps: vec![AppConfig {
            name: "wapp".into(),
            path: None,
            upstreams: vec![
                MemberConfig::Name("demo".into()),
                MemberConfig::Table {
                    upstream: "fixture".into(),
                    prefix: Some("fx_".into()),
                },
            ],
            auth: None,
        }],
        ..gw::test_config()
    })
    .await;
    let chatgpt_init = recorded("chatgpt-initialize.json");
    let claude_init = recorded("claude-initialize.json");
    let mut other_init = chatgpt_init.clone();
    other_init["params"]["clientInfo"] = json!({ "name": "mcp-inspector", "version": "0.17.0" });

    for (mount, tool, claude) in [
        ("/demo/mcp", "list_tasks", CLAUDE_DEMO),
        ("/fixture/mcp", "echo", CLAUDE_FIXTURE),
        ("/wapp/mcp", "list_tasks", CLAUDE_APP),
        ("/wapp/mcp", "fx_echo", CLAUDE_APP),
    ] {
        let url = gateway.url_for(mount);
        let chatgpt = Session::open(&url, &chatgpt_init, None).await;
        let (uri, meta) = chatgpt.widget(tool).await;
        assert_eq!(
            domains(&meta),
            (Some(CHATGPT), Some(CHATGPT)),
            "{mount}: {meta}"
        );
        assert_eq!(meta["ui"]["prefersBorder"], true);

        let claude_session = Session::open(&url, &claude_init, Some("Claude-User")).await;
        let (claude_uri, meta) = claude_session.widget(tool).await;
        assert_eq!(claude_uri, uri, "one URI for every host");
        // Claude reads no openai/* key; its domain is a bare host name.
        assert_eq!(domains(&meta), (Some(claude), None), "{mount}: {meta}");
        assert_eq!(meta["ui"]["prefersBorder"], true);

        let other = Session::open(&url, &other_init, None).await;
        let (_, meta) = other.widget(tool).await;
        let origin = format!("https://{OTHER}");
        assert_eq!(
            domains(&meta),
            (Some(OTHER), Some(origin.as_str())),
            "{mount}: {meta}"
        );

        // Sessionless (2026-07-28): the client in each request's _meta.
        for (name, expected) in [
            ("claude-ai", (Some(claude), None)),
            ("openai-mcp", (Some(CHATGPT), Some(CHATGPT))),
        ] {
            let read = json!({
                "jsonrpc": "2.0", "id": 9, "method": "resources/read",
                "params": { "uri": uri, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": { "name": name, "version": "1" },
                    "io.modelcontextprotocol/clientCapabilities": {}
                } }
            });
            let headers = [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "resources/read"),
                ("mcp-name", uri.as_str()),
            ];
            let (status, h, b) = post_json(&url, &headers, read.to_string()).await;
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&b));
            let meta = &response(&h, &b)["result"]["contents"][0]["_meta"];
            assert_eq!(
                domains(meta),
                expected,
                "{mount} sessionless {name}: {meta}"
            );
        }
    }
    gateway.shutdown().await;
    fixture.shutdown().await;
}
