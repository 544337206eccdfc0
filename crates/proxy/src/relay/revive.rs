//! A streamable HTTP session opened again: the upstream answered 404 for
//! the session a client's id carries, so the gateway sends the upstream the
//! client's `initialize` again (as the id says the client sent it), then
//! `notifications/initialized`, and remembers the new session in place of
//! the old ([`mcp_ui_upstream::session::reopened`]). The request the upstream refused
//! never reached it: the relay sends it again on the new session.

use bytes::Bytes;
use http::header::HeaderValue;
use http_body_util::BodyExt;
use serde_json::Value;

use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER};
use mcp_ui_model::outcome::{Failure, UpstreamError};
use mcp_ui_upstream::upstream::client::send;
use mcp_ui_wire::protocol;

/// Open a session in place of `stale`, whose upstream answered 404.
pub async fn reopen(cx: &Ctx<'_>, stale: &str) -> Result<(), Failure> {
    let gw = cx.gw;
    let hello = cx.hello.clone().unwrap_or_default();
    let params = hello.initialize_params(protocol::LATEST_HANDSHAKE);
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":"mcp-ui-gateway/initialize","method":"initialize","params":{params}}}"#
    );
    let req = super::forward::request_for(cx, http::Method::POST, Bytes::from(init), None);
    let resp = send(
        &gw.upstreams.client,
        cx.upstream(),
        req,
        gw.handshake_timeout(),
    )
    .await
    .map_err(Failure::Upstream)?;
    let status = resp.status();
    let sid = resp.headers().get(SESSION_HEADER).cloned();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| {
            refused(
                cx,
                format!("its answer to initialize could not be read: {e}"),
            )
        })?
        .to_bytes();
    let Some(sid) = sid.filter(|_| status.is_success()) else {
        return Err(refused(
            cx,
            format!("it answered HTTP {status} with no session to an initialize"),
        ));
    };
    let version = answer_version(&body).unwrap_or_else(|| protocol::LATEST_HANDSHAKE.to_owned());
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let mut req = super::forward::request_for(cx, http::Method::POST, initialized, Some(&sid));
    if let Ok(v) = HeaderValue::from_str(&version) {
        req.headers_mut().insert(PROTOCOL_HEADER, v);
    }
    req.headers_mut().remove(super::context::METHOD_HEADER);
    req.headers_mut().remove(super::context::NAME_HEADER);
    if let Ok(resp) = send(
        &gw.upstreams.client,
        cx.upstream(),
        req,
        gw.handshake_timeout(),
    )
    .await
    {
        let _ = resp.into_body().collect().await;
    }
    let new = sid
        .to_str()
        .map_err(|_| refused(cx, "its session id is not text".into()))?;
    gw.pending
        .reopened
        .insert(cx.mount.index, stale, new.to_owned());
    gw.upstreams.pools[cx.mount.index].count_revived();
    tracing::info!(upstream = %cx.upstream(), "the upstream forgot a client's session; opened another in its place");
    Ok(())
}

/// The revision an `initialize` answer (JSON, or the events of an SSE
/// answer) settled on.
fn answer_version(body: &[u8]) -> Option<String> {
    let of = |v: &Value| {
        v.get("result")?
            .get("protocolVersion")?
            .as_str()
            .map(str::to_owned)
    };
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return of(&v);
    }
    let mut parser = mcp_ui_wire::sse::Parser::new(body.len() + 1);
    parser.push(body);
    while let Ok(Some(ev)) = parser.next_event() {
        if let Ok(v) = serde_json::from_str::<Value>(&ev.data)
            && let Some(version) = of(&v)
        {
            return Some(version);
        }
    }
    None
}

fn refused(cx: &Ctx<'_>, detail: String) -> Failure {
    Failure::Upstream(UpstreamError::Protocol {
        upstream: cx.upstream().to_owned(),
        detail: format!("its session was gone and a new one could not be opened: {detail}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_is_read_from_json_and_sse_answers() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#;
        assert_eq!(answer_version(json).as_deref(), Some("2025-06-18"));
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-03-26\"}}\n\n";
        assert_eq!(answer_version(sse).as_deref(), Some("2025-03-26"));
        assert_eq!(answer_version(b"junk"), None);
    }
}
