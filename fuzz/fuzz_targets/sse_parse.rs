//! The SSE parser: the same stream cut into arbitrary chunks yields the same
//! events, the events' raw bytes plus what is left over are the stream
//! exactly (a leading byte-order mark aside), and the gateway's own framing
//! parses back to the data it framed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_ui_wire::sse::{Event, Parser, frame};

/// Far above libFuzzer's input sizes: the size limit never decides here.
const LIMIT: usize = 1 << 24;
const BOM: &[u8] = b"\xEF\xBB\xBF";

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk sizes, the rest is the stream.
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = run(stream, &[stream.len().max(1)]);
    let sizes: Vec<usize> = match seed % 4 {
        0 => vec![1],
        1 => vec![2, 1, 3],
        2 => vec![usize::from(seed / 4).max(1)],
        _ => stream
            .iter()
            .take(16)
            .map(|&b| usize::from(b % 7) + 1)
            .collect(),
    };
    let sizes = if sizes.is_empty() { vec![1] } else { sizes };
    let split = run(stream, &sizes);
    assert_eq!(
        whole, split,
        "chunking changed the events (sizes {sizes:?})"
    );

    let (events, rest) = whole;
    let mut joined: Vec<u8> = events.iter().flat_map(|e| e.raw.to_vec()).collect();
    joined.extend_from_slice(&rest);
    let expected = stream.strip_prefix(BOM).unwrap_or(stream);
    assert_eq!(joined, expected, "raw bytes are kept exactly");

    // Framing: JSON-like data (no CR) with an id and event name on one line.
    if let Ok(text) = std::str::from_utf8(stream)
        && !text.contains('\r')
    {
        let (head, data) = text.split_once('\u{1}').unwrap_or(("", text));
        let (id, event) = head.split_once('\u{2}').unwrap_or((head, ""));
        let one_line = |s: &str| !s.contains(['\n', '\r', '\0']);
        if one_line(id) && one_line(event) {
            let id = (!id.is_empty()).then_some(id);
            let event = (!event.is_empty()).then_some(event);
            let framed = frame(id, event, data.as_bytes());
            let (events, rest) = run(&framed, &[framed.len()]);
            assert!(rest.is_empty());
            assert_eq!(events.len(), 1, "one frame is one event: {framed:?}");
            let e = &events[0];
            assert!(e.has_data);
            assert_eq!(e.data, data.strip_suffix('\n').unwrap_or(data));
            assert_eq!(e.id.as_deref(), id);
            assert_eq!(e.event.as_deref(), event);
        }
    }
});

/// Feeds `stream` in chunks of the given sizes (cycled); returns the events
/// and the bytes left at the end.
fn run(stream: &[u8], sizes: &[usize]) -> (Vec<Event>, Vec<u8>) {
    let mut parser = Parser::new(LIMIT);
    let mut events = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        let n = sizes[i % sizes.len()].min(stream.len() - at);
        parser.push(&stream[at..at + n]);
        at += n;
        i += 1;
        while let Some(event) = parser.next_event().expect("below the limit") {
            events.push(event);
        }
    }
    events.extend(parser.finish());
    (events, parser.take_remaining().to_vec())
}
