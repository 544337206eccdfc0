//! The probe's MCP session: the handshake, every `tools/list` page, and the
//! end of the session.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderValue;
use http_body_util::Full;
use serde_json::{Value, json};

use super::outcome::{Listing, ProbeError, protocol};
use super::prober::Prober;
use super::round_trip::{
    CLIENT_NAME, Conn, HttpConn, PROTOCOL_HEADER, PROTOCOL_VERSION, SESSION_HEADER, error_text,
    http_exchange, http_post, messages_exchange,
};
use crate::upstream::messages::EndedBy;
use crate::upstream::{self, client as up_client};
use mcp_ui_model::config::{Limits, Mount, Transport};
use mcp_ui_model::outcome::UpstreamError;
use mcp_ui_wire::jsonrpc::Kind;

/// Most `tools/list` pages followed: an upstream whose cursors never end must
/// not keep `check` going for ever (a repeated cursor is caught sooner).
pub(crate) const MAX_PAGES: usize = 1000;

/// Lists every tool of `mount`'s upstream: one MCP session, opened and ended
/// here, on behalf of `by`.
pub async fn list_tools(mount: &Mount, limits: &Limits, by: Prober) -> Result<Listing, ProbeError> {
    let connect = Duration::from_secs(limits.connect_timeout_secs);
    let client =
        up_client::client_for(connect, std::slice::from_ref(mount)).map_err(|problems| {
            ProbeError::Ended {
                message: problems.join("; "),
            }
        })?;
    let conn = match &mount.transport {
        Transport::Http { url } => Conn::Http(Box::new(HttpConn {
            client,
            url: url.clone(),
            session: None,
            protocol: None,
        })),
        Transport::Stdio(_) | Transport::Sse { .. } => {
            Conn::Messages(upstream::open_session(mount, limits, &client, None).await?)
        }
    };
    let mut probe = Probe {
        upstream: mount.name.clone(),
        conn,
        next_id: 0,
        timeout: Duration::from_secs(limits.request_timeout_secs),
        connect,
        limit: limits.max_message_bytes,
        by,
    };
    let listing = probe.run().await;
    probe.end().await;
    listing
}

struct Probe {
    upstream: String,
    conn: Conn,
    next_id: u64,
    /// Bound on each request, response body included.
    timeout: Duration,
    /// Bound on the closing DELETE, which nobody waits for the result of.
    connect: Duration,
    /// Largest message accepted.
    limit: usize,
    /// On whose behalf.
    by: Prober,
}

impl Probe {
    async fn run(&mut self) -> Result<Listing, ProbeError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION") },
        });
        let init = self.request("initialize", params).await?;
        let Some(version) = init.get("protocolVersion").and_then(Value::as_str) else {
            return Err(self.protocol("its initialize result has no protocolVersion".into()));
        };
        let version = version.to_owned();
        if let Conn::Http(_) = &self.conn {
            let header = HeaderValue::from_str(&version).map_err(|_| {
                self.protocol(format!("protocolVersion {version:?} is not a header value"))
            })?;
            if let Conn::Http(http) = &mut self.conn {
                http.protocol = Some(header);
            }
        }
        self.notify("notifications/initialized").await?;

        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        loop {
            if seen.len() == MAX_PAGES {
                return Err(self.protocol(format!(
                    "tools/list had more than {MAX_PAGES} pages; gave up"
                )));
            }
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let mut page = self.request("tools/list", params).await?;
            match page.get_mut("tools").map(Value::take) {
                Some(Value::Array(list)) => tools.extend(list),
                _ => {
                    return Err(self.protocol("a tools/list result without a `tools` array".into()));
                }
            }
            match page.get("nextCursor") {
                // Some servers send an empty cursor to mean "no more"; no
                // server can mean a real page by it, so either way it ends.
                None | Some(Value::Null) => break,
                Some(Value::String(next)) if next.is_empty() => break,
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(self.protocol(format!(
                            "tools/list sent the cursor {next:?} twice; its pages never end"
                        )));
                    }
                    cursor = Some(next.clone());
                }
                Some(other) => {
                    return Err(self.protocol(format!("nextCursor {other} is not a string")));
                }
            }
        }
        Ok(Listing {
            server_info: init.get("serverInfo").cloned(),
            protocol_version: version,
            tools,
        })
    }

    /// Ends the session: the DELETE a streamable HTTP server expects (its
    /// answer does not matter, 405 included), or closing the pipe, which
    /// stops a stdio child.
    async fn end(&mut self) {
        match &self.conn {
            Conn::Messages(session) => session.end(EndedBy::Probe, self.by.ending()),
            Conn::Http(http) => {
                let Some(session) = &http.session else {
                    return;
                };
                let mut req = http::Request::delete(http.url.clone())
                    .header(SESSION_HEADER, session.clone())
                    .body(Full::new(Bytes::new()))
                    .expect("valid request");
                if let Some(v) = &http.protocol {
                    req.headers_mut().insert(PROTOCOL_HEADER, v.clone());
                }
                let sent = up_client::send(&http.client, &self.upstream, req, self.connect).await;
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "closing the session failed");
                }
            }
        }
    }

    /// One request; its result, or the error it got.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ProbeError> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let body = Bytes::from(serde_json::to_vec(&body).expect("JSON values serialise"));
        let (timeout, limit) = (self.timeout, self.limit);
        let Probe { upstream, conn, .. } = self;
        let exchange = async {
            match conn {
                Conn::Messages(session) => messages_exchange(session, upstream, id, &body).await,
                Conn::Http(http) => http_exchange(http, upstream, timeout, limit, id, body).await,
            }
        };
        let reply = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| UpstreamError::Timeout {
                upstream: self.upstream.clone(),
                seconds: self.timeout.as_secs(),
            })??;
        if let Some(error) = reply.get("error") {
            return Err(ProbeError::Rpc {
                upstream: self.upstream.clone(),
                method: method.to_owned(),
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_owned(),
            });
        }
        match reply.get("result") {
            Some(result) if result.is_object() => Ok(result.clone()),
            _ => Err(self.protocol(format!("its answer to `{method}` has no result object"))),
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), ProbeError> {
        let body = json!({ "jsonrpc": "2.0", "method": method });
        let body = Bytes::from(serde_json::to_vec(&body).expect("JSON values serialise"));
        let sent = async {
            match &self.conn {
                Conn::Messages(session) => {
                    session
                        .notify(body, Kind::Notification, Some(method), None)
                        .await?;
                }
                Conn::Http(http) => {
                    let resp = http_post(http, &self.upstream, self.timeout, body).await?;
                    let status = resp.status();
                    let text = error_text(resp).await;
                    if !status.is_success() {
                        let detail =
                            format!("POST {} answered {status} to {method}{text}", http.url);
                        return Err(self.protocol(detail));
                    }
                }
            }
            Ok(())
        };
        tokio::time::timeout(self.timeout, sent)
            .await
            .map_err(|_| UpstreamError::Timeout {
                upstream: self.upstream.clone(),
                seconds: self.timeout.as_secs(),
            })?
    }

    fn protocol(&self, detail: String) -> ProbeError {
        protocol(&self.upstream, detail)
    }
}
