//! Subagents: the runtime's side of the `task` tool ([`SubagentRunner`]).
//!
//! A `task` call creates a child session (parent = the calling session, same directory and so the
//! same Location, permission service and tools), admits the prompt there with the subagent's agent
//! and model (the agent's own model, else the model of the parent turn that issued the call), and
//! waits until the child is idle. The child runs through the ordinary drain path: its messages and
//! parts are durable store events like any session's. `task_id` resumes an earlier child of the
//! same caller.
//!
//! Bounds: a session `subagent_depth` (config, default 1) levels below its root may not delegate
//! further: its turns run with `task` denied (so the tool is withheld) and a call is refused here
//! too. Interrupting the parent's turn drops the call, and dropping it interrupts the child.
//!
//! The runner holds the runtime weakly: the runtime owns the Locations that own the tool, so a
//! strong handle would be a cycle.

use std::sync::Arc;
use std::sync::Weak;

use futures_util::future::BoxFuture;
use opencode_config::PermissionAction;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::StoreError;
use opencode_tool_registry::Agent;
use opencode_tool_registry::Rule;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::tools::task::SubagentRequest;
use opencode_tool_registry::tools::task::SubagentResult;
use opencode_tool_registry::tools::task::SubagentRunner;
use tokio_util::sync::CancellationToken;

use crate::coordinator::DrainOutcome;
use crate::error::Result;
use crate::error::RuntimeError;
use crate::runtime::Inner;
use crate::runtime::ModelChoice;
use crate::runtime::PromptRequest;
use crate::runtime::SessionRuntime;
use crate::store::blocking;

/// The default `subagent_depth`: subagents may not start subagents.
pub const DEFAULT_SUBAGENT_DEPTH: u32 = 1;

/// Sessions further from the root than this are treated as a cycle in the parent chain.
const MAX_ANCESTORS: u32 = 256;

/// Runs `task` calls as child sessions of the runtime.
pub(crate) struct Subagents {
    inner: Weak<Inner>,
}

impl Subagents {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Self { inner }
    }
}

impl SubagentRunner for Subagents {
    fn run<'a>(
        &'a self,
        request: SubagentRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<SubagentResult, ToolError>> {
        Box::pin(async move {
            let inner = self.inner.upgrade().ok_or_else(|| ToolError::fatal("the session runtime has shut down"))?;
            run(inner, request, ctx).await
        })
    }
}

/// The turn agent of `session`, with `task` denied when the session is as deep as subagents may go.
pub(crate) async fn bounded(inner: &Arc<Inner>, session: &Session, agent: Arc<Agent>) -> Result<Arc<Agent>> {
    let limit = inner.settings(&session.directory)?.config.subagent_depth.unwrap_or(DEFAULT_SUBAGENT_DEPTH);
    if (session.parent_id.is_none() && limit > 0) || agent.permission.hides_tool("task") {
        return Ok(agent);
    }
    if depth(inner, session).await? < limit {
        return Ok(agent);
    }
    Ok(Arc::new(deny_task(&agent)))
}

/// `agent` with every `task` call denied (appended: the last matching rule wins).
pub(crate) fn deny_task(agent: &Agent) -> Agent {
    let mut agent = agent.clone();
    agent.permission.push(Rule::new("task", "*", PermissionAction::Deny));
    agent
}

async fn run(inner: Arc<Inner>, request: SubagentRequest, ctx: &ToolContext) -> Result<SubagentResult, ToolError> {
    run_child(inner, request, &ctx.message_id, None, &ctx.cancel).await
}

/// Runs `request` as a child session of its parent; `message` is the parent's assistant message
/// that issued it. The subagent's model is its agent's own, else `fallback`, else the issuing
/// message's. `cancel` is the issuing turn's.
pub(crate) async fn run_child(
    inner: Arc<Inner>,
    request: SubagentRequest,
    message: &str,
    fallback: Option<ModelChoice>,
    cancel: &CancellationToken,
) -> Result<SubagentResult, ToolError> {
    let parent = session(&inner, &request.parent_session_id)
        .await
        .map_err(failure)?
        .ok_or_else(|| ToolError::model(format!("the calling session {} does not exist", request.parent_session_id)))?;
    // The parent's directory decides (its own configuration when it has one).
    let settings = inner.settings(&parent.directory).map_err(failure)?;
    let limit = settings.config.subagent_depth.unwrap_or(DEFAULT_SUBAGENT_DEPTH);
    if depth(&inner, &parent).await.map_err(failure)? >= limit {
        return Err(ToolError::model(format!(
            "this session may not start subagents (subagent_depth is {limit}); do the work yourself"
        )));
    }
    let agent = settings.agent(Some(&request.agent)).map_err(failure)?;
    let model = match fallback {
        Some(fallback) if agent.model.is_none() => Some(fallback),
        _ => model_for(&inner, &agent, &parent, message).await.map_err(failure)?,
    };
    let child = match &request.task_id {
        Some(task_id) => resume(&inner, task_id, &parent.id).await?,
        None => create(&inner, &parent, &request, &agent).await.map_err(failure)?,
    };
    let runtime = SessionRuntime::from_inner(Arc::clone(&inner));
    let mut prompt = PromptRequest::text(&child.id, request.prompt);
    prompt.agent = Some(agent.name.clone());
    prompt.model = model.clone();
    // Dropping this future (the parent's turn was interrupted) interrupts the child.
    let guard = InterruptOnDrop { runtime: runtime.clone(), session: child.id.clone(), armed: true };
    runtime.prompt(prompt).await.map_err(failure)?;
    let outcome = tokio::select! {
        outcome = runtime.wait_idle(&child.id) => outcome,
        () = cancel.cancelled() => return Err(ToolError::Interrupted),
    };
    guard.disarm();
    match outcome {
        Some(DrainOutcome::Failed { message, .. }) => {
            return Err(ToolError::model(format!("the subagent failed: {message}")));
        }
        Some(DrainOutcome::Interrupted) => return Err(ToolError::model("the subagent was interrupted")),
        Some(DrainOutcome::Completed | DrainOutcome::Idle) | None => {}
    }
    let output = final_answer(&inner, &child.id).await?;
    let model = model.map(|model| format!("{}/{}", model.provider, model.model));
    Ok(SubagentResult { task_id: child.id, output, model })
}

/// Interrupts the child session when dropped armed.
struct InterruptOnDrop {
    runtime: SessionRuntime,
    session: String,
    armed: bool,
}

impl InterruptOnDrop {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.runtime.interrupt(&self.session);
        }
    }
}

/// The subagent's model: its agent's own, else the model of the parent turn that called `task`
/// (else the parent session's choice; `None` leaves it to the child's ordinary resolution).
async fn model_for(inner: &Arc<Inner>, agent: &Agent, parent: &Session, message: &str) -> Result<Option<ModelChoice>> {
    if let Some(reference) = &agent.model {
        let mut choice = ModelChoice::parse(reference)?;
        choice.variant = agent.variant.clone();
        return Ok(Some(choice));
    }
    let store = Arc::clone(&inner.store);
    let message = message.to_owned();
    let issuing = blocking(move || store.read(|r| r.message_info(&message))).await?;
    if let Some(MessageInfo::Assistant(turn)) = issuing {
        return Ok(Some(ModelChoice { provider: turn.provider_id, model: turn.model_id, variant: turn.variant }));
    }
    Ok(parent.model.as_ref().map(|model| ModelChoice {
        provider: model.provider_id.clone(),
        model: model.id.clone(),
        variant: model.variant.clone(),
    }))
}

/// The earlier child `task_id` of `parent`.
async fn resume(inner: &Arc<Inner>, task_id: &str, parent: &str) -> Result<Session, ToolError> {
    match session(inner, task_id).await.map_err(failure)? {
        Some(child) if child.parent_id.as_deref() == Some(parent) => Ok(child),
        Some(_) => Err(ToolError::model(format!("Task {task_id} does not belong to session {parent}"))),
        None => Err(ToolError::model(format!("Task {task_id} does not exist; omit task_id to start a new task"))),
    }
}

/// A new child of `parent` in the same project and directory, titled like OpenCode's.
async fn create(inner: &Arc<Inner>, parent: &Session, request: &SubagentRequest, agent: &Agent) -> Result<Session> {
    let store = Arc::clone(&inner.store);
    let new = NewSession {
        project_id: parent.project_id.clone(),
        directory: parent.directory.clone(),
        parent_id: Some(parent.id.clone()),
        title: Some(format!("{} (@{} subagent)", request.description, agent.name)),
        ..NewSession::default()
    };
    blocking(move || store.write(|tx| tx.create_session(new))).await
}

/// The text of the child's last assistant message; its error when it failed.
async fn final_answer(inner: &Arc<Inner>, child: &str) -> Result<String, ToolError> {
    let store = Arc::clone(&inner.store);
    let id = child.to_owned();
    let last = blocking(move || store.read(|r| r.last_assistant(&id))).await.map_err(failure)?;
    let Some(last) = last else { return Ok(String::new()) };
    if let MessageInfo::Assistant(assistant) = &last.info
        && let Some(error) = &assistant.error
    {
        let message = error.data.get("message").and_then(|m| m.as_str()).unwrap_or(&error.name);
        return Err(ToolError::model(format!("the subagent failed: {message}")));
    }
    let text = last.parts.iter().rev().find_map(|part| match &part.kind {
        PartKind::Text { text, .. } => Some(text.clone()),
        _ => None,
    });
    Ok(text.unwrap_or_default())
}

async fn session(inner: &Arc<Inner>, id: &str) -> Result<Option<Session>> {
    let store = Arc::clone(&inner.store);
    let id = id.to_owned();
    blocking(move || store.read(|r| r.session(&id))).await
}

/// How many ancestors `session` has (0 for a root session).
async fn depth(inner: &Arc<Inner>, session: &Session) -> Result<u32> {
    let store = Arc::clone(&inner.store);
    let mut parent = session.parent_id.clone();
    blocking(move || {
        store.read(|r| {
            let mut depth = 0;
            while let Some(id) = parent {
                depth += 1;
                if depth >= MAX_ANCESTORS {
                    return Err(StoreError::NotFound { kind: "root of session", id });
                }
                parent = r.session(&id)?.and_then(|s| s.parent_id);
            }
            Ok(depth)
        })
    })
    .await
}

/// A runtime failure as the tool's error: the cause and what to do, for the model.
fn failure(err: RuntimeError) -> ToolError {
    ToolError::model(format!("{err} ({})", err.hint()))
}
