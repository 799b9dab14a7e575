//! The plugin seam: hook points the runner calls. Every method has a no-op default, and a runtime
//! built without hooks never calls any (no boxing, no allocation). [`PluginHooks`] implements them
//! over the plugin host.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_llm::LlmRequest;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::HookName;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::PluginEvent;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::ToolAfterInput;
use opencode_plugin_host::ToolCallInput;
use serde_json::json;

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
}

/// Hook points, in the order the runner reaches them in a provider turn.
pub trait Hooks: Send + Sync {
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
    }
}

/// A runtime event as OpenCode's bus names it: durable events keep their store type and data;
/// deltas are `message.part.delta`, status changes `session.status`.
fn plugin_event(event: &RuntimeEvent) -> PluginEvent {
    match event {
        RuntimeEvent::Durable(durable) => PluginEvent { kind: durable.kind.clone(), properties: durable.data.clone() },
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
