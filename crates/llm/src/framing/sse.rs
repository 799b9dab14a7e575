//! An incremental Server-Sent Events parser (the `text/event-stream` format of the HTML standard).
//!
//! Tolerates everything providers actually send: CRLF, LF or lone CR line ends, `:` comment
//! keep-alives, multi-line `data:`, padding after the JSON, events split across reads at any byte,
//! and a last event without its closing blank line. It does not interpret payloads: `[DONE]` is
//! delivered like any other data and left to the protocol.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser state.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of a line not yet terminated.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`; a leading `\n` in the next chunk belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `emit` for every event they complete.
    pub fn push(&mut self, mut bytes: &[u8], mut emit: impl FnMut(SseEvent)) {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.line.is_empty() {
                self.process_line(&bytes[..end], &mut emit);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                self.process_line(&line, &mut emit);
                line.clear();
                self.line = line;
            }
            let is_cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if is_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(bytes);
    }

    /// The stream ended: returns the last event if it was not closed by a blank line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut |_| {});
        }
        self.take_event()
    }

    fn process_line(&mut self, line: &[u8], emit: &mut impl FnMut(SseEvent)) {
        if line.is_empty() {
            if let Some(event) = self.take_event() {
                emit(event);
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // `id` and `retry` carry nothing a provider stream needs.
            _ => {}
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        let bytes = std::mem::take(&mut self.data);
        let data = match String::from_utf8(bytes) {
            Ok(data) => data,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        };
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            decoder.push(chunk, |event| events.push(event));
        }
        events.extend(decoder.finish());
        events
    }

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: name.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn parses_named_events_comments_and_done() {
        let input = b": OPENROUTER PROCESSING\n\nevent: message_start\ndata: {\"a\":1}   \n\ndata: [DONE]\n\n";
        let expected = vec![event(Some("message_start"), "{\"a\":1}   "), event(None, "[DONE]")];
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), expected, "piece size {piece}");
        }
    }

    #[test]
    fn handles_crlf_and_lone_cr_split_anywhere() {
        let input = b"data: one\r\n\r\ndata: two\r\rdata: a\ndata: b\n\n";
        let expected = vec![event(None, "one"), event(None, "two"), event(None, "a\nb")];
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), expected, "piece size {piece}");
        }
    }

    #[test]
    fn flushes_last_event_without_blank_line() {
        assert_eq!(parse_in_pieces(b"data: {\"x\":2}", 4), vec![event(None, "{\"x\":2}")]);
    }

    #[test]
    fn event_name_without_data_is_dropped() {
        assert_eq!(parse_in_pieces(b"event: ping\n\ndata:x\n\n", 3), vec![event(None, "x")]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(parse_in_pieces(b"data: \xff\n\n", 2), vec![event(None, "\u{fffd}")]);
    }
}
