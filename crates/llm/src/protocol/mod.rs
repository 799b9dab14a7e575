//! Protocols: the only code that knows provider wire fields.
//!
//! A [`Protocol`] encodes a canonical [`LlmRequest`] into a JSON body and names its endpoint path; its
//! [`StreamDecoder`] turns frames into canonical [`LlmEvent`](crate::LlmEvent)s through an
//! [`EventSink`], which enforces the event lifecycle. Each protocol lives in its own module and is
//! independent of every other.

pub mod anthropic_messages;
pub mod bedrock_converse;
pub mod cache;
pub mod gemini;
pub mod openai_chat;
pub mod openai_options;
pub mod openai_responses;
pub mod shared;
mod sink;

use serde_json::Value;

pub use sink::EventSink;

use crate::LlmError;
use crate::LlmRequest;
use crate::framing::Frame;
use crate::framing::Framing;

/// A provider wire protocol.
pub trait Protocol: Send + Sync + std::fmt::Debug {
    /// Stable id: `openai-chat`, `openai-responses`, `anthropic-messages`, `gemini`,
    /// `bedrock-converse`, `openai-compatible-chat`.
    fn id(&self) -> &'static str;

    /// The framing of this protocol's streaming responses.
    fn framing(&self) -> Framing;

    /// Path (and query) appended to the route's base URL for this request.
    fn path(&self, request: &LlmRequest) -> String;

    /// Encodes the request body. Deterministic: the same request always gives the same body.
    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError>;

    /// A fresh decoder for one response stream.
    fn decoder(&self, request: &LlmRequest) -> Box<dyn StreamDecoder>;
}

/// Decodes one response stream, frame by frame.
pub trait StreamDecoder: Send {
    /// Decodes one frame into events. An `Err` ends the stream with that error as its terminal
    /// event (use it for in-band provider errors and malformed frames).
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError>;

    /// The body ended. Emit what was held back (for example a finish waiting for usage), or return
    /// an error when the stream ended before the protocol's terminal message.
    fn end(&mut self, sink: &mut EventSink) -> Result<(), LlmError>;
}

/// Every protocol this crate speaks, by id.
pub fn by_id(id: &str) -> Option<std::sync::Arc<dyn Protocol>> {
    use std::sync::Arc;
    let protocol: Arc<dyn Protocol> = match id {
        "openai-chat" => Arc::new(openai_chat::OpenAiChat::openai()),
        "openai-compatible-chat" => Arc::new(openai_chat::OpenAiChat::compatible()),
        "openai-responses" => Arc::new(openai_responses::OpenAiResponses),
        "anthropic-messages" => Arc::new(anthropic_messages::AnthropicMessages),
        "gemini" => Arc::new(gemini::Gemini),
        "bedrock-converse" => Arc::new(bedrock_converse::BedrockConverse),
        _ => return None,
    };
    Some(protocol)
}

/// The ids accepted by [`by_id`].
pub const PROTOCOL_IDS: &[&str] =
    &["openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse", "openai-compatible-chat"];

/// Test helper: feeds JSON payloads as SSE data frames through a decoder, as the client would.
#[cfg(test)]
pub(crate) fn decode_json_frames(decoder: &mut dyn StreamDecoder, payloads: &[Value]) -> Vec<crate::LlmEvent> {
    let mut sink = EventSink::new();
    for payload in payloads {
        let frame = Frame::Sse(crate::framing::SseEvent { event: None, data: payload.to_string() });
        if let Err(error) = decoder.decode(frame, &mut sink) {
            sink.error(error);
        }
    }
    if !sink.is_terminal()
        && let Err(error) = decoder.end(&mut sink)
    {
        sink.error(error);
    }
    sink.drain().collect()
}
