//! `session/prompt`: the prompt is admitted durably, then the turn's events stream to the client as
//! `session/update` notifications until the session is idle, and the request is answered with the
//! stop reason. `session/cancel` interrupts the drain (tool processes are killed; what was done is
//! kept, as in any interrupted turn).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, PromptRequest, PromptResponse, SessionInfoUpdate, SessionUpdate, StopReason,
    ToolCallStatus, ToolCallUpdate, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use opencode_session_runtime::CommandRun;
use opencode_session_runtime::RuntimeError;
use opencode_session_runtime::mcp::McpManager;
use opencode_session_runtime::{DeltaKind, DrainOutcome, PromptRequest as RuntimePrompt, RuntimeEvent};
use opencode_session_store::{MessageInfo, Part, PartKind, Session, Todo, ToolState};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::error::AgentError;
use crate::prompt::Ask;
use crate::server::{Shared, Turn, answer};
use crate::session::{blocking, notify};

/// Handles `session/prompt`: checks it, then runs the turn in a task of its own so that the
/// connection keeps serving (`session/cancel`, permission answers) meanwhile.
pub(crate) async fn start(
    shared: Arc<Shared>,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let Prepared { session, ask, turn, mcp } = match prepare(&shared, &request).await {
        Ok(prepared) => prepared,
        Err(err) => return answer(responder, Err(err)),
    };
    let task_cx = cx.clone();
    cx.spawn(async move {
        // The directory's servers (the client's among them, added by `session/new`) have connected
        // or failed, each within its own timeout, so that the turn is offered their tools.
        if let Some(mcp) = mcp {
            mcp.settled().await;
        }
        let result = run(&shared, &session, ask, &turn, &task_cx).await;
        shared.end_turn(&session.id);
        // The client may be gone; its connection's end is handled elsewhere.
        if let Err(err) = answer(responder, result) {
            tracing::debug!(%err, "cannot answer a prompt");
        }
        Ok(())
    })
}

/// The session, what the prompt asks, and the turn registered for it.
async fn prepare(shared: &Shared, request: &PromptRequest) -> Result<Prepared, AgentError> {
    shared.ready()?;
    let session = shared.engine.runtime.session(&request.session_id.0).await?;
    let (text, files) = crate::prompt::convert(&request.prompt)?;
    let runtime = shared.engine.runtime.clone();
    // Prompts wait for the plugins' start (their commands are among what a prompt may run).
    shared.engine.plugins.ready().await.map_err(|err| AgentError::Internal(format!("{err} ({})", err.hint())))?;
    let plugin: Vec<String> = shared.engine.plugins.commands().into_iter().map(|command| command.name).collect();
    let directory = PathBuf::from(&session.directory);
    // One trip off the async threads: the Location (opened if needed, its MCP servers connecting)
    // and, for a command, the configuration that defines it.
    let (ask, mcp) = blocking(move || {
        let mcp = runtime.mcp(&directory)?;
        let ask = if text.starts_with('/') {
            let config = runtime.config(&directory)?;
            crate::prompt::ask(text, files, &config, &directory, &plugin)?
        } else {
            Ask::Message { text, files, agent: None, model: None }
        };
        Ok((ask, mcp))
    })
    .await?;
    let turn = shared.begin_turn(&session.id)?;
    Ok(Prepared { session, ask, turn, mcp })
}

/// A prompt ready to run.
struct Prepared {
    session: Session,
    ask: Ask,
    turn: Arc<Turn>,
    /// The MCP servers of the session's directory, when its tools have MCP support.
    mcp: Option<McpManager>,
}

/// Runs the turn to its end, streaming it.
async fn run(
    shared: &Shared,
    session: &Session,
    ask: Ask,
    turn: &Turn,
    cx: &ConnectionTo<Client>,
) -> Result<PromptResponse, AgentError> {
    let runtime = &shared.engine.runtime;
    // Subscribed before admission, so that nothing of the turn is missed.
    let mut events = runtime.subscribe();
    // The turn's file tools read and write through the client's file system where it offers one.
    let _linked = shared.engine.files.link(&session.id, cx.clone(), &shared.client().fs);
    let mut stream = Stream::new(session, cx.clone());
    let outcome = match ask {
        Ask::Compact => {
            let compact = runtime.compact(&session.id);
            follow(compact, &mut events, &mut stream).await
        }
        Ask::Plugin { name, arguments } => {
            let answered = plugin_command(shared, &session.id, name, arguments);
            follow(answered, &mut events, &mut stream).await
        }
        Ask::Message { text, files, agent, model } => {
            let prompt = RuntimePrompt { files, agent, model, ..RuntimePrompt::text(&session.id, text) };
            runtime.prompt(prompt).await?;
            follow(runtime.wait_idle(&session.id), &mut events, &mut stream).await
        }
    };
    usage(shared, &stream);
    if turn.cancelled.load(Ordering::Acquire) {
        return Ok(PromptResponse::new(StopReason::Cancelled));
    }
    match outcome.unwrap_or(DrainOutcome::Idle) {
        DrainOutcome::Interrupted => Ok(PromptResponse::new(StopReason::Cancelled)),
        DrainOutcome::Failed { message, hint } => {
            Err(AgentError::Internal(format!("the turn failed: {message} ({hint})")))
        }
        DrainOutcome::Completed | DrainOutcome::Idle => Ok(PromptResponse::new(stream.stop_reason())),
    }
}

/// Runs a plugin's command: its answer is recorded in the session (and so streamed as the agent's
/// message), its prompt sent to the model; a failure is the turn's.
async fn plugin_command(shared: &Shared, session: &str, name: String, arguments: String) -> Option<DrainOutcome> {
    let runtime = &shared.engine.runtime;
    let failed = |err: RuntimeError| DrainOutcome::Failed { message: err.to_string(), hint: err.hint().to_owned() };
    match shared.engine.plugins.run_command(runtime, &name, session, &arguments).await {
        None => Some(failed(RuntimeError::Plugin(format!("the command /{name} is no longer offered")))),
        Some(Err(err)) => Some(failed(err)),
        Some(Ok(CommandRun::Answered(_))) => Some(DrainOutcome::Completed),
        Some(Ok(CommandRun::Prompt(text))) => {
            if let Err(err) = runtime.prompt(RuntimePrompt::text(session, text)).await {
                return Some(failed(err));
            }
            runtime.wait_idle(session).await
        }
    }
}

/// Reports the context window in use after the turn (its last request's input and output against
/// the model's context limit) and the session's cost so far.
fn usage(shared: &Shared, stream: &Stream) {
    let Some((provider, model, used)) = &stream.usage else { return };
    // The turn just ran in this directory: its Location is open, so this reads memory only.
    let catalog = shared.engine.runtime.catalog(&stream.directory);
    let size = catalog.ok().and_then(|catalog| catalog.model(provider, model).ok().map(|m| m.info.limit.context));
    let Some(size) = size.filter(|size| *size > 0) else { return };
    let cost = stream.cost.map(|cost| Cost::new(cost, "USD"));
    stream.send(SessionUpdate::UsageUpdate(UsageUpdate::new(*used, size).cost(cost)));
}

/// Streams events until `done` resolves, then what was published before it did.
async fn follow<F: Future<Output = Option<DrainOutcome>>>(
    done: F,
    events: &mut tokio::sync::broadcast::Receiver<Arc<RuntimeEvent>>,
    stream: &mut Stream,
) -> Option<DrainOutcome> {
    tokio::pin!(done);
    let outcome = loop {
        tokio::select! {
            outcome = &mut done => break outcome,
            event = events.recv() => match event {
                Ok(event) => stream.event(&event),
                Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "the turn's updates fell behind; some were dropped"),
                Err(RecvError::Closed) => {}
            },
        }
    };
    // Durable events are published before the drain reports idle.
    while let Ok(event) = events.try_recv() {
        stream.event(&event);
    }
    outcome
}

impl Shared {
    /// `session/cancel`: the turn ends with `cancelled`; a session without a turn is left alone.
    pub(crate) fn cancel(&self, session: &str) {
        let turn = crate::server::lock(&self.turns).get(session).cloned();
        if let Some(turn) = turn {
            turn.cancelled.store(true, Ordering::Release);
            self.engine.runtime.interrupt(session);
            tracing::info!(session.id = %session, "turn cancelled by the client");
        }
    }
}

/// One turn's events as updates.
struct Stream {
    session: String,
    directory: PathBuf,
    title: String,
    cx: ConnectionTo<Client>,
    /// Each message's role (`true`: the assistant's, shown; the user's own text is not echoed).
    assistant: HashMap<String, bool>,
    /// Bytes of each text or reasoning part already sent.
    sent: HashMap<String, usize>,
    /// Each tool call's last status, title and input sent.
    calls: HashMap<String, (ToolCallStatus, Option<String>, Option<Value>)>,
    /// How the last assistant message finished.
    finish: Option<String>,
    /// The last assistant message's model and the tokens its request used (input and output).
    usage: Option<(String, String, u64)>,
    /// The session's cost, as its last update says.
    cost: Option<f64>,
}

impl Stream {
    fn new(session: &Session, cx: ConnectionTo<Client>) -> Self {
        Self {
            session: session.id.clone(),
            directory: PathBuf::from(&session.directory),
            title: session.title.clone(),
            cx,
            assistant: HashMap::new(),
            sent: HashMap::new(),
            calls: HashMap::new(),
            finish: None,
            usage: None,
            cost: None,
        }
    }

    fn send(&self, update: SessionUpdate) {
        notify(&self.cx, &self.session, update);
    }

    fn event(&mut self, event: &RuntimeEvent) {
        if event.session_id() != self.session {
            return;
        }
        match event {
            RuntimeEvent::Delta { message_id, part_id, kind, delta, .. } => {
                if self.assistant.get(message_id).copied().unwrap_or(true) {
                    self.delta(part_id, *kind, delta);
                }
            }
            RuntimeEvent::Durable(durable) => self.durable(durable.kind.as_str(), &durable.data),
            RuntimeEvent::Status { .. } => {}
        }
    }

    fn delta(&mut self, part: &str, kind: DeltaKind, delta: &str) {
        let update = match kind {
            DeltaKind::Text => {
                SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(delta.to_owned())))
            }
            DeltaKind::Reasoning => {
                SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(delta.to_owned())))
            }
            DeltaKind::ToolInput | DeltaKind::Compaction => return,
        };
        *self.sent.entry(part.to_owned()).or_default() += delta.len();
        self.send(update);
    }

    fn durable(&mut self, kind: &str, data: &Value) {
        match kind {
            "message.updated" => {
                let Some(info) =
                    data.get("info").and_then(|info| serde_json::from_value::<MessageInfo>(info.clone()).ok())
                else {
                    return;
                };
                let shown = matches!(&info, MessageInfo::Assistant(message) if message.summary != Some(true));
                if let MessageInfo::Assistant(message) = &info
                    && message.finish.is_some()
                {
                    self.finish.clone_from(&message.finish);
                    let used = message.tokens.input + message.tokens.output;
                    if used > 0 {
                        self.usage = Some((message.provider_id.clone(), message.model_id.clone(), used));
                    }
                }
                self.assistant.insert(info.id().to_owned(), shown);
            }
            "message.part.updated" => {
                if let Some(part) = data.get("part").and_then(|part| serde_json::from_value::<Part>(part.clone()).ok())
                    && self.assistant.get(&part.message_id).copied().unwrap_or(false)
                {
                    self.part(&part);
                }
            }
            "todo.updated" => {
                if let Some(todos) =
                    data.get("todos").and_then(|todos| serde_json::from_value::<Vec<Todo>>(todos.clone()).ok())
                {
                    self.send(crate::replay::plan(&todos));
                }
            }
            "session.updated" => {
                if let Some(cost) = data.pointer("/info/cost").and_then(Value::as_f64) {
                    self.cost = Some(cost);
                }
                let title = data.pointer("/info/title").and_then(Value::as_str);
                if let Some(title) = title.filter(|title| *title != self.title) {
                    self.title = title.to_owned();
                    self.send(SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(title.to_owned())));
                }
            }
            _ => {}
        }
    }

    fn part(&mut self, part: &Part) {
        match &part.kind {
            PartKind::Text { text, synthetic, .. } if *synthetic != Some(true) => {
                self.rest(&part.id, text, |block| SessionUpdate::AgentMessageChunk(ContentChunk::new(block)));
            }
            PartKind::Reasoning { text, .. } => {
                self.rest(&part.id, text, |block| SessionUpdate::AgentThoughtChunk(ContentChunk::new(block)));
            }
            PartKind::Tool { call_id, tool, state, .. } => self.tool(call_id, tool, state),
            _ => {}
        }
    }

    /// Sends what of a part's text the deltas did not (a part stored whole, or a delta missed).
    fn rest(&mut self, part: &str, text: &str, update: impl Fn(ContentBlock) -> SessionUpdate) {
        let sent = self.sent.entry(part.to_owned()).or_default();
        if let Some(rest) = text.get(*sent..).filter(|rest| !rest.is_empty()) {
            *sent = text.len();
            let block = ContentBlock::from(rest.to_owned());
            self.send(update(block));
        }
    }

    fn tool(&mut self, call_id: &str, tool: &str, state: &ToolState) {
        let fields = crate::tools::fields(tool, state, &self.directory);
        // Sent again when it changes what the client shows: the status, or the title and input
        // (which fill in as the model streams the call).
        let shown = (fields.status.unwrap_or(ToolCallStatus::Pending), fields.title.clone(), fields.raw_input.clone());
        match self.calls.insert(call_id.to_owned(), shown.clone()) {
            None => self.send(SessionUpdate::ToolCall(crate::tools::call(call_id, tool, state, &self.directory))),
            Some(previous) if previous != shown => {
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_owned(), fields)));
            }
            Some(_) => {}
        }
    }

    /// The stop reason of a turn that ended normally: how its last answer finished.
    fn stop_reason(&self) -> StopReason {
        match self.finish.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("content-filter") => StopReason::Refusal,
            _ => StopReason::EndTurn,
        }
    }
}
