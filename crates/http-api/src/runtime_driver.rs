//! [`RuntimeDriver`]: the [`SessionDriver`] over the session runtime. Prompts are admitted durably
//! through [`SessionRuntime::prompt`]; a synchronous prompt then waits for the session's drain and
//! answers with the last assistant message of the turns that prompt started. The runtime's event
//! bus is mapped onto OpenCode's event types: durable events pass through unchanged (the runtime
//! owns the store's event hook and forwards them in commit order), text and reasoning deltas become
//! `message.part.delta`, status changes `session.status` (plus `session.idle`), a finished
//! compaction `session.compacted`. Permission replies stored by the HTTP routes are handed to the
//! [`Permissions`] the runtime's tools wait on.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Duration;

use opencode_session_runtime::CommandRun;
use opencode_session_runtime::DeltaKind;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::LocationTools;
use opencode_session_runtime::ModelChoice;
use opencode_session_runtime::PluginCommand;
use opencode_session_runtime::Plugins;
use opencode_session_runtime::PromptFile;
use opencode_session_runtime::RuntimeError;
use opencode_session_runtime::RuntimeEvent;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::SubtaskPrompt;
use opencode_session_store::Delivery;
use opencode_session_store::EventKind;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::PermissionReply;
use opencode_session_store::Session;
use opencode_session_store::SessionInput;
use opencode_session_store::StoreError;
use opencode_session_store::StoredPermission;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Reply;
use opencode_tool_registry::ReplyError;
use serde_json::Value;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::driver::BoxFuture;
use crate::driver::DriverError;
use crate::driver::DriverEvent;
use crate::driver::LiveEvent;
use crate::driver::PartInput;
use crate::driver::PermissionRequest;
use crate::driver::PromptBody;
use crate::driver::QuestionRequest;
use crate::driver::SessionDriver;
use crate::driver::SessionStatus;

/// How long an abort waits for the interrupted drain to reach a durable stop before answering anyway.
const INTERRUPT_SETTLE: Duration = Duration::from_secs(10);
/// Events the driver buffers per subscriber before it lags.
const CAPACITY: usize = 4096;
/// Messages read per page while looking for a prompt's reply.
const REPLY_PAGE: usize = 32;

/// The session runtime behind the HTTP API.
pub struct RuntimeDriver {
    runtime: SessionRuntime,
    permissions: Arc<Permissions>,
    /// Prompts wait until these have started (none: nothing to wait for).
    plugins: Option<Plugins>,
    events: broadcast::Sender<Arc<DriverEvent>>,
    statuses: Arc<Mutex<BTreeMap<String, SessionStatus>>>,
    forwarder: JoinHandle<()>,
    /// Maps the question tool's pending requests onto `question.asked|replied|rejected`.
    questions: JoinHandle<()>,
}

impl std::fmt::Debug for RuntimeDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeDriver").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

impl RuntimeDriver {
    /// Drives `runtime`; `permissions` must be the service its tools ask (see
    /// [`opencode_session_runtime::Assembly`]). Must be called inside a tokio runtime (it spawns the task that
    /// maps the runtime's events).
    pub fn new(runtime: SessionRuntime, permissions: Arc<Permissions>) -> Self {
        let events = broadcast::channel(CAPACITY).0;
        let statuses = Arc::new(Mutex::new(BTreeMap::new()));
        let forwarder = tokio::spawn(forward(runtime.subscribe(), events.clone(), Arc::clone(&statuses)));
        let questions = tokio::spawn(forward_questions(permissions.subscribe(), events.clone()));
        Self { runtime, permissions, plugins: None, events, statuses, forwarder, questions }
    }

    /// Prompts (and compactions) wait until `plugins` have started, which may still be under way;
    /// a required plugin that failed fails them with its error.
    pub fn with_plugins(mut self, plugins: Plugins) -> Self {
        self.plugins = Some(plugins);
        self
    }

    /// Waits for the plugins' start.
    async fn plugins_ready(&self) -> Result<(), DriverError> {
        let Some(plugins) = &self.plugins else { return Ok(()) };
        plugins.ready().await.map_err(|err| DriverError::Unavailable(format!("{err} ({})", err.hint())))
    }

    pub fn runtime(&self) -> &SessionRuntime {
        &self.runtime
    }

    /// Admits `request` for `session` with `delivery`.
    async fn admit(
        &self,
        session: &Session,
        request: PromptBody,
        delivery: Delivery,
    ) -> Result<SessionInput, DriverError> {
        let prompt = runtime_prompt(&session.id, request, delivery)?;
        self.plugins_ready().await?;
        let receipt = self.runtime.prompt(prompt).await.map_err(driver_error)?;
        Ok(receipt.input)
    }

    /// The assistant message that answered prompt `input` once the drain is over.
    async fn reply_to(
        &self,
        session_id: &str,
        input: &str,
        outcome: Option<DrainOutcome>,
    ) -> Result<MessageWithParts, DriverError> {
        let store = Arc::clone(self.runtime.store());
        let (session, prompt) = (session_id.to_owned(), input.to_owned());
        let found = tokio::task::spawn_blocking(move || find_reply(&store, &session, &prompt))
            .await
            .map_err(|err| DriverError::Failed(format!("reading the reply stopped: {err}")))?
            .map_err(|err| DriverError::Failed(format!("cannot read the reply: {err} ({})", err.hint())))?;
        match (found, outcome) {
            (Some(reply), _) => Ok(reply),
            (None, Some(DrainOutcome::Failed { message, hint })) => {
                Err(DriverError::Failed(format!("the session failed before it replied: {message} ({hint})")))
            }
            (None, Some(DrainOutcome::Interrupted)) => {
                Err(DriverError::Busy(format!("session {session_id} was interrupted before it replied")))
            }
            (None, _) => Err(DriverError::Failed(format!(
                "prompt {input} was admitted but no reply was written (it stays pending for the next run)"
            ))),
        }
    }
}

impl Drop for RuntimeDriver {
    fn drop(&mut self) {
        self.forwarder.abort();
        self.questions.abort();
    }
}

impl SessionDriver for RuntimeDriver {
    fn plugin_commands(&self) -> Vec<PluginCommand> {
        self.plugins.as_ref().map(Plugins::commands).unwrap_or_default()
    }

    fn run_plugin_command(
        &self,
        session_id: String,
        name: String,
        arguments: String,
    ) -> Option<BoxFuture<'_, Result<CommandRun, DriverError>>> {
        let plugins = self.plugins.clone()?;
        plugins.commands().iter().any(|command| command.name == name).then(|| {
            Box::pin(async move {
                match plugins.run_command(&self.runtime, &name, &session_id, &arguments).await {
                    None => Err(DriverError::NotFound(format!("command /{name} is no longer offered"))),
                    Some(run) => run.map_err(driver_error),
                }
            }) as BoxFuture<'_, _>
        })
    }

    fn hold(&self, session_id: &str) -> Result<Option<Box<dyn Send>>, DriverError> {
        let hold = self.runtime.hold(session_id).map_err(driver_error)?;
        Ok(Some(Box::new(hold)))
    }

    fn revert(
        &self,
        session_id: String,
        message_id: String,
        part_id: Option<String>,
    ) -> Option<BoxFuture<'_, Result<Session, DriverError>>> {
        Some(Box::pin(async move { self.runtime.revert(&session_id, message_id, part_id).await.map_err(driver_error) }))
    }

    fn unrevert(&self, session_id: String) -> Option<BoxFuture<'_, Result<Session, DriverError>>> {
        Some(Box::pin(async move { self.runtime.unrevert(&session_id).await.map_err(driver_error) }))
    }

    fn prompt(&self, session: Session, request: PromptBody) -> BoxFuture<'_, Result<MessageWithParts, DriverError>> {
        Box::pin(async move {
            if request.no_reply == Some(true) {
                return Err(DriverError::Invalid(
                    "a noReply prompt has no reply to wait for: send it with prompt_async".to_owned(),
                ));
            }
            let input = self.admit(&session, request, Delivery::Steer).await?;
            let outcome = self.runtime.wait_idle(&session.id).await;
            self.reply_to(&session.id, &input.id, outcome).await
        })
    }

    fn prompt_async(
        &self,
        session: Session,
        request: PromptBody,
        delivery: Delivery,
    ) -> BoxFuture<'_, Result<SessionInput, DriverError>> {
        Box::pin(async move { self.admit(&session, request, delivery).await })
    }

    fn interrupt(&self, session_id: String) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async move {
            if self.runtime.interrupt(&session_id) {
                // Answer once the drain has stopped at a durable point, so that what the client reads
                // next (messages, status) already reflects the abort.
                let settled = tokio::time::timeout(INTERRUPT_SETTLE, self.runtime.wait_idle(&session_id)).await;
                if settled.is_err() {
                    tracing::warn!(session.id = %session_id, "the interrupted drain has not stopped yet");
                }
            }
            Ok(())
        })
    }

    fn memory(&self) -> Option<Value> {
        serde_json::to_value(self.runtime.memory()).ok()
    }

    fn reload(&self, directory: Option<&Path>) {
        let Some(directory) = directory else {
            let reloaded = self.runtime.reload_all();
            tracing::debug!(locations = reloaded.len(), "every location reloaded");
            return;
        };
        for (open, _) in self.runtime.open_locations() {
            if open.starts_with(directory) {
                let reload = self.runtime.reload_location(&open);
                tracing::debug!(directory = %open.display(), ?reload, "location reloaded");
            }
        }
    }

    fn tools(&self, directory: &Path, agent: Option<&str>) -> Result<Option<LocationTools>, DriverError> {
        self.runtime.tools(directory, agent).map(Some).map_err(driver_error)
    }

    fn mcp(&self, directory: &Path) -> Result<Option<opencode_session_runtime::mcp::McpManager>, DriverError> {
        self.runtime.mcp(directory).map_err(driver_error)
    }

    fn mcp_events(&self) -> Option<broadcast::Receiver<(std::path::PathBuf, opencode_session_runtime::mcp::McpEvent)>> {
        Some(self.runtime.mcp_events())
    }

    fn permission_replied(&self, permission: StoredPermission, feedback: Option<String>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let reply = match permission.reply {
                Some(PermissionReply::Once) => Reply::Once,
                Some(PermissionReply::Always) => Reply::Always,
                Some(PermissionReply::Reject) => Reply::Reject { message: feedback },
                None => return,
            };
            match self.permissions.reply(&permission.request.id, reply) {
                Ok(()) => {}
                // Asked by an earlier process (its call ended with it): the stored reply is all there is.
                Err(ReplyError::NotFound(id)) => tracing::debug!(%id, "reply to a request no call awaits"),
                Err(err) => tracing::warn!(%err, "cannot deliver a permission reply"),
            }
        })
    }

    fn compact(&self, session_id: String) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async move {
            self.plugins_ready().await?;
            match self.runtime.compact(&session_id).await {
                Some(DrainOutcome::Failed { message, hint }) => {
                    Err(DriverError::Failed(format!("compaction failed: {message} ({hint})")))
                }
                Some(DrainOutcome::Interrupted) => {
                    Err(DriverError::Busy(format!("the compaction of session {session_id} was interrupted")))
                }
                _ => Ok(()),
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let active = self.runtime.active();
            for session in &active {
                self.runtime.interrupt(session);
            }
            for session in &active {
                if tokio::time::timeout(INTERRUPT_SETTLE, self.runtime.wait_idle(session)).await.is_err() {
                    tracing::warn!(session.id = %session, "a drain did not stop before shutdown");
                }
            }
        })
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<DriverEvent>>> {
        Some(self.events.subscribe())
    }

    fn forwards_durable_events(&self) -> bool {
        true
    }

    fn permissions(&self) -> Vec<PermissionRequest> {
        self.permissions.pending(None).iter().filter_map(PermissionRequest::from_pending).collect()
    }

    fn questions(&self) -> Vec<QuestionRequest> {
        self.permissions.pending(None).iter().filter_map(QuestionRequest::from_pending).collect()
    }

    fn answer_question(&self, id: String, answers: Option<Vec<Vec<String>>>) -> BoxFuture<'_, Result<(), DriverError>> {
        Box::pin(async move {
            if !self.questions().iter().any(|question| question.id == id) {
                return Err(DriverError::NotFound(format!("question {id} not found")));
            }
            let reply = match answers {
                Some(answers) => Reply::Answer { answers },
                None => Reply::Reject { message: None },
            };
            self.permissions.reply(&id, reply).map_err(|err| match err {
                ReplyError::NotFound(_) => DriverError::NotFound(format!("question {id} not found")),
                ReplyError::Store { .. } => DriverError::Failed(format!("{err} ({})", err.hint())),
            })
        })
    }

    fn statuses(&self) -> BTreeMap<String, SessionStatus> {
        let known = self.statuses.lock().unwrap_or_else(PoisonError::into_inner);
        self.runtime
            .active()
            .into_iter()
            .map(|id| {
                let status = known.get(&id).cloned().unwrap_or(SessionStatus::Busy);
                (id, status)
            })
            .collect()
    }
}

/// Publishes the question tool's requests as OpenCode's `question.*` events (permission requests are
/// store rows whose durable events already travel with the runtime's).
async fn forward_questions(mut pending: broadcast::Receiver<PendingEvent>, out: broadcast::Sender<Arc<DriverEvent>>) {
    let mut asked = std::collections::HashSet::new();
    loop {
        let event = match pending.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "question events were dropped before reaching the server");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(live) = question_event(&event, &mut asked) else { continue };
        // Nobody listening is fine.
        let _ = out.send(Arc::new(DriverEvent::Live(live)));
    }
}

/// `question.asked` for an asked question, `question.replied`/`question.rejected` when one settles;
/// `asked` remembers which pending ids are questions.
fn question_event(event: &PendingEvent, asked: &mut std::collections::HashSet<String>) -> Option<LiveEvent> {
    match event {
        PendingEvent::Asked(request) => {
            let question = QuestionRequest::from_pending(request)?;
            asked.insert(question.id.clone());
            let properties = serde_json::to_value(&question).ok()?;
            Some(LiveEvent { kind: "question.asked".into(), properties })
        }
        PendingEvent::Replied { id, session_id, reply } => {
            if !asked.remove(id) {
                return None;
            }
            Some(match reply {
                Reply::Answer { answers } => LiveEvent {
                    kind: "question.replied".into(),
                    properties: json!({"sessionID": session_id, "requestID": id, "answers": answers}),
                },
                _ => LiveEvent {
                    kind: "question.rejected".into(),
                    properties: json!({"sessionID": session_id, "requestID": id}),
                },
            })
        }
    }
}

/// Maps the runtime's events onto OpenCode's, in order, and keeps the last status of busy sessions.
async fn forward(
    mut runtime: broadcast::Receiver<Arc<RuntimeEvent>>,
    out: broadcast::Sender<Arc<DriverEvent>>,
    statuses: Arc<Mutex<BTreeMap<String, SessionStatus>>>,
) {
    let mut announced = Announced::default();
    loop {
        let event = match runtime.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "runtime events were dropped before reaching the server");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if let RuntimeEvent::Status { session_id, status } = &*event {
            let status = status_of(status);
            let mut known = statuses.lock().unwrap_or_else(PoisonError::into_inner);
            if status == SessionStatus::Idle {
                known.remove(session_id);
            } else {
                known.insert(session_id.clone(), status);
            }
        }
        for mapped in announced.before(&event).into_iter().chain(opencode_events(&event)) {
            // Nobody listening (no server yet, or it stopped) is fine.
            let _unheard = out.send(Arc::new(mapped));
        }
    }
}

/// The streaming parts OpenCode's clients know of. They drop a delta for a part they have not been
/// told of (`message.part.updated`), so a part whose first delta comes before its first durable
/// write is announced, empty, first, as OpenCode does. Forgotten when the session goes idle.
#[derive(Default)]
struct Announced {
    parts: std::collections::HashMap<String, std::collections::HashSet<String>>,
}

impl Announced {
    /// What must reach clients before `event`.
    fn before(&mut self, event: &RuntimeEvent) -> Option<DriverEvent> {
        match event {
            RuntimeEvent::Durable(durable) if durable.kind == EventKind::PartUpdated => {
                let part = durable.data.pointer("/part/id").and_then(Value::as_str)?;
                self.parts.entry(durable.session_id.clone()).or_default().insert(part.to_owned());
                None
            }
            RuntimeEvent::Delta { session_id, message_id, part_id, kind, .. } => {
                let kind = match kind {
                    DeltaKind::Text => "text",
                    DeltaKind::Reasoning => "reasoning",
                    DeltaKind::Compaction | DeltaKind::ToolInput => return None,
                };
                if !self.parts.entry(session_id.clone()).or_default().insert(part_id.clone()) {
                    return None;
                }
                let part = json!({ "id": part_id, "sessionID": session_id, "messageID": message_id, "type": kind,
                                   "text": "", "time": { "start": opencode_session_store::id::now_ms() } });
                let properties = json!({ "part": part, "sessionID": session_id });
                Some(DriverEvent::Live(LiveEvent { kind: "message.part.updated".into(), properties }))
            }
            RuntimeEvent::Status { session_id, status: opencode_session_runtime::SessionStatus::Idle } => {
                self.parts.remove(session_id);
                None
            }
            _ => None,
        }
    }
}

/// OpenCode's events for one runtime event (none for fragments OpenCode does not stream).
fn opencode_events(event: &RuntimeEvent) -> Vec<DriverEvent> {
    let live = |kind: &str, properties| DriverEvent::Live(LiveEvent { kind: kind.to_owned(), properties });
    match event {
        RuntimeEvent::Durable(event) => {
            let compacted = (event.kind == EventKind::CompactionEnded)
                .then(|| live("session.compacted", json!({ "sessionID": event.session_id })));
            std::iter::once(DriverEvent::Durable(event.clone())).chain(compacted).collect()
        }
        RuntimeEvent::Delta { session_id, message_id, part_id, kind, delta } => match kind {
            DeltaKind::Text | DeltaKind::Reasoning | DeltaKind::Compaction => vec![live(
                "message.part.delta",
                json!({ "sessionID": session_id, "messageID": message_id, "partID": part_id, "field": "text",
                        "delta": delta }),
            )],
            // OpenCode shows tool input once the call is complete (`message.part.updated`).
            DeltaKind::ToolInput => Vec::new(),
        },
        RuntimeEvent::Status { session_id, status } => {
            let status = status_of(status);
            let idle =
                (status == SessionStatus::Idle).then(|| live("session.idle", json!({ "sessionID": session_id })));
            std::iter::once(live("session.status", json!({ "sessionID": session_id, "status": status })))
                .chain(idle)
                .collect()
        }
    }
}

fn status_of(status: &opencode_session_runtime::SessionStatus) -> SessionStatus {
    match status {
        opencode_session_runtime::SessionStatus::Idle => SessionStatus::Idle,
        opencode_session_runtime::SessionStatus::Busy => SessionStatus::Busy,
        opencode_session_runtime::SessionStatus::Retry { attempt, message, next } => {
            SessionStatus::Retry { attempt: *attempt, message: message.clone(), next: *next }
        }
    }
}

/// The runtime's prompt for an OpenCode 1.x prompt body: the text parts joined, file parts as files.
fn runtime_prompt(
    session_id: &str,
    request: PromptBody,
    delivery: Delivery,
) -> Result<opencode_session_runtime::PromptRequest, DriverError> {
    let mut files = Vec::new();
    let mut subtask = None;
    for part in &request.parts {
        match part {
            PartInput::File(file) => {
                files.push(PromptFile { url: file.url.clone(), mime: file.mime.clone(), name: file.filename.clone() });
            }
            PartInput::Subtask(part) if subtask.is_none() => subtask = Some(subtask_prompt(part)),
            PartInput::Subtask(_) => {
                return Err(DriverError::Invalid("a prompt carries at most one subtask part".to_owned()));
            }
            // Text is joined below; an agent mention is already part of the text the user typed.
            PartInput::Text(_) | PartInput::Agent(_) => {}
        }
    }
    let model = request.model.as_ref().map(|model| ModelChoice {
        provider: model.provider_id.clone(),
        model: model.model_id.clone(),
        variant: request.variant.clone(),
    });
    Ok(opencode_session_runtime::PromptRequest {
        session_id: session_id.to_owned(),
        prompt_id: request.message_id.clone(),
        text: request.joined_text(),
        files,
        delivery,
        agent: request.agent.clone(),
        model,
        admit_only: request.no_reply == Some(true),
        subtask,
    })
}

/// A `subtask` part as the runtime's subtask (run through the `task` machinery before the reply).
fn subtask_prompt(part: &crate::driver::SubtaskPartInput) -> SubtaskPrompt {
    SubtaskPrompt {
        prompt: part.prompt.clone(),
        description: part.description.clone(),
        agent: part.agent.clone(),
        model: part.model.as_ref().map(|model| ModelChoice {
            provider: model.provider_id.clone(),
            model: model.model_id.clone(),
            variant: None,
        }),
        command: part.command.clone(),
    }
}

/// The reply to prompt `input`: the last assistant message of the turns it started (OpenCode
/// answers with the loop's last assistant message). Those turns run until the next admitted prompt
/// that came after an answer: synthetic user messages (a subtask's summary request, a plan-mode
/// switch, a compaction checkpoint) continue the same loop, and prompts promoted at one boundary
/// share one reply. Compaction summaries are never the reply. `None` when nothing answered it.
fn find_reply(
    store: &opencode_session_store::Store,
    session_id: &str,
    input: &str,
) -> Result<Option<MessageWithParts>, StoreError> {
    store.read(|r| {
        let mut before = None;
        // Walking back: the newest reply of the turns seen since the last admitted prompt, and
        // whether such a prompt was just passed (an older answer then starts another prompt's turns).
        let mut reply: Option<MessageWithParts> = None;
        let mut passed_prompt = false;
        loop {
            let page = r.messages(session_id, before, REPLY_PAGE)?;
            for message in page.messages.into_iter().rev() {
                match &message.info {
                    MessageInfo::Assistant(assistant)
                        if assistant.summary != Some(true) && (passed_prompt || reply.is_none()) =>
                    {
                        reply = Some(message);
                        passed_prompt = false;
                    }
                    MessageInfo::User(user) if user.id == input => return Ok(reply),
                    MessageInfo::User(user) if r.input(&user.id)?.is_some() => passed_prompt = true,
                    _ => {}
                }
            }
            match page.older {
                Some(older) => before = Some(older),
                None => return Ok(None),
            }
        }
    })
}

/// The HTTP meaning of a runtime failure.
fn driver_error(err: RuntimeError) -> DriverError {
    let message = format!("{err} ({})", err.hint());
    match err {
        RuntimeError::Store(StoreError::NotFound { .. }) => DriverError::NotFound(message),
        RuntimeError::Store(StoreError::Conflict(_)) | RuntimeError::Busy { .. } => DriverError::Busy(message),
        RuntimeError::Store(StoreError::Invalid(_))
        | RuntimeError::InvalidPrompt(_)
        | RuntimeError::UnknownAgent { .. }
        | RuntimeError::NoModel { .. }
        | RuntimeError::Catalog(_) => DriverError::Invalid(message),
        _ => DriverError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::FilePartInput;
    use crate::driver::PromptModel;
    use crate::driver::TextPartInput;

    #[test]
    fn text_parts_join_and_files_travel_with_the_prompt() {
        let request = PromptBody {
            message_id: Some("msg_1".into()),
            model: Some(PromptModel { provider_id: "mock".into(), model_id: "m".into() }),
            variant: Some("high".into()),
            parts: vec![
                PartInput::Text(TextPartInput { text: "look at".into(), ..TextPartInput::default() }),
                PartInput::File(FilePartInput {
                    id: None,
                    mime: "text/plain".into(),
                    filename: Some("a.txt".into()),
                    url: "file:///a.txt".into(),
                    source: None,
                }),
                PartInput::Text(TextPartInput { text: "this".into(), ..TextPartInput::default() }),
            ],
            ..PromptBody::default()
        };
        let prompt = runtime_prompt("ses_1", request, Delivery::Queue).unwrap();
        assert_eq!(prompt.text, "look at\nthis");
        assert_eq!(prompt.prompt_id.as_deref(), Some("msg_1"));
        assert_eq!(prompt.delivery, Delivery::Queue);
        assert_eq!(
            prompt.files,
            vec![PromptFile { url: "file:///a.txt".into(), mime: "text/plain".into(), name: Some("a.txt".into()) }]
        );
        assert_eq!(
            prompt.model,
            Some(ModelChoice { provider: "mock".into(), model: "m".into(), variant: Some("high".into()) })
        );
        assert!(!prompt.admit_only);
    }

    #[test]
    fn deltas_and_status_become_opencode_events() {
        let delta = RuntimeEvent::Delta {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            part_id: "prt_1".into(),
            kind: DeltaKind::Text,
            delta: "hi".into(),
        };
        assert_eq!(
            opencode_events(&delta),
            vec![DriverEvent::Live(LiveEvent {
                kind: "message.part.delta".into(),
                properties: json!({"sessionID": "ses_1", "messageID": "msg_1", "partID": "prt_1", "field": "text", "delta": "hi"}),
            })]
        );
        let idle =
            RuntimeEvent::Status { session_id: "ses_1".into(), status: opencode_session_runtime::SessionStatus::Idle };
        let kinds: Vec<(String, serde_json::Value)> = opencode_events(&idle)
            .into_iter()
            .filter_map(|event| match event {
                DriverEvent::Live(live) => Some((live.kind, live.properties)),
                DriverEvent::Durable(_) => None,
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("session.status".to_owned(), json!({"sessionID": "ses_1", "status": {"type": "idle"}})),
                ("session.idle".to_owned(), json!({"sessionID": "ses_1"})),
            ]
        );
        let tool_input = RuntimeEvent::Delta {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            part_id: "prt_1".into(),
            kind: DeltaKind::ToolInput,
            delta: "{".into(),
        };
        assert_eq!(opencode_events(&tool_input), Vec::new());
    }
}
