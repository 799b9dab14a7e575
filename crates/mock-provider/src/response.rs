//! Scripted responses.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::cassette::RecordedResponse;

/// Headers that describe a connection or a transfer rather than the response
/// itself. They are not replayed from recordings: the mock server computes its
/// own framing, and recorded bodies are stored decoded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "content-encoding",
    "content-length",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// One step of a response body script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send these bytes.
    Chunk(Bytes),
    /// Pause before the next step.
    Delay(Duration),
    /// Abort the connection (the body ends with an error).
    Disconnect,
    /// Send nothing more and never finish (until the server shuts down).
    Stall,
}

/// A scripted HTTP response: status, headers and a body script.
///
/// Build one with a constructor ([`new`](Self::new), [`sse`](Self::sse),
/// [`json`](Self::json), [`body`](Self::body),
/// [`from_recorded`](Self::from_recorded)) and refine it with the builder
/// methods. The body script is a sequence of chunks and pauses, optionally
/// ended by [`then_disconnect`](Self::then_disconnect) or
/// [`then_stall`](Self::then_stall):
///
/// ```
/// use std::time::Duration;
/// use opencode_mock_provider::MockResponse;
///
/// let response = MockResponse::sse([r#"{"text":"Hello"}"#])
///     .split_into_chunks(4)
///     .delay(Duration::from_millis(50))
///     .chunk("data: {\"text\":\"wor")
///     .then_disconnect();
/// # let _ = response;
/// ```
///
/// Pauses placed before the first chunk delay the response head itself
/// (status and headers), which simulates a slow time-to-first-byte. All
/// other steps happen after the head has been sent. A response whose script
/// is a single chunk is sent with a `content-length`; anything else is
/// streamed with chunked transfer encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) steps: Vec<Step>,
}

impl MockResponse {
    /// A response with the given status, no headers and an empty body.
    pub fn new(status: u16) -> Self {
        Self { status, headers: Vec::new(), steps: Vec::new() }
    }

    /// A `200` server-sent-events response (`content-type: text/event-stream`).
    ///
    /// Each payload becomes one chunk framed as `data: <payload>\n\n`. Payloads
    /// are not escaped: a payload containing a newline produces a malformed
    /// event, which can be useful to test error handling. Use
    /// [`chunk`](Self::chunk) to append raw frames such as `event:` lines.
    pub fn sse<I, S>(data_payloads: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut response = Self::new(200).header("content-type", "text/event-stream");
        for payload in data_payloads {
            response = response.chunk(format!("data: {}\n\n", payload.as_ref()));
        }
        response
    }

    /// An OpenAI Chat Completions stream answering `answer` as text, with usage (100 prompt and 10
    /// completion tokens) and `[DONE]`: the answer most runtime, server and CLI tests script.
    pub fn chat_text(answer: &str) -> Self {
        use serde_json::json;
        Self::sse([
            json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer}}]}).to_string(),
            json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
            json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
                .to_string(),
            "[DONE]".to_owned(),
        ])
    }

    /// An OpenAI Chat Completions stream calling `calls` (`(call id, tool name, input)`), finishing
    /// with `tool_calls`, then `usage` (prompt and completion tokens) when given, and `[DONE]`.
    pub fn chat_tool_calls(calls: &[(&str, &str, serde_json::Value)], usage: Option<(u64, u64)>) -> Self {
        use serde_json::json;
        let deltas: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (id, name, input))| {
                json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}})
            })
            .collect();
        let mut frames = vec![
            json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": deltas}}]})
                .to_string(),
            json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        ];
        if let Some((prompt, completion)) = usage {
            let usage =
                json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
            frames.push(json!({"id": "c", "choices": [], "usage": usage}).to_string());
        }
        frames.push("[DONE]".to_owned());
        Self::sse(frames)
    }

    /// A response whose body is `body` serialized compactly, with
    /// `content-type: application/json`.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::body(status, "application/json", body.to_string())
    }

    /// A response with the given content type and a single-chunk body.
    pub fn body(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        Self::new(status).header("content-type", content_type).chunk(body)
    }

    /// Sets a response header, replacing any header of the same name
    /// (compared case-insensitively). Invalid names or values make the server
    /// answer `500` with an explanatory JSON error when the response is served.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Appends one body chunk. Empty chunks are ignored when serving.
    pub fn chunk(mut self, bytes: impl Into<Bytes>) -> Self {
        self.steps.push(Step::Chunk(bytes.into()));
        self
    }

    /// Pauses for `d` before sending the next chunk (or before the response
    /// head, when no chunk has been scripted yet).
    pub fn delay(mut self, d: Duration) -> Self {
        self.steps.push(Step::Delay(d));
        self
    }

    /// Re-splits all body chunks scripted so far into pieces of at most `size`
    /// bytes (a `size` of 0 is treated as 1).
    ///
    /// Consecutive chunks are joined before splitting, so the pieces cut
    /// across the original chunk (and event) boundaries; pauses and other
    /// steps stay where they were.
    pub fn split_into_chunks(mut self, size: usize) -> Self {
        let size = size.max(1);
        let mut steps = Vec::with_capacity(self.steps.len());
        let mut run = BytesMut::new();
        for step in std::mem::take(&mut self.steps) {
            match step {
                Step::Chunk(bytes) => run.extend_from_slice(&bytes),
                other => {
                    push_split(&mut steps, &mut run, size);
                    steps.push(other);
                }
            }
        }
        push_split(&mut steps, &mut run, size);
        self.steps = steps;
        self
    }

    /// After the chunks scripted so far, aborts the connection mid-body: the
    /// client sees an incomplete body (a connection / decode error), not a
    /// clean end of stream. Steps added afterwards are never reached.
    pub fn then_disconnect(mut self) -> Self {
        self.steps.push(Step::Disconnect);
        self
    }

    /// After the chunks scripted so far, sends nothing more and never
    /// finishes the body; the connection stays open until the
    /// [`MockProvider`](crate::MockProvider) is dropped. Steps added
    /// afterwards are never reached.
    pub fn then_stall(mut self) -> Self {
        self.steps.push(Step::Stall);
        self
    }

    /// Reproduces a recorded response: its status, its headers (including
    /// `content-type`, excluding hop-by-hop and framing headers such as
    /// `content-length`, `transfer-encoding`, `connection` and
    /// `content-encoding`) and its exact body bytes as a single chunk.
    pub fn from_recorded(response: &RecordedResponse) -> Self {
        let mut mock = Self::new(response.status);
        for (name, value) in &response.headers {
            if !HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
                mock.headers.push((name.clone(), value.clone()));
            }
        }
        mock.chunk(response.body.clone())
    }

    /// The scripted status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The scripted headers, in order.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }
}

fn push_split(steps: &mut Vec<Step>, run: &mut BytesMut, size: usize) {
    let mut bytes = std::mem::take(run).freeze();
    while !bytes.is_empty() {
        let piece = bytes.split_to(size.min(bytes.len()));
        steps.push(Step::Chunk(piece));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(response: &MockResponse) -> Vec<&[u8]> {
        response
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Chunk(b) => Some(b.as_ref()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn split_joins_runs_and_keeps_delays() {
        let r = MockResponse::new(200)
            .chunk("abc")
            .chunk("de")
            .delay(Duration::from_millis(1))
            .chunk("fgh")
            .split_into_chunks(2);
        assert_eq!(
            r.steps,
            vec![
                Step::Chunk(Bytes::from_static(b"ab")),
                Step::Chunk(Bytes::from_static(b"cd")),
                Step::Chunk(Bytes::from_static(b"e")),
                Step::Delay(Duration::from_millis(1)),
                Step::Chunk(Bytes::from_static(b"fg")),
                Step::Chunk(Bytes::from_static(b"h")),
            ]
        );
        let r = MockResponse::new(200).chunk("xyz").split_into_chunks(0);
        assert_eq!(chunks(&r), vec![b"x" as &[u8], b"y", b"z"]);
    }

    #[test]
    fn header_replaces_case_insensitively() {
        let r = MockResponse::json(200, &serde_json::json!({"a": 1}))
            .header("Content-Type", "application/x-ndjson")
            .header("x-request-id", "1");
        assert_eq!(
            r.headers(),
            &[
                ("Content-Type".to_owned(), "application/x-ndjson".to_owned()),
                ("x-request-id".to_owned(), "1".to_owned()),
            ]
        );
    }

    #[test]
    fn from_recorded_drops_framing_headers() {
        let recorded = RecordedResponse {
            status: 429,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("Content-Length".into(), "2".into()),
                ("transfer-encoding".into(), "chunked".into()),
                ("retry-after".into(), "3".into()),
            ],
            body: Bytes::from_static(b"{}"),
        };
        let r = MockResponse::from_recorded(&recorded);
        assert_eq!(r.status(), 429);
        assert_eq!(
            r.headers(),
            &[("content-type".to_owned(), "application/json".to_owned()), ("retry-after".to_owned(), "3".to_owned()),]
        );
        assert_eq!(chunks(&r), vec![b"{}" as &[u8]]);
    }
}
