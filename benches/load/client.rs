//! The load client: a minimal MCP client over streamable HTTP (hyper, one
//! keep-alive connection per session, plain or TLS; JSON or SSE responses) and over stdio
//! (a child per session, one message per line).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The sessionless revision: no `initialize`, every request declares itself.
pub const REVISION_2026: &str = "2026-07-28";
/// How long any one exchange may take before it counts as an error.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a session goes.
#[derive(Clone, Debug)]
pub enum Target {
    /// `host` is the `Host` header (the URL's authority); over TLS when
    /// `tls` is given.
    Http {
        addr: SocketAddr,
        host: String,
        path: String,
        tls: Option<Arc<rustls::ClientConfig>>,
        /// Sent as `Authorization: Bearer …` on every request.
        bearer: Option<String>,
        /// Speak the 2026-07-28 revision, as ChatGPT calls: no `initialize`
        /// and no session id; every request carries the `_meta` envelope
        /// and `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`.
        sessionless: bool,
    },
    Stdio {
        program: PathBuf,
        args: Vec<String>,
    },
}

pub struct Session {
    next_id: u64,
    conn: Conn,
}

enum Conn {
    Http {
        sender: SendRequest<Full<Bytes>>,
        host: String,
        path: String,
        session: Option<String>,
        authorization: Option<String>,
        sessionless: bool,
    },
    Stdio {
        // Held so the child lives (and is killed on drop) with the session.
        _child: Box<Child>,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
        line: Vec<u8>,
    },
}

#[derive(Deserialize)]
struct Reply {
    id: Option<u64>,
    result: Option<Outcome>,
    error: Option<serde_json::Value>,
}

/// Of a result, whether a tool said it failed.
#[derive(Deserialize)]
struct Outcome {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

type Error = String;

impl Session {
    /// Connect (or start the child) and complete the MCP handshake:
    /// `initialize`, the session id, `notifications/initialized`.
    pub async fn open(target: &Target) -> Result<Session, Error> {
        let conn = match target {
            Target::Http {
                addr,
                host,
                path,
                tls,
                bearer,
                sessionless,
            } => {
                let sender = crate::tls::connect(*addr, tls.as_ref()).await?;
                let conn = Conn::Http {
                    sender,
                    host: host.clone(),
                    path: path.clone(),
                    session: None,
                    authorization: bearer.as_ref().map(|t| format!("Bearer {t}")),
                    sessionless: *sessionless,
                };
                if *sessionless {
                    return Ok(Session { next_id: 0, conn });
                }
                conn
            }
            Target::Stdio { program, args } => {
                let mut child = Command::new(program)
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| format!("spawn {}: {e}", program.display()))?;
                let stdin = child.stdin.take().expect("piped");
                let stdout =
                    BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));
                Conn::Stdio {
                    _child: Box::new(child),
                    stdin,
                    stdout,
                    line: Vec::with_capacity(4096),
                }
            }
        };
        let mut s = Session { next_id: 0, conn };
        let init = format!(
            r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcp-ui-gateway-load","version":"0.0.0"}}}}"#
        );
        s.request("initialize", &init).await?;
        s.notify("notifications/initialized").await?;
        Ok(s)
    }

    /// Start another session on this session's connection (HTTP only): a
    /// new `initialize` and `notifications/initialized`; later requests
    /// belong to the new session.
    pub async fn restart(&mut self) -> Result<(), Error> {
        if let Conn::Http { session, .. } = &mut self.conn {
            *session = None;
        }
        let init = format!(
            r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcp-ui-gateway-load","version":"0.0.0"}}}}"#
        );
        self.request("initialize", &init).await?;
        self.notify("notifications/initialized").await
    }

    /// Whether the server closed this session's connection (HTTP only): no
    /// later request on it can succeed.
    pub fn closed(&self) -> bool {
        match &self.conn {
            Conn::Http { sender, .. } => sender.is_closed(),
            Conn::Stdio { .. } => false,
        }
    }

    /// Send `Authorization: Bearer token` on this session's requests from
    /// now on (HTTP only): the next [`Session::restart`] is another
    /// caller's session on the same connection.
    pub fn set_bearer(&mut self, token: &str) {
        if let Conn::Http { authorization, .. } = &mut self.conn {
            *authorization = Some(format!("Bearer {token}"));
        }
    }

    /// One request; returns the size of the response message on success.
    pub async fn request(&mut self, method: &str, params: &str) -> Result<usize, Error> {
        self.request_raw(method, params).await.map(|(n, _)| n)
    }

    /// One request over HTTP; returns the whole response body as text.
    pub async fn request_text(&mut self, method: &str, params: &str) -> Result<String, Error> {
        self.request_raw(method, params)
            .await
            .map(|(_, body)| String::from_utf8_lossy(&body).into_owned())
    }

    async fn request_raw(&mut self, method: &str, params: &str) -> Result<(usize, Bytes), Error> {
        self.next_id += 1;
        let id = self.next_id;
        // Only a call of the revision names what it calls in a header.
        let (body, name) = match &self.conn {
            Conn::Http {
                sessionless: true, ..
            } => (revision_body(id, method, params)?, named(method, params)),
            _ => (
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#),
                None,
            ),
        };
        let call = Some((id, method, name));
        match tokio::time::timeout(EXCHANGE_TIMEOUT, self.exchange(body.into_bytes(), call)).await {
            Ok(r) => r,
            Err(_) => Err(format!("{method}: no response in {EXCHANGE_TIMEOUT:?}")),
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), Error> {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
        match tokio::time::timeout(EXCHANGE_TIMEOUT, self.exchange(body.into_bytes(), None)).await {
            Ok(r) => r.map(drop),
            Err(_) => Err(format!("{method}: not accepted in {EXCHANGE_TIMEOUT:?}")),
        }
    }

    /// End the session: DELETE over HTTP (so a bridge can stop its child),
    /// closing stdin over stdio.
    pub async fn close(self) {
        match self.conn {
            Conn::Http {
                mut sender,
                host,
                path,
                session: Some(session),
                authorization,
                ..
            } => {
                let mut req = http::Request::delete(path)
                    .header("host", host)
                    .header("mcp-session-id", session)
                    .header("mcp-protocol-version", PROTOCOL_VERSION);
                if let Some(a) = authorization {
                    req = req.header("authorization", a);
                }
                let req = req.body(Full::new(Bytes::new())).unwrap();
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), sender.send_request(req)).await;
            }
            Conn::Http { .. } => {}
            Conn::Stdio { stdin, .. } => drop(stdin),
        }
    }

    /// Send `body`; `call` is the request's id, method and the name it
    /// calls (none for a notification).
    async fn exchange(
        &mut self,
        body: Vec<u8>,
        call: Option<(u64, &str, Option<String>)>,
    ) -> Result<(usize, Bytes), Error> {
        let id = call.as_ref().map(|(id, _, _)| *id);
        match &mut self.conn {
            Conn::Http {
                sender,
                host,
                path,
                session,
                authorization,
                sessionless,
            } => {
                let mut req = http::Request::post(path.as_str())
                    .header("host", host.as_str())
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream");
                if let Some(a) = authorization.as_deref() {
                    req = req.header("authorization", a);
                }
                if let Some(s) = session.as_deref() {
                    req = req
                        .header("mcp-session-id", s)
                        .header("mcp-protocol-version", PROTOCOL_VERSION);
                }
                if *sessionless && let Some((_, method, name)) = &call {
                    req = req
                        .header("mcp-protocol-version", REVISION_2026)
                        .header("mcp-method", *method);
                    if let Some(name) = name {
                        req = req.header("mcp-name", name.as_str());
                    }
                }
                let req = req.body(Full::new(Bytes::from(body))).unwrap();
                sender
                    .ready()
                    .await
                    .map_err(|e| format!("connection: {e}"))?;
                let resp = sender
                    .send_request(req)
                    .await
                    .map_err(|e| format!("request: {e}"))?;
                let status = resp.status();
                if session.is_none()
                    && let Some(s) = resp.headers().get("mcp-session-id")
                {
                    *session = Some(s.to_str().map_err(|e| e.to_string())?.to_owned());
                }
                let sse = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.starts_with("text/event-stream"));
                let bytes = resp
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| format!("body: {e}"))?
                    .to_bytes();
                let Some(id) = id else {
                    return if status.is_success() {
                        Ok((0, bytes))
                    } else {
                        Err(format!("notification answered {status}"))
                    };
                };
                if !status.is_success() {
                    return Err(format!(
                        "HTTP {status}: {}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                    ));
                }
                let n = if sse {
                    check_sse(&bytes, id)?
                } else {
                    check(&bytes, id)?
                };
                Ok((n, bytes))
            }
            Conn::Stdio {
                stdin,
                stdout,
                line,
                ..
            } => {
                let mut body = body;
                body.push(b'\n');
                stdin
                    .write_all(&body)
                    .await
                    .map_err(|e| format!("stdin: {e}"))?;
                stdin.flush().await.map_err(|e| format!("stdin: {e}"))?;
                let Some(id) = id else {
                    return Ok((0, Bytes::new()));
                };
                loop {
                    line.clear();
                    let n = stdout
                        .read_until(b'\n', line)
                        .await
                        .map_err(|e| format!("stdout: {e}"))?;
                    if n == 0 {
                        return Err("stdout closed".into());
                    }
                    match check(line.trim_ascii(), id) {
                        Err(e) if e.starts_with("not the response") => continue,
                        r => return r.map(|n| (n, Bytes::new())),
                    }
                }
            }
        }
    }
}

/// A request of the 2026-07-28 revision: `params` (a JSON object) with the
/// `_meta` envelope every request of the revision carries.
fn revision_body(id: u64, method: &str, params: &str) -> Result<String, Error> {
    let rest = params
        .trim_start()
        .strip_prefix('{')
        .ok_or_else(|| format!("{method}: params must be an object, not {params}"))?;
    let sep = if rest.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    Ok(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{REVISION_2026}","io.modelcontextprotocol/clientInfo":{{"name":"mcp-ui-gateway-load","version":"0.0.0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}{sep}{rest}}}"#
    ))
}

/// What `Mcp-Name` carries for `method`: the tool's or prompt's name, or
/// the resource's URI.
fn named(method: &str, params: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        name: Option<String>,
        uri: Option<String>,
    }
    let named: Named = serde_json::from_str(params).ok()?;
    match method {
        "tools/call" | "prompts/get" => named.name,
        "resources/read" => named.uri,
        _ => None,
    }
}

/// The message must be the response to `id`, with a result.
fn check(msg: &[u8], id: u64) -> Result<usize, Error> {
    let reply: Reply = serde_json::from_slice(msg).map_err(|e| {
        format!(
            "bad JSON ({e}): {}",
            String::from_utf8_lossy(&msg[..msg.len().min(200)])
        )
    })?;
    if reply.id != Some(id) {
        return Err(format!("not the response to {id}"));
    }
    if let Some(e) = reply.error {
        return Err(format!("JSON-RPC error: {e}"));
    }
    match reply.result {
        None => return Err("response without result".into()),
        Some(Outcome { is_error: true }) => {
            return Err(format!(
                "the tool failed (isError): {}",
                String::from_utf8_lossy(&msg[..msg.len().min(200)])
            ));
        }
        Some(_) => {}
    }
    Ok(msg.len())
}

/// The SSE stream must carry the response to `id` in one of its events.
fn check_sse(body: &[u8], id: u64) -> Result<usize, Error> {
    let text = std::str::from_utf8(body).map_err(|e| format!("SSE not UTF-8: {e}"))?;
    let mut last = String::from("no event in the SSE response");
    for event in text.split("\n\n") {
        let mut data = String::new();
        for line in event.lines() {
            if let Some(d) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        if data.is_empty() {
            continue;
        }
        match check(data.as_bytes(), id) {
            Ok(n) => return Ok(n),
            Err(e) => last = e,
        }
    }
    Err(last)
}
