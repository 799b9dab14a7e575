//! Helpers shared by protocol adapters: payload parsing, tool-input accumulation, and the
//! chronological fallback for mid-conversation system updates.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ContentPart;
use crate::LlmError;
use crate::Message;
use crate::Role;

/// A JSON number as JavaScript would write it: integral values without a fraction (`0`, not
/// `0.0`), so request bodies match what providers' own SDKs send.
pub fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

/// Parses one frame's JSON payload, tolerating surrounding whitespace (Anthropic pads its data
/// lines). A malformed payload is an [`InvalidProviderOutput`](crate::ErrorKind) error quoting it.
pub fn parse_payload<T: DeserializeOwned>(protocol: &str, data: &str) -> Result<T, LlmError> {
    serde_json::from_str(data.trim()).map_err(|err| {
        let snippet: String = data.chars().take(200).collect();
        LlmError::invalid_output(format!("invalid {protocol} stream event ({err}): {snippet}"))
    })
}

/// Parses accumulated tool-call input text: empty input is `{}`; anything else must be JSON.
pub fn parse_tool_input(protocol: &str, tool: &str, text: &str) -> Result<Value, LlmError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
        .map_err(|err| LlmError::invalid_output(format!("invalid JSON input for {protocol} tool call `{tool}`: {err}")))
}

/// Wraps a mid-conversation system update for providers without a native mid-conversation
/// system role: `<system-update>` tags, with `&`, `<` and `>` escaped so the text cannot close them.
pub fn wrap_system_update(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + 40);
    escaped.push_str("<system-update>\n");
    for ch in text.chars() {
        match ch {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            _ => escaped.push(ch),
        }
    }
    escaped.push_str("\n</system-update>");
    escaped
}

/// Lowers every mid-conversation system update to wrapped user text, merged into the previous
/// user message when adjacent so roles keep alternating.
pub fn lower_system_updates(messages: &[Message]) -> Result<Vec<Message>, LlmError> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        if message.role != Role::System {
            out.push(message.clone());
            continue;
        }
        let part = ContentPart::text(wrap_system_update(&system_update_text(message)?));
        match out.last_mut() {
            Some(previous) if previous.role == Role::User => previous.content.push(part),
            _ => out.push(Message { role: Role::User, content: vec![part] }),
        }
    }
    Ok(out)
}

/// The text of a mid-conversation system update; any other part is an invalid request.
pub fn system_update_text(message: &Message) -> Result<String, LlmError> {
    let mut text = String::new();
    for part in &message.content {
        match part {
            ContentPart::Text { text: part, .. } => text.push_str(part),
            _ => {
                return Err(LlmError::invalid_request("a system update message may contain only text parts"));
            }
        }
    }
    Ok(text)
}

/// Accumulates streamed tool-call input fragments per call.
#[derive(Debug, Default)]
pub struct ToolInputs {
    calls: Vec<PendingCall>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    pub key: String,
    pub id: String,
    pub name: String,
    pub input: String,
}

impl ToolInputs {
    /// Starts (or finds) the call with this key; returns whether it is new.
    pub fn start(&mut self, key: &str, id: &str, name: &str) -> bool {
        if self.calls.iter().any(|call| call.key == key) {
            return false;
        }
        self.calls.push(PendingCall {
            key: key.to_owned(),
            id: id.to_owned(),
            name: name.to_owned(),
            input: String::new(),
        });
        true
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut PendingCall> {
        self.calls.iter_mut().find(|call| call.key == key)
    }

    /// Removes and returns the call with this key.
    pub fn take(&mut self, key: &str) -> Option<PendingCall> {
        let at = self.calls.iter().position(|call| call.key == key)?;
        Some(self.calls.remove(at))
    }

    /// Removes and returns every pending call, in start order.
    pub fn take_all(&mut self) -> Vec<PendingCall> {
        std::mem::take(&mut self.calls)
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_update_is_escaped_and_merged_into_previous_user_message() {
        let messages = vec![Message::user("hi"), Message::system_update("a < b & c"), Message::assistant(vec![])];
        let lowered = lower_system_updates(&messages).unwrap();
        assert_eq!(lowered.len(), 2);
        assert_eq!(lowered[0].content[1], ContentPart::text("<system-update>\na &lt; b &amp; c\n</system-update>"));
    }

    #[test]
    fn empty_tool_input_is_an_empty_object() {
        assert_eq!(parse_tool_input("p", "t", "").unwrap(), serde_json::json!({}));
        assert!(parse_tool_input("p", "t", "{\"a\":").is_err());
    }
}
