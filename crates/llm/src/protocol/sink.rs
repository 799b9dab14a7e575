//! The event lifecycle every protocol decoder goes through.
//!
//! Decoders report what they saw (a text delta, a finished tool call, the finish); the sink adds
//! the bookkeeping events so every stream has the same shape: a lazy `step-start`, a `*-start`
//! before the first delta of each block, `*-end` for every open block before the finish, then
//! `step-finish` and exactly one terminal event. Anything reported after the terminal is dropped.

use serde_json::Value;

use crate::FinishReason;
use crate::LlmError;
use crate::LlmEvent;
use crate::ProviderMetadata;
use crate::ToolResultValue;
use crate::Usage;

#[derive(Debug, Default)]
pub struct EventSink {
    events: Vec<LlmEvent>,
    step: u32,
    step_open: bool,
    open_text: Vec<String>,
    open_reasoning: Vec<String>,
    open_tool_inputs: Vec<String>,
    terminal: bool,
}

/// How a response finished, as reported by a decoder.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub reason: FinishReason,
    pub usage: Option<Usage>,
    pub response_id: Option<String>,
    pub model: Option<String>,
    pub provider_metadata: Option<ProviderMetadata>,
}

impl Finish {
    pub fn new(reason: FinishReason) -> Self {
        Self { reason, usage: None, response_id: None, model: None, provider_metadata: None }
    }
}

impl EventSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminal event was emitted.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// Moves the events produced so far out of the sink.
    pub fn drain(&mut self) -> std::vec::Drain<'_, LlmEvent> {
        self.events.drain(..)
    }

    pub fn text_delta(&mut self, id: &str, text: &str) {
        if self.terminal {
            return;
        }
        self.open_text_block(id);
        if !text.is_empty() {
            self.events.push(LlmEvent::TextDelta { id: id.to_owned(), text: text.to_owned() });
        }
    }

    /// Closes a text block (opening it first if it never had a delta, so that metadata such as a
    /// signature on an empty part is kept).
    pub fn text_end(&mut self, id: &str, provider_metadata: Option<ProviderMetadata>) {
        if self.terminal {
            return;
        }
        self.open_text_block(id);
        self.open_text.retain(|open| open != id);
        self.events.push(LlmEvent::TextEnd { id: id.to_owned(), provider_metadata });
    }

    pub fn reasoning_delta(&mut self, id: &str, text: &str) {
        if self.terminal {
            return;
        }
        self.open_reasoning_block(id);
        if !text.is_empty() {
            self.events.push(LlmEvent::ReasoningDelta { id: id.to_owned(), text: text.to_owned() });
        }
    }

    pub fn reasoning_end(
        &mut self,
        id: &str,
        signature: Option<String>,
        encrypted: Option<String>,
        provider_metadata: Option<ProviderMetadata>,
    ) {
        if self.terminal {
            return;
        }
        self.open_reasoning_block(id);
        self.open_reasoning.retain(|open| open != id);
        self.events.push(LlmEvent::ReasoningEnd { id: id.to_owned(), signature, encrypted, provider_metadata });
    }

    pub fn is_reasoning_open(&self, id: &str) -> bool {
        self.open_reasoning.iter().any(|open| open == id)
    }

    pub fn is_text_open(&self, id: &str) -> bool {
        self.open_text.iter().any(|open| open == id)
    }

    pub fn tool_input_start(&mut self, id: &str, name: &str) {
        if self.terminal || self.open_tool_inputs.iter().any(|open| open == id) {
            return;
        }
        self.ensure_step();
        self.open_tool_inputs.push(id.to_owned());
        self.events.push(LlmEvent::ToolInputStart { id: id.to_owned(), name: name.to_owned() });
    }

    pub fn tool_input_delta(&mut self, id: &str, text: &str) {
        if self.terminal || text.is_empty() {
            return;
        }
        self.events.push(LlmEvent::ToolInputDelta { id: id.to_owned(), text: text.to_owned() });
    }

    /// A complete local tool call; closes its input block if one is open.
    pub fn tool_call(&mut self, id: &str, name: &str, input: Value, provider_metadata: Option<ProviderMetadata>) {
        self.push_tool_call(id, name, input, false, provider_metadata);
    }

    /// A call of a tool the provider runs itself.
    pub fn provider_tool_call(&mut self, id: &str, name: &str, input: Value) {
        self.push_tool_call(id, name, input, true, None);
    }

    pub fn provider_tool_result(&mut self, id: &str, name: &str, result: ToolResultValue) {
        if self.terminal {
            return;
        }
        self.ensure_step();
        self.events.push(LlmEvent::ToolResult { id: id.to_owned(), name: name.to_owned(), result });
    }

    /// Closes every open block, then emits `step-finish` and the terminal `finish`.
    pub fn finish(&mut self, finish: Finish) {
        if self.terminal {
            return;
        }
        self.close_open_blocks();
        self.ensure_step();
        self.events.push(LlmEvent::StepFinish { index: self.step, reason: finish.reason, usage: finish.usage.clone() });
        self.events.push(LlmEvent::Finish {
            reason: finish.reason,
            usage: finish.usage,
            response_id: finish.response_id,
            model: finish.model,
            provider_metadata: finish.provider_metadata,
        });
        self.step_open = false;
        self.terminal = true;
    }

    /// Ends the stream with an error.
    pub fn error(&mut self, error: LlmError) {
        if self.terminal {
            return;
        }
        self.events.push(LlmEvent::Error { error });
        self.terminal = true;
    }

    fn push_tool_call(
        &mut self,
        id: &str,
        name: &str,
        input: Value,
        provider_executed: bool,
        provider_metadata: Option<ProviderMetadata>,
    ) {
        if self.terminal {
            return;
        }
        self.ensure_step();
        if let Some(at) = self.open_tool_inputs.iter().position(|open| open == id) {
            self.open_tool_inputs.remove(at);
            self.events.push(LlmEvent::ToolInputEnd { id: id.to_owned() });
        }
        self.events.push(LlmEvent::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
            provider_executed,
            provider_metadata,
        });
    }

    fn close_open_blocks(&mut self) {
        for id in std::mem::take(&mut self.open_reasoning) {
            self.events.push(LlmEvent::ReasoningEnd { id, signature: None, encrypted: None, provider_metadata: None });
        }
        for id in std::mem::take(&mut self.open_text) {
            self.events.push(LlmEvent::TextEnd { id, provider_metadata: None });
        }
        for id in std::mem::take(&mut self.open_tool_inputs) {
            self.events.push(LlmEvent::ToolInputEnd { id });
        }
    }

    fn open_text_block(&mut self, id: &str) {
        if self.is_text_open(id) {
            return;
        }
        self.ensure_step();
        self.open_text.push(id.to_owned());
        self.events.push(LlmEvent::TextStart { id: id.to_owned() });
    }

    fn open_reasoning_block(&mut self, id: &str) {
        if self.is_reasoning_open(id) {
            return;
        }
        self.ensure_step();
        self.open_reasoning.push(id.to_owned());
        self.events.push(LlmEvent::ReasoningStart { id: id.to_owned() });
    }

    fn ensure_step(&mut self) {
        if !self.step_open {
            self.step_open = true;
            self.events.push(LlmEvent::StepStart { index: self.step });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_lifecycle_events_and_one_terminal() {
        let mut sink = EventSink::new();
        sink.reasoning_delta("r0", "think");
        sink.text_delta("t0", "Hi");
        sink.finish(Finish::new(FinishReason::Stop));
        sink.text_delta("t0", "late");
        sink.error(LlmError::invalid_output("late"));
        let events: Vec<_> = sink.drain().collect();
        assert_eq!(
            events,
            vec![
                LlmEvent::StepStart { index: 0 },
                LlmEvent::ReasoningStart { id: "r0".into() },
                LlmEvent::ReasoningDelta { id: "r0".into(), text: "think".into() },
                LlmEvent::TextStart { id: "t0".into() },
                LlmEvent::TextDelta { id: "t0".into(), text: "Hi".into() },
                LlmEvent::ReasoningEnd { id: "r0".into(), signature: None, encrypted: None, provider_metadata: None },
                LlmEvent::TextEnd { id: "t0".into(), provider_metadata: None },
                LlmEvent::StepFinish { index: 0, reason: FinishReason::Stop, usage: None },
                LlmEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: None,
                    response_id: None,
                    model: None,
                    provider_metadata: None
                },
            ]
        );
    }

    #[test]
    fn tool_call_closes_its_input_block() {
        let mut sink = EventSink::new();
        sink.tool_input_start("c1", "read");
        sink.tool_input_delta("c1", "{}");
        sink.tool_call("c1", "read", serde_json::json!({}), None);
        let kinds: Vec<_> = sink
            .drain()
            .map(|event| serde_json::to_value(event).unwrap()["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(kinds, ["step-start", "tool-input-start", "tool-input-delta", "tool-input-end", "tool-call"]);
    }
}
