//! Hooks mapped onto a provider turn's [`LlmRequest`] and a tool call's input and result, so the
//! session runtime's hook seam is a few one-line calls.

use opencode_llm::LlmRequest;
use opencode_llm::SystemPart;
use serde_json::Map;
use serde_json::Value;

use crate::hooks::ChatHeadersOutput;
use crate::hooks::ChatInput;
use crate::hooks::ChatParamsOutput;
use crate::hooks::HookName;
use crate::hooks::MessagesOutput;
use crate::hooks::SystemOutput;
use crate::hooks::ToolAfterInput;
use crate::hooks::ToolAfterOutput;
use crate::hooks::ToolBeforeOutput;
use crate::hooks::ToolCallInput;
use crate::hooks::hook;
use crate::host::HookFailure;
use crate::host::PluginHost;

impl PluginHost {
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
