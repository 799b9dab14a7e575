//! The plugin seam: hook points the runner calls. Every method has a no-op default, and a runtime
//! built without hooks never calls any (no boxing, no allocation). [`PluginHooks`] implements them
//! over the plugin host; a hook no plugin implements returns a finished zero-sized future (boxing it
//! does not allocate) after one atomic load.
//!
//! Two plugin hooks sit behind the tool registry's seams instead, because they act inside a tool
//! call: `permission.ask` ([`opencode_plugin_host::PluginPermissions`]) and `shell.env`
//! ([`opencode_plugin_host::PluginShellEnv`]); [`crate::RegistryTools::standard_with_plugins`]
//! installs both.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_llm::ContentPart;
use opencode_llm::LlmRequest;
use opencode_llm::MediaData;
use opencode_llm::ToolDefinition;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::ChatMessageInput;
use opencode_plugin_host::HookName;
use opencode_plugin_host::ModelLimit;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::PluginEvent;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::SessionInput;
use opencode_plugin_host::SideModel;
use opencode_plugin_host::TextCompleteInput;
use opencode_plugin_host::ToolAfterInput;
use opencode_plugin_host::ToolCallInput;
use opencode_session_store::FileData;
use opencode_session_store::PartKind;
use serde_json::json;

use crate::compaction::CompactionPrompt;
use crate::events::RuntimeEvent;
use crate::tools::ToolInvocation;
use crate::tools::ToolResult;

/// Which provider turn a hook is called for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    pub session_id: String,
    /// The assistant message the turn writes.
    pub message_id: String,
    pub agent: String,
    pub provider: String,
    pub model: String,
    /// The model's context window and output limit in tokens (0 when unknown).
    pub context_limit: u64,
    pub output_limit: u64,
}

/// Hook points, in the order the runner reaches them in a provider turn.
pub trait Hooks: Send + Sync {
    /// Whether [`Hooks::chat_message`] does anything. Only then does promotion settle the new user
    /// messages' parts before writing them (one more read of the pending input), so the default is
    /// `false`: implementations of `chat_message` must say `true` here.
    fn rewrites_messages(&self) -> bool {
        false
    }

    /// Whether the hooks keep each request inside the context window themselves (a plugin's
    /// messages transform manages it): then the runner skips its proactive compaction and keeps
    /// only the recovery from a provider's context-overflow error.
    fn manages_context(&self) -> bool {
        false
    }

    /// The runtime's side model (one-shot requests on the small model), given once when the
    /// runtime is built; hooks that have plugins pass it on.
    fn attach_side_model(&self, _model: Arc<dyn SideModel>) {}

    /// A user message about to be written at promotion (OpenCode's `chat.message`): may change its
    /// parts. `turn.message_id` is the new message's id; agent and model are those it runs under.
    fn chat_message<'a>(&'a self, _turn: &'a TurnInfo, _parts: &'a mut Vec<PartKind>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// An assistant text part the model finished, before it is stored for good
    /// (`experimental.text.complete`): may rewrite its text.
    fn text_complete<'a>(&'a self, _turn: &'a TurnInfo, _part_id: &'a str, _text: &'a mut String) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The tool definitions of a provider turn, as the model will see them (`tool.definition`).
    fn tool_definitions<'a>(&'a self, _turn: &'a TurnInfo, _tools: &'a mut Vec<ToolDefinition>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Chat parameters and headers (`request.generation`, `request.options`, `request.http.headers`).
    fn chat_params<'a>(&'a self, _turn: &'a TurnInfo, _request: &'a mut LlmRequest) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// System parts and messages, after history was projected and before the request is sent. The
    /// baseline part is the provider-cache prefix: changing it costs the cache.
    fn transform_request<'a>(&'a self, _turn: &'a TurnInfo, _request: &'a mut LlmRequest) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Before a tool call runs; may rewrite its input.
    fn tool_before<'a>(&'a self, _turn: &'a TurnInfo, _call: &'a mut ToolInvocation) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// After a tool call settled; may rewrite its result before it is persisted.
    fn tool_after<'a>(
        &'a self,
        _turn: &'a TurnInfo,
        _call: &'a ToolInvocation,
        _result: &'a mut ToolResult,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The compaction prompt of a session (`experimental.session.compacting`): context to add to
    /// it, or a prompt replacing its instructions.
    fn compacting<'a>(&'a self, _session_id: &'a str, _prompt: &'a mut CompactionPrompt) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Every event the runtime publishes (synchronous: keep it cheap).
    fn event(&self, _event: &RuntimeEvent) {}
}

/// Plugins as the runtime's hooks: each hook point dispatches the matching OpenCode plugin hooks
/// through an [`opencode_plugin_host::PluginHost`], in its registration order. A hook nobody
/// implements costs one atomic load; a failing plugin hook is logged by the host and skipped, and
/// never fails the turn.
#[derive(Debug, Clone)]
pub struct PluginHooks {
    host: Arc<PluginHost>,
}

impl PluginHooks {
    /// Hooks over `host`. Sessions should run only after `host.ready()` (NFR-01): before it, no
    /// plugin is active and every hook is a no-op.
    pub fn new(host: Arc<PluginHost>) -> Self {
        Self { host }
    }

    pub fn host(&self) -> &Arc<PluginHost> {
        &self.host
    }
}

impl Hooks for PluginHooks {
    fn rewrites_messages(&self) -> bool {
        self.host.implements(HookName::ChatMessage)
    }

    fn manages_context(&self) -> bool {
        self.host.manages_context()
    }

    fn attach_side_model(&self, model: Arc<dyn SideModel>) {
        self.host.provide_side_model(model);
    }

    fn text_complete<'a>(&'a self, turn: &'a TurnInfo, part_id: &'a str, text: &'a mut String) -> BoxFuture<'a, ()> {
        if !self.host.implements(HookName::TextComplete) {
            return Box::pin(async {});
        }
        Box::pin(async move {
            let input = TextCompleteInput {
                session_id: turn.session_id.clone(),
                message_id: turn.message_id.clone(),
                part_id: part_id.to_owned(),
            };
            let _skipped = self.host.apply_text_complete(&input, text).await;
        })
    }

    fn chat_message<'a>(&'a self, turn: &'a TurnInfo, parts: &'a mut Vec<PartKind>) -> BoxFuture<'a, ()> {
        if !self.host.implements(HookName::ChatMessage) {
            return Box::pin(async {});
        }
        Box::pin(async move {
            let input = ChatMessageInput {
                session_id: turn.session_id.clone(),
                agent: Some(turn.agent.clone()),
                model: Some(ModelRef { provider_id: turn.provider.clone(), model_id: turn.model.clone() }),
                message_id: Some(turn.message_id.clone()),
                variant: None,
            };
            let mut content: Vec<ContentPart> = parts.iter().filter_map(content_part).collect();
            let _skipped = self.host.apply_chat_message(&input, &mut content).await;
            *parts = content.into_iter().filter_map(prompt_part).collect();
        })
    }

    fn tool_definitions<'a>(&'a self, _turn: &'a TurnInfo, tools: &'a mut Vec<ToolDefinition>) -> BoxFuture<'a, ()> {
        if !self.host.implements(HookName::ToolDefinition) {
            return Box::pin(async {});
        }
        Box::pin(async move {
            let _skipped = self.host.apply_tool_definitions(tools).await;
        })
    }

    fn compacting<'a>(&'a self, session_id: &'a str, prompt: &'a mut CompactionPrompt) -> BoxFuture<'a, ()> {
        if !self.host.implements(HookName::SessionCompacting) {
            return Box::pin(async {});
        }
        Box::pin(async move {
            let input = SessionInput { session_id: session_id.to_owned() };
            let (output, _skipped) = self.host.compacting(&input).await;
            prompt.context.extend(output.context);
            if output.prompt.is_some() {
                prompt.prompt = output.prompt;
            }
        })
    }

    fn chat_params<'a>(&'a self, turn: &'a TurnInfo, request: &'a mut LlmRequest) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // Failures are logged by the host; a plugin never fails a turn.
            let _skipped = self.host.apply_chat_params(&chat_input(turn), request).await;
        })
    }

    fn transform_request<'a>(&'a self, turn: &'a TurnInfo, request: &'a mut LlmRequest) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _skipped = self.host.apply_transforms(&chat_input(turn), request).await;
        })
    }

    fn tool_before<'a>(&'a self, turn: &'a TurnInfo, call: &'a mut ToolInvocation) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let input = ToolCallInput {
                tool: call.name.clone(),
                session_id: turn.session_id.clone(),
                call_id: call.call_id.clone(),
            };
            let _skipped = self.host.apply_tool_before(&input, &mut call.input).await;
        })
    }

    fn tool_after<'a>(
        &'a self,
        turn: &'a TurnInfo,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // The input carries a copy of the arguments: only build it when someone listens.
            if !self.host.implements(HookName::ToolExecuteAfter) {
                return;
            }
            let input = ToolAfterInput {
                tool: call.name.clone(),
                session_id: turn.session_id.clone(),
                call_id: call.call_id.clone(),
                args: call.input.clone(),
            };
            let ToolResult { title, output, metadata, .. } = result;
            let _skipped = self.host.apply_tool_after(&input, title, output, metadata).await;
        })
    }

    fn event(&self, event: &RuntimeEvent) {
        if self.host.implements(HookName::Event) {
            self.host.event(&plugin_event(event));
        }
    }
}

/// The chat hooks' input for a provider turn.
fn chat_input(turn: &TurnInfo) -> ChatInput {
    ChatInput {
        session_id: turn.session_id.clone(),
        message_id: turn.message_id.clone(),
        agent: turn.agent.clone(),
        model: ModelRef { provider_id: turn.provider.clone(), model_id: turn.model.clone() },
        limit: (turn.context_limit > 0)
            .then_some(ModelLimit { context: turn.context_limit, output: turn.output_limit }),
    }
}

/// A new user message's part as `chat.message` sees it: text and files (the only kinds a prompt has).
fn content_part(part: &PartKind) -> Option<ContentPart> {
    match part {
        PartKind::Text { text, .. } => Some(ContentPart::text(text.clone())),
        PartKind::File(file) => Some(ContentPart::Media {
            media_type: file.mime.clone(),
            data: MediaData::Url(file.url.clone()),
            filename: file.filename.clone(),
        }),
        _ => None,
    }
}

/// A part `chat.message` returned, as a user message part; kinds a user message cannot hold are
/// dropped with a warning.
fn prompt_part(part: ContentPart) -> Option<PartKind> {
    match part {
        ContentPart::Text { text, .. } => {
            Some(PartKind::Text { text, synthetic: None, ignored: None, time: None, metadata: None })
        }
        ContentPart::Media { media_type, data, filename } => {
            let url = match data {
                MediaData::Url(url) => url,
                MediaData::Base64(base64) => format!("data:{media_type};base64,{base64}"),
            };
            Some(PartKind::File(FileData { mime: media_type, filename, url, source: None }))
        }
        other => {
            tracing::warn!(?other, "chat.message returned a part a user message cannot hold; dropped");
            None
        }
    }
}

/// A runtime event as OpenCode's bus names it: durable events keep their store type and data;
/// deltas are `message.part.delta`, status changes `session.status`.
fn plugin_event(event: &RuntimeEvent) -> PluginEvent {
    match event {
        RuntimeEvent::Durable(durable) => {
            PluginEvent { kind: durable.kind.as_str().to_owned(), properties: durable.data.clone() }
        }
        RuntimeEvent::Delta { session_id, message_id, part_id, kind, delta } => PluginEvent {
            kind: "message.part.delta".to_owned(),
            properties: json!({
                "sessionID": session_id,
                "messageID": message_id,
                "partID": part_id,
                "field": kind,
                "delta": delta,
            }),
        },
        RuntimeEvent::Status { session_id, status } => PluginEvent {
            kind: "session.status".to_owned(),
            properties: json!({"sessionID": session_id, "status": status}),
        },
    }
}
