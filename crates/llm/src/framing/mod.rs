//! Framing: turning a response byte stream into protocol frames.
//!
//! Two framings exist: Server-Sent Events (every HTTP streaming protocol but Bedrock) and the
//! binary AWS event stream (Bedrock ConverseStream). Both are incremental: bytes may arrive split
//! anywhere, and a frame is produced only once it is complete.

pub mod event_stream;
pub mod sse;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

pub use event_stream::EventStreamDecoder;
pub use event_stream::EventStreamMessage;
pub use event_stream::HeaderValue;
pub use sse::SseDecoder;
pub use sse::SseEvent;

use crate::LlmError;

/// Which framing a route's response body uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    Sse,
    AwsEventStream,
}

impl Framing {
    /// The content type a streaming response of this framing is expected to carry.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Sse => "text/event-stream",
            Self::AwsEventStream => "application/vnd.amazon.eventstream",
        }
    }

    pub fn decoder(self) -> FrameDecoder {
        match self {
            Self::Sse => FrameDecoder::Sse(SseDecoder::new()),
            Self::AwsEventStream => FrameDecoder::EventStream(EventStreamDecoder::new()),
        }
    }
}

/// One complete frame handed to a protocol decoder.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Sse(SseEvent),
    EventStream(EventStreamMessage),
}

/// An incremental decoder for either framing.
#[derive(Debug)]
pub enum FrameDecoder {
    Sse(SseDecoder),
    EventStream(EventStreamDecoder),
}

impl FrameDecoder {
    /// Feeds bytes; appends every frame they complete.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), LlmError> {
        match self {
            Self::Sse(decoder) => {
                decoder.push(bytes, |event| out.push(Frame::Sse(event)));
                Ok(())
            }
            Self::EventStream(decoder) => decoder
                .push(bytes, |message| out.push(Frame::EventStream(message)))
                .map_err(|err| LlmError::invalid_output(format!("invalid AWS event stream: {err}"))),
        }
    }

    /// The body ended: flushes a final SSE event, or reports a truncated binary frame.
    pub fn finish(&mut self, out: &mut Vec<Frame>) -> Result<(), LlmError> {
        match self {
            Self::Sse(decoder) => {
                if let Some(event) = decoder.finish() {
                    out.push(Frame::Sse(event));
                }
                Ok(())
            }
            Self::EventStream(decoder) => {
                decoder.finish().map_err(|err| LlmError::invalid_output(format!("invalid AWS event stream: {err}")))
            }
        }
    }
}
