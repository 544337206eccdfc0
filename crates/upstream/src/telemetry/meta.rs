//! Trace context in a request's `params._meta` (`traceparent`,
//! `tracestate`, as the MCP semantic conventions carry it): read from what
//! the client sent, and written into what goes upstream. Only those two
//! keys are touched; every other byte of the message stays as received.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// What tracing reads of `params` (one parse, of `params` only).
#[derive(Debug, Default)]
pub struct ParamsTrace<'a> {
    /// `params.name` (tools/call, prompts/get).
    pub name: Option<Cow<'a, str>>,
    /// `params.uri` (resources/read, subscribe).
    pub uri: Option<Cow<'a, str>>,
    /// `params._meta`, raw.
    pub meta: Option<&'a RawValue>,
    /// `params._meta.traceparent` and `tracestate`, raw.
    pub traceparent: Option<&'a RawValue>,
    pub tracestate: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "_meta", default)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    traceparent: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tracestate: Option<&'a RawValue>,
}

/// Reads `params` (an object; anything else yields nothing).
pub fn read(params: Option<&RawValue>) -> ParamsTrace<'_> {
    let Some(p) = params.and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok()) else {
        return ParamsTrace::default();
    };
    let meta = p
        .meta
        .filter(|m| m.get().starts_with('{'))
        .and_then(|m| serde_json::from_str::<Meta<'_>>(m.get()).ok());
    ParamsTrace {
        name: p.name,
        uri: p.uri,
        meta: p.meta,
        traceparent: meta.as_ref().and_then(|m| m.traceparent),
        tracestate: meta.as_ref().and_then(|m| m.tracestate),
    }
}

/// A raw JSON string's text (`None` for anything else).
pub fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.and_then(|r| serde_json::from_str::<Cow<'_, str>>(r.get()).ok())
}

/// `message` (whose `params` is `params`, read as `seen`) with
/// `params._meta.traceparent` set to `traceparent`, and `tracestate` added
/// when given and absent. `None` when `params` is neither absent nor an
/// object (or `_meta` not an object): then the message goes as it is.
pub fn inject(
    message: &[u8],
    params: Option<&RawValue>,
    seen: &ParamsTrace<'_>,
    traceparent: &str,
    tracestate: Option<&str>,
) -> Option<Vec<u8>> {
    let quote = |s: &str| serde_json::to_string(s).expect("strings serialise");
    let tp = quote(traceparent);
    let mut members = format!("\"traceparent\":{tp}");
    if let Some(ts) = tracestate.filter(|_| seen.tracestate.is_none()) {
        members.push_str(",\"tracestate\":");
        members.push_str(&quote(ts));
    }
    let Some(params) = params else {
        // No params: they are added before the message's closing brace.
        let end = message.iter().rposition(|b| *b == b'}')?;
        let insert = format!(",\"params\":{{\"_meta\":{{{members}}}}}");
        return Some(insert_at(message, end, &insert));
    };
    if !params.get().starts_with('{') {
        return None;
    }
    let Some(meta) = seen.meta else {
        let at = offset(message, params.get())? + 1;
        let sep = if is_empty_object(params.get()) {
            ""
        } else {
            ","
        };
        return Some(insert_at(
            message,
            at,
            &format!("\"_meta\":{{{members}}}{sep}"),
        ));
    };
    if !meta.get().starts_with('{') {
        return None;
    }
    match seen.traceparent {
        // Replaced in place; a tracestate of our own is added after it.
        Some(old) => {
            let start = offset(message, old.get())?;
            let end = start + old.get().len();
            let mut new = tp;
            if let Some(ts) = tracestate.filter(|_| seen.tracestate.is_none()) {
                new.push_str(",\"tracestate\":");
                new.push_str(&quote(ts));
            }
            let mut out = Vec::with_capacity(message.len() + new.len());
            out.extend_from_slice(&message[..start]);
            out.extend_from_slice(new.as_bytes());
            out.extend_from_slice(&message[end..]);
            Some(out)
        }
        None => {
            let at = offset(message, meta.get())? + 1;
            let sep = if is_empty_object(meta.get()) { "" } else { "," };
            Some(insert_at(message, at, &format!("{members}{sep}")))
        }
    }
}

fn is_empty_object(raw: &str) -> bool {
    raw[1..].trim_start().starts_with('}')
}

fn insert_at(message: &[u8], at: usize, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + text.len());
    out.extend_from_slice(&message[..at]);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&message[at..]);
    out
}

/// Byte offset of a slice borrowed from `buf`.
fn offset(buf: &[u8], part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    (start + part.len() <= buf.len()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_ui_wire::jsonrpc;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn injected(msg: &str, tracestate: Option<&str>) -> String {
        let m = jsonrpc::classify_one(msg.as_bytes()).unwrap();
        let seen = read(m.params);
        let out = inject(msg.as_bytes(), m.params, &seen, TP, tracestate).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn injects_losslessly() {
        assert_eq!(
            injected(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} "#, None),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"traceparent":"{TP}"}}}}}} "#
            )
        );
        assert_eq!(
            injected(
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{ }}"#,
                Some("a=1")
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{{"traceparent":"{TP}","tracestate":"a=1"}} }}}}"#
            )
        );
        assert_eq!(
            injected(
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":"t",  "arguments":{"b":1.50}}}"#,
                None
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{{"traceparent":"{TP}"}},"name":"t",  "arguments":{{"b":1.50}}}}}}"#
            )
        );
        assert_eq!(
            injected(
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":7}}}"#,
                None
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{{"traceparent":"{TP}","progressToken":7}}}}}}"#
            )
        );
        assert_eq!(
            injected(
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"traceparent":"old","tracestate":"k=v"}}}"#,
                Some("z=9")
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{{"traceparent":"{TP}","tracestate":"k=v"}}}}}}"#
            )
        );
        let m = jsonrpc::classify_one(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#)
            .unwrap();
        assert!(
            inject(
                br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
                m.params,
                &read(m.params),
                TP,
                None
            )
            .is_none()
        );
    }

    #[test]
    fn reads_what_tracing_needs() {
        let msg = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"tp","tracestate":"s=1"}}}"#;
        let m = jsonrpc::classify_one(msg.as_bytes()).unwrap();
        let seen = read(m.params);
        assert_eq!(seen.name.as_deref(), Some("echo"));
        assert_eq!(string(seen.traceparent).as_deref(), Some("tp"));
        assert_eq!(string(seen.tracestate).as_deref(), Some("s=1"));
    }
}
