//! The gateway's own opening of an upstream connection: an `initialize`
//! (then `notifications/initialized`) for a connection of the handshake era,
//! a `server/discover` for one of the 2026-07-28 envelope era. A connection
//! the gateway opens for several clients, or opens again for a client whose
//! connection is gone, starts here; the result is what the gateway answers
//! a client's `initialize` with when it starts nothing for it.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::messages::{Delivery, MessageSession};
use mcp_ui_model::outcome::{Failure, UpstreamError};
use mcp_ui_wire::jsonrpc::{self, Kind};
use mcp_ui_wire::protocol;

/// What the upstream answered the gateway's `initialize`.
#[derive(Debug)]
pub struct Handshake {
    /// The whole response, as the upstream wrote it.
    pub reply: Bytes,
    /// The `result` object, as the upstream wrote it.
    pub result: Box<RawValue>,
    /// The revision it settled on.
    pub version: String,
    /// Where in `reply` its id and its `protocolVersion` value are (found
    /// once: every local answer splices them).
    spans: Option<(Range<usize>, Range<usize>)>,
}

impl Handshake {
    pub fn new(reply: Bytes, result: Box<RawValue>, version: String) -> Handshake {
        let spans = spans(&reply);
        Handshake {
            reply,
            result,
            version,
            spans,
        }
    }

    /// The answer to a client's `initialize` with request id `id` that asked
    /// for revision `asked`: the upstream's result, speaking the revision
    /// [`protocol::negotiate`] picks for both.
    pub fn answer(&self, id: &RawValue, asked: &str) -> Bytes {
        let version = protocol::negotiate(asked, &self.version);
        match &self.spans {
            Some(spans) => self.spliced(spans, id, version),
            None => self.rebuilt(id, version),
        }
    }

    /// The upstream's own response with only the id (and, for a client of
    /// an older revision, the `protocolVersion` value) changed: its key
    /// order, spacing and every other byte kept.
    fn spliced(
        &self,
        (id_at, version_at): &(Range<usize>, Range<usize>),
        id: &RawValue,
        version: &str,
    ) -> Bytes {
        let version = match version == self.version {
            true => &self.reply[version_at.clone()],
            false => &serde_json::to_vec(version).expect("strings serialise")[..],
        };
        let mut parts = [
            (id_at.clone(), id.get().as_bytes()),
            (version_at.clone(), version),
        ];
        let out = jsonrpc::splice_spans(&self.reply, &mut parts)
            .expect("spans found in the reply, apart");
        Bytes::from(out)
    }

    /// The answer in the gateway's own envelope, for a response the
    /// upstream wrote in a shape [`Self::spliced`] cannot keep.
    fn rebuilt(&self, id: &RawValue, version: &str) -> Bytes {
        let result = match version == self.version {
            true => self.result.get().to_owned(),
            false => match serde_json::from_str::<Value>(self.result.get()) {
                Ok(Value::Object(mut o)) => {
                    o.insert("protocolVersion".into(), Value::String(version.to_owned()));
                    Value::Object(o).to_string()
                }
                _ => self.result.get().to_owned(),
            },
        };
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
            id.get()
        ))
    }
}

/// Where the id and the result's `protocolVersion` value are in `reply`;
/// `None` for a reply in a shape that cannot be spliced (a duplicate key).
fn spans(reply: &[u8]) -> Option<(Range<usize>, Range<usize>)> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
        #[serde(borrow)]
        result: Versioned<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Versioned<'a> {
        #[serde(borrow, rename = "protocolVersion")]
        version: &'a RawValue,
    }
    let e: Envelope<'_> = serde_json::from_slice(reply).ok()?;
    let id = jsonrpc::span_in(reply, e.id)?;
    let version = jsonrpc::span_in(reply, e.result.version)?;
    // Apart, as a JSON object's values are.
    (id.end <= version.start || version.end <= id.start).then_some((id, version))
}

/// Send `initialize` with `params`, then `notifications/initialized`;
/// bounded by `timeout`.
pub async fn initialize(
    session: &Arc<MessageSession>,
    params: &Value,
    timeout: Duration,
) -> Result<Handshake, Failure> {
    let reply = ask(session, "initialize", params, timeout).await?;
    let result = reply_result(session, "initialize", &reply)?;
    let version = serde_json::from_str::<Value>(result.get())
        .ok()
        .and_then(|r| r.get("protocolVersion")?.as_str().map(str::to_owned))
        .ok_or_else(|| {
            protocol_error(
                session,
                "its initialize result names no protocolVersion".into(),
            )
        })?;
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    session
        .notify(
            initialized,
            Kind::Notification,
            Some("notifications/initialized"),
            None,
        )
        .await?;
    Ok(Handshake::new(reply, result, version))
}

/// Ask `server/discover` under the 2026-07-28 envelope: the result when the
/// upstream speaks that revision, `None` when it answers an error (it
/// speaks only the handshake era).
pub async fn discover(
    session: &Arc<MessageSession>,
    timeout: Duration,
) -> Result<Option<Box<RawValue>>, Failure> {
    let params = json!({ "_meta": {
        protocol::META_PROTOCOL_VERSION: protocol::ENVELOPE,
        "io.modelcontextprotocol/clientInfo": {
            "name": "mcp-ui-gateway",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    let reply = ask(session, "server/discover", &params, timeout).await?;
    let speaks = jsonrpc::classify_one(&reply)
        .ok()
        .and_then(|m| m.result.map(|r| r.to_owned()));
    Ok(speaks)
}

/// One request of the gateway's own, and its response.
async fn ask(
    session: &Arc<MessageSession>,
    method: &str,
    params: &Value,
    timeout: Duration,
) -> Result<Bytes, Failure> {
    // The first message of a new connection: the id clients use for theirs.
    let id = 1;
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    // The id as found in the message: a shared connection splices it.
    let parsed =
        jsonrpc::classify_one(body.as_bytes()).expect("the gateway's own request is JSON-RPC");
    let raw_id = parsed.id.expect("a request has an id");
    let (mut rx, guard) = session.request_own(body.as_bytes(), raw_id)?;
    let wait = async {
        while let Some(d) = rx.recv().await {
            match d {
                Delivery::Final(b) => return Ok(b),
                Delivery::Failed(f) => return Err(f),
                Delivery::Related(_) => {}
            }
        }
        Err(Failure::Ended {
            upstream: session.upstream().to_owned(),
            what: format!("ended the session before answering the gateway's {method}"),
        })
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(r) => r,
        Err(_) => {
            guard.timed_out(timeout.as_secs());
            Err(Failure::Upstream(UpstreamError::Timeout {
                upstream: session.upstream().to_owned(),
                seconds: timeout.as_secs(),
            }))
        }
    }
}

/// The `result` of `reply`, or why the upstream refused `method`.
fn reply_result(
    session: &MessageSession,
    method: &str,
    reply: &[u8],
) -> Result<Box<RawValue>, Failure> {
    let m = jsonrpc::classify_one(reply).map_err(|e| {
        protocol_error(
            session,
            format!("its answer to {method} is not JSON-RPC ({e})"),
        )
    })?;
    if let Some(r) = m.result {
        return Ok(r.to_owned());
    }
    let why = m
        .error
        .and_then(|e| serde_json::from_str::<Value>(e.get()).ok())
        .and_then(|e| e.get("message")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "an error".into());
    Err(protocol_error(
        session,
        format!("it refused the gateway's {method}: {why}"),
    ))
}

fn protocol_error(session: &MessageSession, detail: String) -> Failure {
    Failure::Upstream(UpstreamError::Protocol {
        upstream: session.upstream().to_owned(),
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handshake(reply: &str) -> Handshake {
        let m = jsonrpc::classify_one(reply.as_bytes()).unwrap();
        let result = m.result.unwrap().to_owned();
        let version = serde_json::from_str::<Value>(result.get()).unwrap()["protocolVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        Handshake::new(Bytes::copy_from_slice(reply.as_bytes()), result, version)
    }

    #[test]
    fn a_local_answer_keeps_the_upstreams_bytes_and_key_order() {
        // As server-filesystem writes it: `result` first, then `jsonrpc`, `id`.
        let h = handshake(
            r#"{"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fs","version":"0.6.2"}},"jsonrpc":"2.0","id":1}"#,
        );
        let id = RawValue::from_string(r#""client-7""#.into()).unwrap();
        assert_eq!(
            &h.answer(&id, "2025-06-18")[..],
            br#"{"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fs","version":"0.6.2"}},"jsonrpc":"2.0","id":"client-7"}"#
        );
        // An older client: the version changes, and nothing else.
        assert_eq!(
            &h.answer(&id, "2025-03-26")[..],
            br#"{"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"fs","version":"0.6.2"}},"jsonrpc":"2.0","id":"client-7"}"#
        );
        // Spacing is the upstream's too.
        let spaced = handshake(
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {\"protocolVersion\": \"2025-06-18\", \"x\": -0}}",
        );
        let zero = RawValue::from_string("0".into()).unwrap();
        assert_eq!(
            &spaced.answer(&zero, "2025-06-18")[..],
            "{\"jsonrpc\": \"2.0\", \"id\": 0, \"result\": {\"protocolVersion\": \"2025-06-18\", \"x\": -0}}".as_bytes()
        );
    }

    #[test]
    fn a_local_answer_speaks_the_revision_both_know() {
        let h = handshake(
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#,
        );
        let id = RawValue::from_string("7".into()).unwrap();
        let same = h.answer(&id, "2025-11-25");
        assert_eq!(
            &same[..],
            br#"{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#
        );
        let older: Value = serde_json::from_slice(&h.answer(&id, "2025-03-26")).unwrap();
        assert_eq!(older["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(older["result"]["serverInfo"]["name"], "s");
    }
}
