//! Hooks mapped onto a provider turn's [`LlmRequest`], a new user message's parts, the tool
//! definitions the model sees, a tool call's input and result, and the compaction prompt, so the
//! session runtime's hook seam is a few one-line calls. Each is one atomic load while no plugin
//! implements its hook.

use opencode_llm::ContentPart;
use opencode_llm::LlmRequest;
use opencode_llm::SystemPart;
use opencode_llm::ToolDefinition;
use serde_json::Map;
use serde_json::Value;

use crate::hooks::ChatHeadersOutput;
use crate::hooks::ChatInput;
use crate::hooks::ChatMessageInput;
use crate::hooks::ChatMessageOutput;
use crate::hooks::ChatParamsOutput;
use crate::hooks::CompactingOutput;
use crate::hooks::HookName;
use crate::hooks::MessagesOutput;
use crate::hooks::SessionInput;
use crate::hooks::SystemOutput;
use crate::hooks::TextCompleteInput;
use crate::hooks::TextCompleteOutput;
use crate::hooks::ToolAfterInput;
use crate::hooks::ToolAfterOutput;
use crate::hooks::ToolBeforeOutput;
use crate::hooks::ToolCallInput;
use crate::hooks::ToolDefinitionInput;
use crate::hooks::ToolDefinitionOutput;
use crate::hooks::hook;
use crate::host::HookFailure;
use crate::host::PluginHost;

impl PluginHost {
    /// `chat.message`: may change a new user message's parts before it is persisted.
    pub async fn apply_chat_message(&self, input: &ChatMessageInput, parts: &mut Vec<ContentPart>) -> Vec<HookFailure> {
        if !self.implements(HookName::ChatMessage) {
            return Vec::new();
        }
        let mut output = ChatMessageOutput { parts: std::mem::take(parts) };
        let failures = self.trigger::<hook::ChatMessage>(input, &mut output).await;
        *parts = output.parts;
        failures
    }

    /// `tool.definition`, once per tool: may change the description and input schema the model sees.
    pub async fn apply_tool_definitions(&self, tools: &mut [ToolDefinition]) -> Vec<HookFailure> {
        if !self.implements(HookName::ToolDefinition) {
            return Vec::new();
        }
        let mut failures = Vec::new();
        for tool in tools {
            let input = ToolDefinitionInput { tool_id: tool.name.clone() };
            let mut output = ToolDefinitionOutput {
                description: std::mem::take(&mut tool.description),
                parameters: std::mem::take(&mut tool.input_schema),
            };
            failures.extend(self.trigger::<hook::ToolDefinition>(&input, &mut output).await);
            tool.description = output.description;
            tool.input_schema = output.parameters;
        }
        failures
    }

    /// `experimental.session.compacting`: context to add to the compaction prompt, or a prompt
    /// replacing it (empty output when no plugin implements the hook).
    pub async fn compacting(&self, input: &SessionInput) -> (CompactingOutput, Vec<HookFailure>) {
        let mut output = CompactingOutput::default();
        let failures = self.trigger::<hook::SessionCompacting>(input, &mut output).await;
        (output, failures)
    }

    /// `chat.params` (generation controls and provider options) then `chat.headers` (HTTP headers).
    pub async fn apply_chat_params(&self, input: &ChatInput, request: &mut LlmRequest) -> Vec<HookFailure> {
        let mut failures = Vec::new();
        if self.implements(HookName::ChatParams) {
            let generation = &request.generation;
            let mut params = ChatParamsOutput {
                temperature: generation.temperature,
                top_p: generation.top_p,
                top_k: generation.top_k,
                max_output_tokens: generation.max_tokens,
                options: request.options.0.clone(),
            };
            failures.extend(self.trigger::<hook::ChatParams>(input, &mut params).await);
            let generation = &mut request.generation;
            generation.temperature = params.temperature;
            generation.top_p = params.top_p;
            generation.top_k = params.top_k;
            generation.max_tokens = params.max_output_tokens;
            request.options.0 = params.options;
        }
        if self.implements(HookName::ChatHeaders) {
            let mut headers = ChatHeadersOutput::default();
            failures.extend(self.trigger::<hook::ChatHeaders>(input, &mut headers).await);
            request.http.headers.extend(headers.headers);
        }
        failures
    }

    /// `experimental.chat.messages.transform` over the projected history, then
    /// `experimental.chat.system.transform`, whose text is appended AFTER the baseline system parts
    /// (the baseline itself is never handed to plugins: it is the provider-cache prefix).
    pub async fn apply_transforms(&self, input: &ChatInput, request: &mut LlmRequest) -> Vec<HookFailure> {
        let mut failures = Vec::new();
        if self.implements(HookName::ChatMessagesTransform) {
            let mut messages = MessagesOutput { messages: std::mem::take(&mut request.messages) };
            failures.extend(self.trigger::<hook::ChatMessagesTransform>(input, &mut messages).await);
            request.messages = messages.messages;
        }
        if self.implements(HookName::ChatSystemTransform) {
            let mut system = SystemOutput::default();
            failures.extend(self.trigger::<hook::ChatSystemTransform>(input, &mut system).await);
            let extra = system.system.into_iter().filter(|text| !text.trim().is_empty());
            request.system.extend(extra.map(SystemPart::text));
        }
        failures
    }

    /// `experimental.text.complete`: may rewrite a finished assistant text part before it is stored.
    pub async fn apply_text_complete(&self, input: &TextCompleteInput, text: &mut String) -> Vec<HookFailure> {
        if !self.implements(HookName::TextComplete) {
            return Vec::new();
        }
        let mut output = TextCompleteOutput { text: std::mem::take(text) };
        let failures = self.trigger::<hook::TextComplete>(input, &mut output).await;
        *text = output.text;
        failures
    }

    /// `tool.execute.before`: may rewrite the call's arguments.
    pub async fn apply_tool_before(&self, input: &ToolCallInput, args: &mut Value) -> Vec<HookFailure> {
        if !self.implements(HookName::ToolExecuteBefore) {
            return Vec::new();
        }
        let mut output = ToolBeforeOutput { args: std::mem::take(args) };
        let failures = self.trigger::<hook::ToolExecuteBefore>(input, &mut output).await;
        *args = output.args;
        failures
    }

    /// `tool.execute.after`: may rewrite the settled result's title, text and metadata.
    pub async fn apply_tool_after(
        &self,
        input: &ToolAfterInput,
        title: &mut Option<String>,
        text: &mut String,
        metadata: &mut Map<String, Value>,
    ) -> Vec<HookFailure> {
        if !self.implements(HookName::ToolExecuteAfter) {
            return Vec::new();
        }
        let mut output =
            ToolAfterOutput { title: title.take(), output: std::mem::take(text), metadata: std::mem::take(metadata) };
        let failures = self.trigger::<hook::ToolExecuteAfter>(input, &mut output).await;
        *title = output.title;
        *text = output.output;
        *metadata = output.metadata;
        failures
    }
}
