//! The tool seam: what the runner needs from a Location's tools, and an in-memory implementation.
//!
//! [`ToolHost`] is deliberately small: the definitions an agent's model may see, and the execution of
//! one call into one bounded, settled [`ToolResult`]. The tool registry implements it for real tools
//! (bounding, managed output files, Location authority, permissions, doom-loop detection); programs
//! embedding the runtime can bring their own with [`FnTools`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::ToolOutputConfig;
use opencode_llm::ToolDefinition;
use opencode_system_context::Contribution;
use opencode_system_context::SystemContextRegistry;
use opencode_tool_registry::Agent;
use opencode_tool_registry::Agents;
use opencode_tool_registry::ProgressSink;
use opencode_tool_registry::tools::task::SubagentRunner;
use serde_json::Map;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A local tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInvocation {
    pub call_id: String,
    pub name: String,
    pub input: Value,
}

/// What a call runs with. `agent` is the effective agent of the provider turn that issued the call,
/// pinned for the call's lifetime (a later agent switch cannot change its policy).
#[derive(Clone)]
pub struct ToolRunContext {
    pub session_id: String,
    /// The assistant message that issued the call.
    pub message_id: String,
    pub call_id: String,
    pub agent: Arc<Agent>,
    /// The session's Location directory.
    pub directory: PathBuf,
    /// Cancelled when the drain is interrupted; the call should stop and settle as interrupted.
    pub cancel: CancellationToken,
    /// Where the call reports progress while it runs (shown live on its running part).
    pub progress: Arc<dyn ProgressSink>,
}

impl std::fmt::Debug for ToolRunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunContext")
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .field("agent", &self.agent.name)
            .finish_non_exhaustive()
    }
}

/// How a call settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Completed,
    /// A failure the model can act on; `output` says what went wrong.
    Error,
    /// The user declined the call (a permission ask or a question, without feedback): it failed as
    /// `Error` does, and the turn halts after this step instead of asking the model again.
    Declined,
    Interrupted,
}

/// The one settled result of a call: what history stores and the model sees.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub status: ToolStatus,
    pub title: Option<String>,
    /// The bounded Model Tool Output.
    pub output: String,
    pub metadata: Map<String, Value>,
    /// The Managed Tool Output File holding the complete text, when the output was cut.
    pub managed_path: Option<PathBuf>,
}

impl ToolResult {
    pub fn completed(output: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Completed,
            title: None,
            output: output.into(),
            metadata: Map::new(),
            managed_path: None,
        }
    }

    pub fn error(output: impl Into<String>) -> Self {
        Self { status: ToolStatus::Error, ..Self::completed(output) }
    }

    pub fn interrupted() -> Self {
        Self { status: ToolStatus::Interrupted, ..Self::completed(opencode_session_store::INTERRUPTED_TOOL_ERROR) }
    }
}

/// A Location's tools as the runner sees them.
pub trait ToolHost: Send + Sync {
    /// The tools the model may call under `agent`.
    fn definitions(&self, agent: &Agent) -> Vec<ToolDefinition>;

    /// The name of every tool of the Location, whatever the agent (OpenCode's `tool.ids`).
    fn names(&self) -> Vec<String>;

    /// Runs one call and settles it; never fails (unknown tools and bad input settle as errors).
    fn execute<'a>(&'a self, call: &'a ToolInvocation, ctx: &'a ToolRunContext) -> BoxFuture<'a, ToolResult>;

    /// Bounds the result of a call the runtime settled itself (a user's subtask runs the `task`
    /// machinery without asking the tools), exactly as a call through [`ToolHost::execute`] is
    /// bounded. The default keeps the head within the default limits (no managed output file).
    fn bound_output<'a>(&'a self, _call: &'a ToolInvocation, result: ToolResult) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { bound_result(result, ToolOutputConfig::default()) })
    }

    /// Context Sources the tools bring with them (MCP servers' instructions), registered when the
    /// Location opens and kept alive with it.
    fn register_context(&self, _context: &SystemContextRegistry) -> crate::error::Result<Vec<Contribution>> {
        Ok(Vec::new())
    }

    /// Offers the `task` tool, delegating to the subagents of `agents` through `runner`. The runtime
    /// calls this when it opens the Location; hosts without subagent support ignore it.
    fn attach_subagents(&self, _runner: Arc<dyn SubagentRunner>, _agents: &Agents) {}

    /// The Location's MCP servers, for run-time control (OpenCode's `/mcp` routes); `None` for
    /// hosts without MCP support.
    fn mcp(&self) -> Option<opencode_mcp::McpManager> {
        None
    }
}

/// A Location without tools.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTools;

impl ToolHost for NoTools {
    fn definitions(&self, _agent: &Agent) -> Vec<ToolDefinition> {
        Vec::new()
    }

    fn names(&self) -> Vec<String> {
        Vec::new()
    }

    fn execute<'a>(&'a self, call: &'a ToolInvocation, _ctx: &'a ToolRunContext) -> BoxFuture<'a, ToolResult> {
        let message = format!("Model tried to call unavailable tool '{}'. No tools are available.", call.name);
        Box::pin(async move { ToolResult::error(message) })
    }
}

/// The future a [`FnTools`] handler returns: the text, or a model-visible error.
pub type ToolFuture = BoxFuture<'static, Result<String, String>>;

type Handler = Arc<dyn Fn(Value, ToolRunContext) -> ToolFuture + Send + Sync>;

/// Tools made of async closures, bounded by [`ToolOutputConfig`] (head kept, a note appended). For
/// tests and embedders; real tools go through the tool registry.
#[derive(Clone, Default)]
pub struct FnTools {
    tools: BTreeMap<String, (ToolDefinition, Handler)>,
    limits: ToolOutputConfig,
}

impl std::fmt::Debug for FnTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTools").field("tools", &self.tools.keys().collect::<Vec<_>>()).finish()
    }
}

impl FnTools {
    pub fn new() -> Self {
        Self::default()
    }

    /// Output limits (default 2000 lines or 50 KiB).
    pub fn with_limits(mut self, limits: ToolOutputConfig) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a tool; `handler` gets the input and the call's context.
    pub fn tool(
        mut self,
        definition: ToolDefinition,
        handler: impl Fn(Value, ToolRunContext) -> ToolFuture + Send + Sync + 'static,
    ) -> Self {
        self.tools.insert(definition.name.clone(), (definition, Arc::new(handler)));
        self
    }
}

impl ToolHost for FnTools {
    fn definitions(&self, _agent: &Agent) -> Vec<ToolDefinition> {
        self.tools.values().map(|(definition, _)| definition.clone()).collect()
    }

    fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    fn bound_output<'a>(&'a self, _call: &'a ToolInvocation, result: ToolResult) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { bound_result(result, self.limits) })
    }

    fn execute<'a>(&'a self, call: &'a ToolInvocation, ctx: &'a ToolRunContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some((_, handler)) = self.tools.get(&call.name) else {
                let available = self.tools.keys().cloned().collect::<Vec<_>>().join(", ");
                return ToolResult::error(format!(
                    "Model tried to call unavailable tool '{}'. Available tools: {available}.",
                    call.name
                ));
            };
            let run = handler(call.input.clone(), ctx.clone());
            let result = tokio::select! {
                result = run => result,
                () = ctx.cancel.cancelled() => return ToolResult::interrupted(),
            };
            match result {
                Ok(text) => ToolResult::completed(bound(&text, self.limits)),
                Err(text) => ToolResult::error(bound(&text, self.limits)),
            }
        })
    }
}

/// A settled result with its text bounded by `limits` (an interruption's text is fixed).
fn bound_result(mut result: ToolResult, limits: ToolOutputConfig) -> ToolResult {
    if result.status != ToolStatus::Interrupted {
        result.output = bound(&result.output, limits);
    }
    result
}

/// Keeps the head of `text` within `limits` and says how much was cut.
fn bound(text: &str, limits: ToolOutputConfig) -> String {
    let mut end = 0;
    for (lines, line) in text.split_inclusive('\n').enumerate() {
        if lines >= limits.max_lines || end + line.len() > limits.max_bytes {
            let cut = text.len() - end;
            return format!("{}\n\n... {cut} bytes truncated ...", &text[..end]);
        }
        end += line.len();
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_bounded_by_lines_and_bytes() {
        let limits = ToolOutputConfig { max_lines: 2, max_bytes: 100 };
        assert_eq!(bound("a\nb\n", limits), "a\nb\n");
        assert_eq!(bound("a\nb\nc\n", limits), "a\nb\n\n\n... 2 bytes truncated ...");
        let bytes = ToolOutputConfig { max_lines: 10, max_bytes: 3 };
        assert_eq!(bound("ab\ncd\n", bytes), "ab\n\n\n... 3 bytes truncated ...");
    }

    #[test]
    fn a_settled_result_is_bounded_unless_it_was_interrupted() {
        let limits = ToolOutputConfig { max_lines: 1, max_bytes: 5 };
        let failed = bound_result(ToolResult::error("a\nb\n"), limits);
        assert_eq!((failed.status, failed.output.as_str()), (ToolStatus::Error, "a\n\n\n... 2 bytes truncated ..."));
        assert_eq!(bound_result(ToolResult::interrupted(), limits), ToolResult::interrupted());
    }
}
