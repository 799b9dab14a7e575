//! Provider-neutral stream events and normalised usage.
//!
//! Every successful response stream ends with exactly one terminal event: [`LlmEvent::Finish`] or
//! [`LlmEvent::Error`]. Blocks open with a `*-start` event and close with `*-end` before the terminal.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::LlmError;
use crate::ProviderMetadata;
use crate::ToolResultValue;

/// One event of a streamed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LlmEvent {
    StepStart {
        index: u32,
    },
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        text: String,
    },
    TextEnd {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        text: String,
    },
    ReasoningEnd {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    ToolInputStart {
        id: String,
        name: String,
    },
    ToolInputDelta {
        id: String,
        text: String,
    },
    ToolInputEnd {
        id: String,
    },
    /// A complete tool call with parsed input.
    ToolCall {
        id: String,
        name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// The result of a provider-executed tool.
    ToolResult {
        id: String,
        name: String,
        result: ToolResultValue,
    },
    StepFinish {
        index: u32,
        reason: FinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// Terminal: the response completed.
    Finish {
        reason: FinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// Terminal: the provider or the stream failed.
    Error {
        error: LlmError,
    },
}

impl LlmEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Finish { .. } | Self::Error { .. })
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Error,
    Unknown,
}

/// Token usage, normalised across providers so that
/// `non_cached_input_tokens + cache_read_input_tokens + cache_write_input_tokens == input_tokens`
/// and `reasoning_tokens <= output_tokens`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// All prompt tokens, cached or not.
    pub input_tokens: u64,
    /// All generated tokens, reasoning included.
    pub output_tokens: u64,
    pub non_cached_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    pub reasoning_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// For providers whose input count already includes cached tokens (OpenAI, Gemini, most
    /// compatible providers) and whose output count already includes reasoning.
    pub fn from_inclusive(input: u64, cache_read: u64, cache_write: u64, output: u64, reasoning: u64) -> Self {
        let cache_read = cache_read.min(input);
        let cache_write = cache_write.min(input - cache_read);
        let output = output.max(reasoning);
        Self {
            input_tokens: input,
            output_tokens: output,
            non_cached_input_tokens: input - cache_read - cache_write,
            cache_read_input_tokens: cache_read,
            cache_write_input_tokens: cache_write,
            reasoning_tokens: reasoning,
            total_tokens: input + output,
        }
    }

    /// For providers whose input count excludes cached tokens (Anthropic, Bedrock).
    pub fn from_exclusive(non_cached: u64, cache_read: u64, cache_write: u64, output: u64, reasoning: u64) -> Self {
        let input = non_cached + cache_read + cache_write;
        Self::from_inclusive(input, cache_read, cache_write, output, reasoning)
    }

    /// Output tokens the user can see (reasoning excluded).
    pub fn visible_output_tokens(&self) -> u64 {
        self.output_tokens.saturating_sub(self.reasoning_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusive_usage_splits_cached_input() {
        let usage = Usage::from_inclusive(291, 290, 0, 222, 196);
        assert_eq!(
            usage,
            Usage {
                input_tokens: 291,
                output_tokens: 222,
                non_cached_input_tokens: 1,
                cache_read_input_tokens: 290,
                cache_write_input_tokens: 0,
                reasoning_tokens: 196,
                total_tokens: 513,
            }
        );
    }

    #[test]
    fn exclusive_usage_adds_cached_input() {
        let usage = Usage::from_exclusive(3, 1111, 20, 5, 0);
        assert_eq!(usage.input_tokens, 1134);
        assert_eq!(usage.non_cached_input_tokens, 3);
        assert_eq!(usage.total_tokens, 1139);
    }

    #[test]
    fn inconsistent_provider_counts_are_clamped() {
        let usage = Usage::from_inclusive(10, 50, 5, 2, 7);
        assert_eq!(usage.cache_read_input_tokens, 10);
        assert_eq!(usage.cache_write_input_tokens, 0);
        assert_eq!(usage.non_cached_input_tokens, 0);
        assert_eq!(usage.output_tokens, 7);
    }
}
