//! The seam to the session runtime: [`SessionDriver`] admits prompts, runs them, interrupts drains and
//! streams live events. The server serves everything else from durable state in the store; only these
//! operations need a runtime. [`crate::EchoDriver`] is a complete reference implementation for tests
//! and benchmarks; [`UnavailableDriver`] answers every prompt with 503 until a runtime is plugged in.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use opencode_session_runtime::CommandRun;
use opencode_session_runtime::LocationTools;
use opencode_session_runtime::PluginCommand;
use opencode_session_runtime::mcp::McpEvent;
use opencode_session_runtime::mcp::McpManager;
use opencode_session_store::Delivery;
use opencode_session_store::Event;
use opencode_session_store::MessageWithParts;
use opencode_session_store::Part;
use opencode_session_store::Session;
use opencode_session_store::SessionInput;
use opencode_session_store::StoredPermission;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// A boxed, sendable future (the trait is used as `Arc<dyn SessionDriver>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the HTTP layer needs from the session runtime.
pub trait SessionDriver: Send + Sync + 'static {
    /// Admits `request` durably, runs the session until the reply to it is finished, and returns the
    /// assistant message with its parts (`POST /session/{id}/message`).
    fn prompt(&self, session: Session, request: PromptBody) -> BoxFuture<'_, Result<MessageWithParts, DriverError>>;

    /// Admits `request` durably with `delivery` and returns as soon as the admission is durable; execution
    /// continues in the background (`prompt_async`, `POST /api/session/{id}/prompt`).
    fn prompt_async(
        &self,
        session: Session,
        request: PromptBody,
        delivery: Delivery,
    ) -> BoxFuture<'_, Result<SessionInput, DriverError>>;

    /// Interrupts the session's active drain; interrupting an idle or unknown session is a no-op.
    fn interrupt(&self, session_id: String) -> BoxFuture<'_, Result<(), DriverError>>;

    /// Called after a permission reply was stored, so that a waiting tool call can continue; a
    /// rejection may carry feedback for the model.
    fn permission_replied(&self, _permission: StoredPermission, _feedback: Option<String>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Holds the session for a change that must not race a turn (editing its history, a shell
    /// command): no turn starts until the returned value is dropped; [`DriverError::Busy`] while one
    /// runs. `Ok(None)` when the driver keeps no holds (the route then checks
    /// [`SessionDriver::statuses`]).
    fn hold(&self, _session_id: &str) -> Result<Option<Box<dyn Send>>, DriverError> {
        Ok(None)
    }

    /// Stages a revert from `message_id` (or `part_id`) on, putting back the files the reverted
    /// steps changed where the driver keeps work-tree snapshots; `None` when it keeps none (the
    /// route then only stages the revert in the store).
    fn revert(
        &self,
        _session_id: String,
        _message_id: String,
        _part_id: Option<String>,
    ) -> Option<BoxFuture<'_, Result<Session, DriverError>>> {
        None
    }

    /// Undoes a staged revert, restoring the files an undo put back; `None` when the driver keeps no
    /// work-tree snapshots.
    fn unrevert(&self, _session_id: String) -> Option<BoxFuture<'_, Result<Session, DriverError>>> {
        None
    }

    /// The slash commands the driver's plugins contribute (listed beside the configured ones).
    fn plugin_commands(&self) -> Vec<PluginCommand> {
        Vec::new()
    }

    /// Runs the plugin command `name` in the session; `None` when no plugin offers it. An answer
    /// given without a model call is recorded in the session and returned; a prompt is for the
    /// caller to send.
    fn run_plugin_command(
        &self,
        _session_id: String,
        _name: String,
        _arguments: String,
    ) -> Option<BoxFuture<'_, Result<CommandRun, DriverError>>> {
        None
    }

    /// Compacts the session now and waits until it is idle again (`POST /session/{id}/summarize`).
    fn compact(&self, _session_id: String) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async { Err(DriverError::Unavailable("this server cannot compact sessions".to_owned())) })
    }

    /// Forgets what the runtime loaded for `directory` and the directories inside it (every directory
    /// when `None`): configuration, agents, catalog and tools (MCP servers included), so that the next
    /// prompt there runs with the current configuration. A turn running meanwhile finishes with what
    /// it started with.
    fn reload(&self, _directory: Option<&Path>) {}

    /// The tools of `directory`: what `agent` (the default one when `None`) is offered, and the name
    /// of every tool (OpenCode's `tool.list` and `tool.ids`); `None` when the driver runs no tools.
    /// Blocking: it may open the directory's tools.
    fn tools(&self, _directory: &Path, _agent: Option<&str>) -> Result<Option<LocationTools>, DriverError> {
        Ok(None)
    }

    /// The MCP servers of `directory` (OpenCode's `/mcp` routes), opening what the driver needs
    /// for it; `None` when the driver runs no MCP servers.
    fn mcp(&self, _directory: &Path) -> Result<Option<McpManager>, DriverError> {
        Ok(None)
    }

    /// The MCP events of every directory's servers (`mcp.tools.changed`, `mcp.browser.open.failed`),
    /// each with its directory; `None` when the driver runs no MCP servers.
    fn mcp_events(&self) -> Option<broadcast::Receiver<(PathBuf, McpEvent)>> {
        None
    }

    /// Called when the server shuts down, before it stops accepting requests: stop active drains at a
    /// durable point (admitted input stays pending for the next start).
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The driver's events: live ones (`session.status`, `session.idle`, `message.part.delta`, ...) and,
    /// when [`SessionDriver::forwards_durable_events`], the store's committed events in commit order.
    /// `None` when the driver has none.
    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<DriverEvent>>>;

    /// Whether the driver owns the store's (single) event hook and forwards committed events through
    /// [`SessionDriver::subscribe`]; the server then installs no hook of its own.
    fn forwards_durable_events(&self) -> bool {
        false
    }

    /// What the driver keeps in memory (cache sizes and budgets, open Locations), as JSON for
    /// `GET /global/health`; `None` when it keeps nothing worth reporting.
    fn memory(&self) -> Option<Value> {
        None
    }

    /// Sessions that are not idle, with their status (`GET /session/status`).
    fn statuses(&self) -> BTreeMap<String, SessionStatus> {
        BTreeMap::new()
    }

    /// Permission requests tool calls are waiting on, oldest first (`GET /permission`).
    fn permissions(&self) -> Vec<PermissionRequest> {
        Vec::new()
    }

    /// Questions the `question` tool is waiting on, oldest first (`GET /question`).
    fn questions(&self) -> Vec<QuestionRequest> {
        Vec::new()
    }

    /// Answers a pending question (`answers`, one list of chosen labels per question) or dismisses it
    /// (`None`); the waiting call continues. Unknown ids are [`DriverError::NotFound`].
    fn answer_question(
        &self,
        id: String,
        _answers: Option<Vec<Vec<String>>>,
    ) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async move { Err(DriverError::NotFound(format!("question {id} not found"))) })
    }
}

/// `PermissionRequest`: a pending permission ask of a tool call, as `GET /permission` and
/// `permission.asked` show it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PermissionRequest {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The permission key (`edit`, `bash`, `external_directory`, ...).
    pub permission: String,
    /// What is being done (paths, commands), matched against rule patterns.
    pub patterns: Vec<String>,
    pub metadata: serde_json::Map<String, Value>,
    /// The patterns an `always` reply approves.
    pub always: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<QuestionTool>,
}

impl PermissionRequest {
    /// The permission ask of a pending tool-registry request (`None` for questions).
    pub fn from_pending(request: &opencode_tool_registry::PendingRequest) -> Option<Self> {
        let opencode_tool_registry::PendingKind::Permission(ask) = &request.kind else { return None };
        Some(Self {
            id: request.id.clone(),
            session_id: request.session_id.clone(),
            permission: ask.permission.clone(),
            patterns: ask.patterns.clone(),
            metadata: ask.metadata.clone(),
            always: ask.always.clone(),
            tool: request
                .tool
                .as_ref()
                .map(|tool| QuestionTool { message_id: tool.message_id.clone(), call_id: tool.call_id.clone() }),
        })
    }
}

/// `QuestionRequest`: a pending `question` tool call, as `GET /question` and `question.asked` show it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct QuestionRequest {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub questions: Vec<opencode_tool_registry::Question>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<QuestionTool>,
}

/// `QuestionTool` (and a permission request's `tool`): the tool call that asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct QuestionTool {
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(rename = "callID")]
    pub call_id: String,
}

impl QuestionRequest {
    /// The question of a pending tool-registry request (`None` for permission requests).
    pub fn from_pending(request: &opencode_tool_registry::PendingRequest) -> Option<Self> {
        let opencode_tool_registry::PendingKind::Question { questions } = &request.kind else { return None };
        Some(Self {
            id: request.id.clone(),
            session_id: request.session_id.clone(),
            questions: questions.clone(),
            tool: request
                .tool
                .as_ref()
                .map(|tool| QuestionTool { message_id: tool.message_id.clone(), call_id: tool.call_id.clone() }),
        })
    }
}

/// One event of a driver, in the order the server should publish it.
#[derive(Debug, Clone, PartialEq)]
pub enum DriverEvent {
    /// A live-only event (not replayable).
    Live(LiveEvent),
    /// A committed store event (replayable with `Reader::events_after`).
    Durable(Event),
}

/// A live event from the runtime, published on `/event` beside the store's durable events.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    /// OpenCode's event type, e.g. `message.part.delta`.
    pub kind: String,
    /// The event's `properties`; `properties.sessionID` routes it to the session's directory.
    pub properties: Value,
}

/// `SessionStatus`: `{type: idle}`, `{type: busy}` or `{type: retry, attempt, message, next}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SessionStatus {
    Idle,
    Busy,
    Retry { attempt: u32, message: String, next: i64 },
}

/// Why the runtime refused or failed a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

/// The body of `POST /session/{id}/message` and `prompt_async` (OpenCode 1.x field names).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "PromptRequest")]
pub struct PromptBody {
    /// The user message id to use (an exact retry reuses it).
    #[serde(rename = "messageID", default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PromptModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Only record the message; do not run a provider turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_reply: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, bool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub parts: Vec<PartInput>,
}

impl PromptBody {
    /// A prompt of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            parts: vec![PartInput::Text(TextPartInput { text: text.into(), ..TextPartInput::default() })],
            ..Self::default()
        }
    }

    /// The text parts joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                PartInput::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// `{providerID, modelID}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptModel {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
}

/// One part of a prompt: text, file, agent mention or subtask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PartInput {
    Text(TextPartInput),
    File(FilePartInput),
    Agent(AgentPartInput),
    Subtask(SubtaskPartInput),
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextPartInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilePartInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub mime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPartInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubtaskPartInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub prompt: String,
    pub description: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PromptModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// A driver for servers without a session runtime: every prompt is answered with 503, interrupts are
/// no-ops (there is nothing running).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnavailableDriver;

const NO_RUNTIME: &str = "this server has no session runtime: prompts cannot run (durable routes still work)";

impl SessionDriver for UnavailableDriver {
    fn prompt(&self, _: Session, _: PromptBody) -> BoxFuture<'_, Result<MessageWithParts, DriverError>> {
        Box::pin(async { Err(DriverError::Unavailable(NO_RUNTIME.to_owned())) })
    }

    fn prompt_async(&self, _: Session, _: PromptBody, _: Delivery) -> BoxFuture<'_, Result<SessionInput, DriverError>> {
        Box::pin(async { Err(DriverError::Unavailable(NO_RUNTIME.to_owned())) })
    }

    fn interrupt(&self, _: String) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<DriverEvent>>> {
        None
    }
}

/// The stored part a prompt part becomes in the user message `message_id` (a new `prt_` id unless the
/// client chose one).
pub fn part_from_input(input: &PartInput, session_id: &str, message_id: &str) -> Result<Part, DriverError> {
    let mut value = serde_json::to_value(input).map_err(|err| DriverError::Invalid(format!("prompt part: {err}")))?;
    if let Value::Object(map) = &mut value {
        if !map.get("id").is_some_and(Value::is_string) {
            map.insert("id".to_owned(), Value::String(id::ascending(IdKind::Part)));
        }
        map.insert("sessionID".to_owned(), Value::String(session_id.to_owned()));
        map.insert("messageID".to_owned(), Value::String(message_id.to_owned()));
    }
    serde_json::from_value(value).map_err(|err| DriverError::Invalid(format!("prompt part: {err}")))
}
