//! Reading what a held session's upstream answers: a whole body within
//! the message limit, or the data of an SSE body's `message` events.

use bytes::Bytes;
use http_body_util::BodyExt;

use crate::upstream::client::UpstreamBody;
use mcp_ui_wire::sse::Parser;

/// A whole body of at most `limit` bytes.
pub(super) async fn read(mut body: UpstreamBody, limit: usize) -> Result<Bytes, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("could not read its answer: {e}"))?;
        if let Ok(d) = frame.into_data() {
            out.extend_from_slice(&d);
            if out.len() > limit {
                return Err(format!(
                    "its answer exceeds {limit} bytes (limits.max_message_bytes)"
                ));
            }
        }
    }
    Ok(Bytes::from(out))
}

/// The data of the `message` events of an SSE body.
pub(super) struct Events {
    body: UpstreamBody,
    parser: Parser,
    done: bool,
}

impl Events {
    pub(super) fn new(body: UpstreamBody, limit: usize) -> Self {
        Events {
            body,
            parser: Parser::new(limit),
            done: false,
        }
    }

    pub(super) async fn next(&mut self) -> Option<Result<Bytes, String>> {
        loop {
            match self.parser.next_event() {
                Ok(Some(ev)) if ev.kind() == "message" && ev.has_data && !ev.data.is_empty() => {
                    return Some(Ok(Bytes::from(ev.data)));
                }
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => return Some(Err(e.to_string())),
            }
            if self.done {
                return None;
            }
            match self.body.frame().await {
                Some(Ok(f)) => {
                    if let Some(d) = f.data_ref() {
                        self.parser.push(d);
                    }
                }
                Some(Err(e)) => return Some(Err(format!("its stream failed: {e}"))),
                None => {
                    self.done = true;
                    if let Some(ev) = self.parser.finish()
                        && ev.has_data
                        && !ev.data.is_empty()
                    {
                        return Some(Ok(Bytes::from(ev.data)));
                    }
                    return None;
                }
            }
        }
    }
}
