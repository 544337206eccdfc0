//! Server-sent events: an incremental parser that keeps each event's exact
//! bytes (so events the gateway does not rewrite pass through unchanged, ids
//! and all), and the framing of the gateway's own events.

use bytes::{Buf, Bytes, BytesMut};

/// One parsed event. `raw` is the event exactly as received, including its
/// terminating blank line; comments and unknown fields are kept there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub raw: Bytes,
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// Whether any `data:` line was present (an event with an empty `data:`
    /// line differs from a comment-only block).
    pub has_data: bool,
}

impl Event {
    /// The event type, `message` when unnamed.
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
    #[error("an SSE event exceeded {limit} bytes")]
    TooLarge { limit: usize },
}

/// Incremental parser. Feed bytes with [`Parser::push`], take events with
/// [`Parser::next_event`].
#[derive(Debug)]
pub struct Parser {
    buf: BytesMut,
    limit: usize,
    /// Where to resume looking for an event boundary, so a large event that
    /// arrives in many chunks is scanned once, not once per chunk.
    scanned: usize,
    started: bool,
}

impl Parser {
    pub fn new(limit: usize) -> Self {
        Parser {
            buf: BytesMut::new(),
            limit,
            scanned: 0,
            started: false,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.advance(3);
                // Those bytes may have been scanned already.
                self.scanned = self.scanned.saturating_sub(3);
            }
        }
    }

    /// The next complete event, `Ok(None)` when more bytes are needed.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        let Some(end) = self.find_boundary() else {
            if self.buf.len() > self.limit {
                return Err(SseError::TooLarge { limit: self.limit });
            }
            return Ok(None);
        };
        self.scanned = 0;
        // A byte-order mark is only stripped at the very start of the stream.
        self.started = true;
        Ok(Some(parse_block(self.buf.split_to(end).freeze())))
    }

    /// Whatever is buffered and not yet returned as an event, for a stream
    /// that ended mid-event (passed on as it is).
    pub fn take_remaining(&mut self) -> Bytes {
        self.scanned = 0;
        self.buf.split().freeze()
    }

    /// At the end of the stream: the last event, when it was terminated by
    /// a final CR that could not be told from half a CRLF until now.
    pub fn finish(&mut self) -> Option<Event> {
        if self.buf.ends_with(b"\r\r") || self.buf.ends_with(b"\n\r") {
            self.scanned = 0;
            return Some(parse_block(self.buf.split().freeze()));
        }
        None
    }

    /// End offset of the first block terminated by a blank line, accepting
    /// CRLF, LF and CR line endings.
    fn find_boundary(&mut self) -> Option<usize> {
        let b = &self.buf[..];
        let mut i = self.scanned;
        while i < b.len() {
            let eol = match b[i] {
                b'\n' => 1,
                b'\r' if i + 1 < b.len() && b[i + 1] == b'\n' => 2,
                // A CR at the very end may be the first half of a CRLF: wait
                // for the next byte (or `finish`) to know.
                b'\r' if i + 1 == b.len() => break,
                b'\r' => 1,
                _ => {
                    // Skip to the next line ending at memchr speed: event
                    // data is long lines, boundaries are rare.
                    match memchr::memchr2(b'\n', b'\r', &b[i..]) {
                        Some(offset) => {
                            i += offset;
                            continue;
                        }
                        None => {
                            i = b.len();
                            break;
                        }
                    }
                }
            };
            let next = i + eol;
            // A line ending at the start of the buffer or right after another
            // line ending terminates the block.
            let prev_is_eol = i == 0 || matches!(b[i - 1], b'\n' | b'\r');
            if prev_is_eol {
                return Some(next);
            }
            i = next;
        }
        self.scanned = i;
        None
    }
}

fn parse_block(raw: Bytes) -> Event {
    let text = String::from_utf8_lossy(&raw);
    let mut id = None;
    let mut event = None;
    let mut data = String::new();
    let mut has_data = false;
    for line in text.split(['\n', '\r']) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if has_data {
                    data.push('\n');
                }
                data.push_str(value);
                has_data = true;
            }
            "event" => event = Some(value.to_owned()),
            "id" if !value.contains('\0') => id = Some(value.to_owned()),
            _ => {}
        }
    }
    // A block of only comments (keepalives) is still an event here, so its raw
    // bytes pass through.
    Event {
        raw,
        id,
        event,
        data,
        has_data,
    }
}

/// Frame one message as an SSE event. JSON never contains raw line breaks
/// outside strings once compacted, but any that are present become separate
/// `data:` lines, which the receiver joins back with `\n`.
pub fn frame(id: Option<&str>, event: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 32);
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.extend_from_slice(b"\n");
    }
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"\n");
    }
    let text = data.strip_suffix(b"\n").unwrap_or(data);
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\n");
    }
    out.extend_from_slice(b"\n");
    out.freeze()
}

/// A comment that keeps idle connections (and the proxies between) open.
pub const KEEPALIVE: &[u8] = b": keepalive\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], chunk: usize) -> Vec<Event> {
        let mut p = Parser::new(1 << 20);
        let mut out = vec![];
        for c in input.chunks(chunk) {
            p.push(c);
            while let Some(e) = p.next_event().unwrap() {
                out.push(e);
            }
        }
        out
    }

    #[test]
    fn parses_events_in_any_chunking() {
        let input = b"event: endpoint\ndata: /messages?sessionId=1\n\nid: 7\ndata: {\"a\":1}\n\n: ping\n\nevent: message\r\ndata: x\r\ndata: y\r\n\r\n";
        for chunk in [1, 2, 3, 5, 64, 1024] {
            let ev = all(input, chunk);
            assert_eq!(ev.len(), 4, "chunk {chunk}: {ev:?}");
            assert_eq!(ev[0].kind(), "endpoint");
            assert_eq!(ev[0].data, "/messages?sessionId=1");
            assert_eq!(ev[1].id.as_deref(), Some("7"));
            assert_eq!(ev[1].data, "{\"a\":1}");
            assert!(!ev[2].has_data);
            assert_eq!(ev[3].data, "x\ny");
            let joined: Vec<u8> = ev.iter().flat_map(|e| e.raw.to_vec()).collect();
            assert_eq!(joined, input, "raw bytes are kept exactly");
        }
    }

    #[test]
    fn cr_only_line_endings() {
        let mut p = Parser::new(64);
        p.push(b"data: a\r\rdata: b\r\r");
        assert_eq!(p.next_event().unwrap().unwrap().data, "a");
        assert_eq!(
            p.next_event().unwrap(),
            None,
            "the last CR may be half a CRLF"
        );
        let ev = [p.finish().unwrap()];
        assert_eq!(ev[0].data, "b");
    }

    #[test]
    fn strips_bom_and_limits_size() {
        let ev = all(b"\xEF\xBB\xBFdata: z\n\n", 1);
        assert_eq!(ev[0].data, "z");
        let mut p = Parser::new(8);
        p.push(b"data: 0123456789");
        assert_eq!(p.next_event(), Err(SseError::TooLarge { limit: 8 }));
    }

    #[test]
    fn bom_split_across_chunks_keeps_every_byte() {
        // Found by fuzzing (sse_parse): bytes of a BOM that arrived in pieces
        // were still counted as scanned once it was stripped, so the line
        // endings right after it were missed.
        let input = b"\xEF\xBB\xBF\r\rdata: b\r\r";
        let events = |sizes: &[usize]| {
            let mut p = Parser::new(64);
            let (mut out, mut at) = (vec![], 0);
            for n in sizes {
                p.push(&input[at..at + n]);
                at += n;
                while let Some(e) = p.next_event().unwrap() {
                    out.push(e);
                }
            }
            out.extend(p.finish());
            out
        };
        let whole = events(&[input.len()]);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(events(&[2, 1, 3, input.len() - 6]), whole);
        // A BOM after the first event is data, not a mark to strip.
        let ev = all(b"\n\xEF\xBB\xBFdata: x\n\n", 1);
        assert_eq!(&ev[1].raw[..3], b"\xEF\xBB\xBF");
    }

    #[test]
    fn frame_round_trips() {
        let f = frame(Some("3"), Some("message"), b"{\"x\":1}");
        assert_eq!(&f[..], b"event: message\nid: 3\ndata: {\"x\":1}\n\n");
        let ev = all(&f, 1);
        assert_eq!(ev[0].data, "{\"x\":1}");
        let multi = frame(None, None, b"a\nb\n");
        assert_eq!(all(&multi, 4)[0].data, "a\nb");
    }
}
