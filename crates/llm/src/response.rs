//! Folding a stream of events into one response.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::ContentPart;
use crate::FinishReason;
use crate::LlmError;
use crate::LlmEvent;
use crate::Message;
use crate::ProviderMetadata;
use crate::Role;
use crate::Usage;

/// A completed (or failed) response: the assistant message to append to the conversation, and how
/// the turn ended. Appending `message` to the next request replays reasoning signatures, encrypted
/// reasoning and thought signatures exactly as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmResponse {
    pub message: Message,
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_metadata: Option<ProviderMetadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<LlmError>,
}

/// A tool call found in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

impl LlmResponse {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a LlmEvent>) -> Self {
        let mut fold = Fold::default();
        for event in events {
            fold.push(event);
        }
        fold.finish()
    }

    /// All visible text, concatenated.
    pub fn text(&self) -> String {
        self.message.text()
    }

    /// All reasoning text, concatenated.
    pub fn reasoning(&self) -> String {
        let mut out = String::new();
        for part in &self.message.content {
            if let ContentPart::Reasoning { text, .. } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// Local tool calls the caller should execute.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.message
            .content
            .iter()
            .filter_map(|part| match part {
                ContentPart::ToolCall { id, name, input, provider_executed: false, .. } => {
                    Some(ToolCall { id: id.clone(), name: name.clone(), input: input.clone() })
                }
                _ => None,
            })
            .collect()
    }
}

/// Incremental fold; parts keep the order in which their blocks started.
#[derive(Debug, Default)]
pub struct Fold {
    parts: Vec<ContentPart>,
    /// Open text/reasoning blocks: block id → index into `parts`.
    open: Vec<(String, usize)>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    response_id: Option<String>,
    model: Option<String>,
    provider_metadata: Option<ProviderMetadata>,
    error: Option<LlmError>,
}

impl Fold {
    pub fn push(&mut self, event: &LlmEvent) {
        match event {
            LlmEvent::TextStart { id } => self.open_block(id, ContentPart::text("")),
            LlmEvent::TextDelta { id, text } => {
                if let Some(ContentPart::Text { text: existing, .. }) = self.block(id) {
                    existing.push_str(text);
                }
            }
            LlmEvent::TextEnd { id, provider_metadata } => {
                if let Some(ContentPart::Text { provider_metadata: meta, .. }) = self.block(id) {
                    *meta = provider_metadata.clone();
                }
                self.close_block(id);
            }
            LlmEvent::ReasoningStart { id } => self.open_block(
                id,
                ContentPart::Reasoning {
                    text: String::new(),
                    signature: None,
                    encrypted: None,
                    provider_metadata: None,
                },
            ),
            LlmEvent::ReasoningDelta { id, text } => {
                if let Some(ContentPart::Reasoning { text: existing, .. }) = self.block(id) {
                    existing.push_str(text);
                }
            }
            LlmEvent::ReasoningEnd { id, signature, encrypted, provider_metadata } => {
                if let Some(ContentPart::Reasoning { signature: s, encrypted: e, provider_metadata: m, .. }) =
                    self.block(id)
                {
                    *s = signature.clone();
                    *e = encrypted.clone();
                    *m = provider_metadata.clone();
                }
                self.close_block(id);
            }
            LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata } => {
                self.parts.push(ContentPart::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    provider_executed: *provider_executed,
                    provider_metadata: provider_metadata.clone(),
                });
            }
            LlmEvent::ToolResult { id, name, result } => self.parts.push(ContentPart::ToolResult {
                id: id.clone(),
                name: name.clone(),
                result: result.clone(),
                provider_executed: true,
                cache: None,
                provider_metadata: None,
            }),
            LlmEvent::Finish { reason, usage, response_id, model, provider_metadata } => {
                self.finish_reason = Some(*reason);
                self.usage = usage.clone();
                self.response_id = response_id.clone();
                self.model = model.clone();
                self.provider_metadata = provider_metadata.clone();
            }
            LlmEvent::Error { error } => {
                self.finish_reason = Some(FinishReason::Error);
                self.error = Some(error.clone());
            }
            LlmEvent::StepStart { .. }
            | LlmEvent::StepFinish { .. }
            | LlmEvent::ToolInputStart { .. }
            | LlmEvent::ToolInputDelta { .. }
            | LlmEvent::ToolInputEnd { .. } => {}
        }
    }

    pub fn finish(self) -> LlmResponse {
        LlmResponse {
            message: Message { role: Role::Assistant, content: self.parts },
            finish_reason: self.finish_reason,
            usage: self.usage,
            response_id: self.response_id,
            model: self.model,
            provider_metadata: self.provider_metadata,
            error: self.error,
        }
    }

    fn open_block(&mut self, id: &str, part: ContentPart) {
        self.open.push((id.to_owned(), self.parts.len()));
        self.parts.push(part);
    }

    fn close_block(&mut self, id: &str) {
        self.open.retain(|(open, _)| open != id);
    }

    fn block(&mut self, id: &str) -> Option<&mut ContentPart> {
        let index = self.open.iter().rev().find(|(open, _)| open == id).map(|(_, index)| *index)?;
        self.parts.get_mut(index)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn folds_blocks_in_start_order_with_metadata() {
        let events = vec![
            LlmEvent::StepStart { index: 0 },
            LlmEvent::ReasoningStart { id: "r".into() },
            LlmEvent::ReasoningDelta { id: "r".into(), text: "hmm".into() },
            LlmEvent::ReasoningEnd {
                id: "r".into(),
                signature: Some("sig".into()),
                encrypted: None,
                provider_metadata: None,
            },
            LlmEvent::TextStart { id: "t".into() },
            LlmEvent::TextDelta { id: "t".into(), text: "Hel".into() },
            LlmEvent::TextDelta { id: "t".into(), text: "lo".into() },
            LlmEvent::TextEnd { id: "t".into(), provider_metadata: None },
            LlmEvent::ToolCall {
                id: "c".into(),
                name: "read".into(),
                input: json!({"path": "a"}),
                provider_executed: false,
                provider_metadata: None,
            },
            LlmEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: None,
                response_id: Some("resp".into()),
                model: None,
                provider_metadata: None,
            },
        ];
        let response = LlmResponse::from_events(&events);
        assert_eq!(response.text(), "Hello");
        assert_eq!(response.reasoning(), "hmm");
        assert_eq!(
            response.tool_calls(),
            vec![ToolCall { id: "c".into(), name: "read".into(), input: json!({"path": "a"}) }]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
        assert!(
            matches!(&response.message.content[0], ContentPart::Reasoning { signature: Some(s), .. } if s == "sig")
        );
    }
}
