//! The plugin seam: hook points the runner calls. Every method has a no-op default, and a runtime
//! built without hooks never calls any (no boxing, no allocation).

use futures_util::future::BoxFuture;
use opencode_llm::LlmRequest;

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
