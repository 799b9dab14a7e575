//! Options of the OpenAI protocol family (`openai` and `openai_compatible` namespaces), shared by
//! Chat Completions and Responses so that one set of options works whichever protocol a route uses.
//! A field a protocol has no wire field for is ignored by it; an unknown field is an error.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenAiOptions {
    /// Whether the provider keeps the response. Responses: with `false` reasoning is replayed from
    /// its encrypted content, otherwise by reference.
    pub store: Option<bool>,
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`. On Chat Completions it also switches the
    /// output limit to `max_completion_tokens`, which reasoning models require.
    pub reasoning_effort: Option<String>,
    /// Responses: `auto`, `concise` or `detailed` visible reasoning summaries.
    pub reasoning_summary: Option<String>,
    /// Responses: extra output to include, for example `reasoning.encrypted_content`.
    #[serde(default)]
    pub include: Vec<String>,
    pub prompt_cache_key: Option<String>,
    /// Responses: `low`, `medium` or `high`.
    pub text_verbosity: Option<String>,
    /// `auto`, `default`, `flex` or `priority`.
    pub service_tier: Option<String>,
    pub parallel_tool_calls: Option<bool>,
    /// Responses: send the baseline system context as the top-level `instructions` field instead of
    /// a leading `system` input message (the ChatGPT Codex backend requires `instructions`).
    pub system_as_instructions: Option<bool>,
    /// Chat Completions: role of the baseline system message, `system` (default) or `developer`.
    pub system_role: Option<String>,
    /// Chat Completions: where reasoning is echoed back on assistant messages for providers that
    /// need it in tool loops, `reasoning_content` (DeepSeek and others) or `reasoning_details`
    /// (OpenRouter).
    pub reasoning_field: Option<String>,
}
