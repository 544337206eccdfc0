//! The JSON-RPC envelope classifier and the helpers that work on its borrowed
//! slices: classification never panics, its verdict matches the message's
//! keys, splicing a value back in reproduces the input byte for byte, and a
//! spliced id is the id the classifier then reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_ui_wire::jsonrpc::{
    self, Body, ClassifyError, Kind, Message, classify, classify_one, error_response, id_key,
    params_view, splice, to_single_line,
};
use serde_json::Value;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    match classify(data) {
        Ok(Body::Single(m)) => check(data, &m),
        Ok(Body::Batch(items)) => {
            assert!(!items.is_empty(), "an empty batch is refused");
            for (m, raw) in &items {
                check(raw.get().as_bytes(), m);
            }
        }
        Err(e) => {
            let code = e.code();
            assert!(code == jsonrpc::code::PARSE_ERROR || code == jsonrpc::code::INVALID_REQUEST);
            if let ClassifyError::Parse(_) = e {
                // A parse error means the bytes really are not JSON.
                assert!(serde_json::from_slice::<Value>(data).is_err());
            }
        }
    }
    // Removing raw line breaks never changes a value.
    if let Ok(before) = serde_json::from_slice::<Value>(data) {
        let line = to_single_line(data);
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        let after: Value = serde_json::from_slice(&line).expect("still JSON on one line");
        assert_eq!(before, after);
    }
});

fn check(buf: &[u8], m: &Message<'_>) {
    match m.kind {
        Kind::Request => {
            assert!(m.method.is_some() && m.id.is_some());
            assert!(m.result.is_none() && m.error.is_none());
        }
        Kind::Notification => {
            assert!(m.method.is_some() && m.id.is_none());
            assert!(m.result.is_none() && m.error.is_none());
        }
        Kind::Response => {
            assert!(m.method.is_none() && m.id.is_some());
            assert!(m.result.is_some() != m.error.is_some());
        }
    }
    let _ = params_view(m.params);
    // Every borrowed value lies inside the buffer: putting it back unchanged
    // reproduces the message exactly.
    for part in [m.id, m.params, m.result, m.error].into_iter().flatten() {
        let same = splice(buf, part, part.get()).expect("a borrowed value is inside its buffer");
        assert_eq!(same, buf);
    }
    let Some(id) = m.id else { return };
    // The canonical key is stable: the key of a key is itself.
    let key = id_key(id);
    let reparsed: Box<RawValue> = RawValue::from_string(key.clone()).expect("a key is JSON");
    assert_eq!(id_key(&reparsed), key);
    // The gateway's own error answer for this id is a response with that id.
    let answer = error_response(
        Some(id),
        jsonrpc::code::INTERNAL_ERROR,
        "fuzz \"message\"\n",
    );
    let reply = classify_one(&answer).expect("the gateway's error body classifies");
    assert_eq!(reply.kind, Kind::Response);
    assert_eq!(id_key(reply.id.expect("an id")), key);
    // Replacing the id (as the gateway does for its own ids) keeps the rest of
    // the message and is read back as the new id.
    let new_id = "\"gw-\\u0031:7\"";
    let spliced = splice(buf, id, new_id).expect("the id is inside its buffer");
    let again = classify_one(&spliced).expect("a spliced message still classifies");
    assert_eq!(again.kind, m.kind);
    assert_eq!(again.id.map(RawValue::get), Some(new_id));
    assert_eq!(again.method, m.method);
    assert_eq!(again.params.map(RawValue::get), m.params.map(RawValue::get));
    assert_eq!(again.result.map(RawValue::get), m.result.map(RawValue::get));
    assert_eq!(again.error.map(RawValue::get), m.error.map(RawValue::get));
    let back = splice(&spliced, again.id.expect("an id"), id.get()).expect("inside");
    assert_eq!(back, buf, "splicing the old id back restores the message");
}
