//! Subtasks: a prompt that delegates to an agent instead of asking the model (OpenCode's `subtask`
//! part; what a `subtask: true` command, or a command whose agent is a subagent, sends).
//!
//! Admission stores the subtask with the prompt; promotion makes it the `subtask` part of the user
//! message and, in the same transaction, writes an assistant message (parent = that user message)
//! holding one `running` `task` tool part. Right after, before the boundary's provider turn, the
//! runner executes it with the `task` machinery: a child session runs the agent with its own
//! permissions ([`crate::subagent::run_child`]); the part settles with the `<task …>` output bounded
//! by the Location's tools ([`crate::ToolHost::bound_output`]: the registry's truncation and managed
//! output file), as a model-issued call would. A subtask sent by a command then adds OpenCode's
//! synthetic user message asking the model to summarise the result, and the loop continues with the
//! session's own agent. The caller's `task` permission is not consulted (the user chose the agent),
//! and any agent may run, primary ones included, as in OpenCode. A crash at any point after the
//! promotion leaves the running part, which recovery fails as interrupted like any tool call; it is
//! never re-run, and never lost.

use std::sync::Arc;

use opencode_session_store::AssistantMessage;
use opencode_session_store::MessageInfo;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::ToolStartTime;
use opencode_session_store::ToolState;
use opencode_session_store::Tx;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::tools::task::SubagentRequest;
use opencode_tool_registry::tools::task::SubagentResult;
use opencode_tool_registry::tools::task::result_text;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::hooks::TurnInfo;
use crate::records::new_part;
use crate::records::now_ms;
use crate::records::settled_part;
use crate::runtime::Inner;
use crate::runtime::ModelChoice;
use crate::settings::Settings;
use crate::store::blocking;
use crate::tools::ToolHost;
use crate::tools::ToolInvocation;
use crate::tools::ToolResult;
use crate::tools::ToolStatus;

/// The synthetic user text after a command's subtask (OpenCode's wording).
pub const SUBTASK_SUMMARY_PROMPT: &str = "Summarize the task tool output above and continue with your task.";

/// A task the user delegates directly: `agent` runs `prompt` in a child session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskPrompt {
    pub prompt: String,
    /// Short (3-5 words): the child session's title and the tool part's title.
    pub description: String,
    /// Any agent, primary ones included.
    pub agent: String,
    /// The child's model when its agent names none (else the user message's model). Its variant is
    /// not carried by the `subtask` part.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "stored_model")]
    pub model: Option<ModelChoice>,
    /// The command that sent it; the model is then asked to summarise the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl SubtaskPrompt {
    /// The user message's `subtask` part (V1 `SubtaskPart`: `model` is `{providerID, modelID}`).
    pub(crate) fn part(&self) -> PartKind {
        PartKind::Subtask {
            prompt: self.prompt.clone(),
            description: self.description.clone(),
            agent: self.agent.clone(),
            model: self.model.as_ref().map(|model| json!({"providerID": model.provider, "modelID": model.model})),
            command: self.command.clone(),
        }
    }

    /// The subtask a promoted `subtask` part carries.
    pub(crate) fn from_part(kind: &PartKind) -> Option<Self> {
        let PartKind::Subtask { prompt, description, agent, model, command } = kind else { return None };
        let model = model.as_ref().and_then(|model| {
            let field = |key: &str| model.get(key).and_then(Value::as_str).map(str::to_owned);
            Some(ModelChoice { provider: field("providerID")?, model: field("modelID")?, variant: None })
        });
        Some(Self {
            prompt: prompt.clone(),
            description: description.clone(),
            agent: agent.clone(),
            model,
            command: command.clone(),
        })
    }

    /// The `task` tool input the part records (as OpenCode's `task` call for a subtask).
    fn input(&self) -> Value {
        let mut input = json!({"prompt": self.prompt, "description": self.description, "subagent_type": self.agent});
        if let Some(command) = &self.command {
            input["command"] = json!(command);
        }
        input
    }
}

/// Admission's check: the agent and model exist where the session runs.
pub(crate) fn check(settings: &Settings, subtask: &SubtaskPrompt) -> Result<()> {
    if subtask.prompt.trim().is_empty() {
        return Err(RuntimeError::InvalidPrompt("the subtask has no prompt".to_owned()));
    }
    settings.agent(Some(&subtask.agent))?;
    if let Some(model) = &subtask.model {
        settings.catalog.model(&model.provider, &model.model)?;
    }
    Ok(())
}

/// A subtask promoted at this boundary: the user message carrying it, and the assistant message
/// with the running `task` part that records its run.
#[derive(Debug, Clone)]
pub(crate) struct Promoted {
    user: UserMessage,
    subtask: SubtaskPrompt,
    message: AssistantMessage,
    call: ToolInvocation,
    part: Part,
}

impl Promoted {
    /// The run of `subtask`, carried by `user`, in a session at `directory`.
    pub(crate) fn new(directory: &str, user: UserMessage, subtask: SubtaskPrompt) -> Self {
        let message = assistant(directory, &user, &subtask.agent);
        let call = ToolInvocation { call_id: id::ascending(IdKind::Part), name: "task".into(), input: subtask.input() };
        let state = ToolState::Running {
            input: call.input.clone(),
            title: None,
            metadata: None,
            time: ToolStartTime { start: now_ms() },
        };
        let kind = PartKind::Tool { call_id: call.call_id.clone(), tool: call.name.clone(), state, metadata: None };
        let part = new_part(&user.session_id, &message.id, kind);
        Self { user, subtask, message, call, part }
    }

    /// Writes the assistant message and its running `task` part. Called in the transaction that
    /// promotes the prompt: from then on a crash leaves a running call, which recovery fails as
    /// interrupted (never re-run); the subtask is never promoted without a trace.
    pub(crate) fn write(&self, tx: &mut Tx<'_>) -> opencode_session_store::Result<()> {
        tx.append_message(&MessageInfo::Assistant(self.message.clone()))?;
        tx.upsert_part(&self.part)
    }
}

/// Runs one promoted subtask (its running part already written with the promotion) and settles
/// its `task` part, its output bounded by the Location's `tools` as any call's is. Returns `false`
/// when the drain was interrupted meanwhile (the part then settles as interrupted and no summary
/// prompt is added).
pub(crate) async fn execute(
    inner: &Arc<Inner>,
    session: &Session,
    tools: &dyn ToolHost,
    promoted: Promoted,
    cancel: &CancellationToken,
) -> Result<bool> {
    let Promoted { user, subtask, message, mut call, part } = promoted;
    let turn = TurnInfo {
        session_id: session.id.clone(),
        message_id: message.id.clone(),
        agent: subtask.agent.clone(),
        provider: user.model.provider_id.clone(),
        model: user.model.model_id.clone(),
        // Tool hooks only: no provider turn, so no limits to tell.
        context_limit: 0,
        output_limit: 0,
    };
    if let Some(hooks) = &inner.hooks {
        hooks.tool_before(&turn, &mut call).await;
    }
    let field = |key: &str, fallback: &str| call.input.get(key).and_then(Value::as_str).unwrap_or(fallback).to_owned();
    let request = SubagentRequest {
        parent_session_id: session.id.clone(),
        parent_call_id: call.call_id.clone(),
        agent: subtask.agent.clone(),
        description: field("description", &subtask.description),
        prompt: field("prompt", &subtask.prompt),
        task_id: None,
    };
    let title = request.description.clone();
    // Without a model of its own the child runs on the issuing message's: the user message's.
    let model = subtask.model.clone();
    let outcome = crate::subagent::run_child(Arc::clone(inner), request, &message.id, model, cancel).await;
    let mut result = tools.bound_output(&call, tool_result(outcome, title)).await;
    if let Some(hooks) = &inner.hooks {
        hooks.tool_after(&turn, &call, &mut result).await;
    }
    let interrupted = result.status == ToolStatus::Interrupted || cancel.is_cancelled();
    let summary = (!interrupted && subtask.command.is_some()).then_some(user);
    settle(inner, session, message, settled_part(part, &call, result), interrupted, summary).await?;
    Ok(!interrupted)
}

/// Settles a promoted subtask that will not run (the drain was interrupted before it started) as
/// interrupted, as an interrupted call is.
pub(crate) async fn abandon(inner: &Arc<Inner>, session: &Session, promoted: Promoted) -> Result<()> {
    let Promoted { message, call, part, .. } = promoted;
    settle(inner, session, message, settled_part(part, &call, ToolResult::interrupted()), true, None).await
}

/// The `task` call's result, as the `task` tool reports it.
fn tool_result(outcome: std::result::Result<SubagentResult, ToolError>, title: String) -> ToolResult {
    match outcome {
        Ok(done) => {
            let mut result = ToolResult::completed(result_text(&done));
            result.title = Some(title);
            result.metadata.insert("sessionId".into(), json!(done.task_id));
            if let Some(model) = done.model {
                result.metadata.insert("model".into(), json!(model));
            }
            result
        }
        Err(ToolError::Interrupted) => ToolResult { status: ToolStatus::Interrupted, ..ToolResult::error("") },
        Err(err) => ToolResult::error(err.to_string()),
    }
}

/// The assistant message holding the subtask's `task` part: the subtask's agent, the user
/// message's model (so the session's Context Epoch sees no model switch).
fn assistant(directory: &str, user: &UserMessage, agent: &str) -> AssistantMessage {
    AssistantMessage::new(&user.session_id, &user.id, agent, &user.model, directory, now_ms())
}

/// Settles the part and completes the message in one transaction (then flushes); for a command's
/// subtask, `summary_for` (the user message that carried it) adds the synthetic user message asking the model to continue.
async fn settle(
    inner: &Arc<Inner>,
    session: &Session,
    mut message: AssistantMessage,
    settled: Part,
    interrupted: bool,
    summary_for: Option<UserMessage>,
) -> Result<()> {
    message.time.completed = Some(now_ms());
    message.finish = Some("tool-calls".to_owned());
    if interrupted {
        message.error = Some(crate::records::aborted("Provider turn interrupted"));
    }
    let session_id = session.id.clone();
    let store = Arc::clone(&inner.store);
    blocking(move || {
        store.write(|tx| {
            tx.upsert_part(&settled)?;
            tx.upsert_message(&MessageInfo::Assistant(message))?;
            if let Some(user) = summary_for {
                let id = id::ascending(IdKind::Message);
                tx.append_message(&MessageInfo::User(UserMessage {
                    id: id.clone(),
                    session_id: session_id.clone(),
                    time: opencode_session_store::CreatedTime { created: tx.now() },
                    format: None,
                    summary: None,
                    agent: user.agent,
                    model: user.model,
                    system: None,
                    tools: None,
                }))?;
                let text = PartKind::Text {
                    text: SUBTASK_SUMMARY_PROMPT.to_owned(),
                    synthetic: Some(true),
                    ignored: None,
                    time: None,
                    metadata: None,
                };
                tx.upsert_part(&new_part(&session_id, &id, text))?;
            }
            Ok(())
        })?;
        store.flush()
    })
    .await
}

/// `model` as `{providerID, modelID, variant?}` in the stored prompt.
mod stored_model {
    use opencode_session_store::ModelRef;
    use serde::Deserialize;
    use serde::Deserializer;
    use serde::Serialize;
    use serde::Serializer;

    use crate::runtime::ModelChoice;

    pub(super) fn serialize<S: Serializer>(model: &Option<ModelChoice>, serializer: S) -> Result<S::Ok, S::Error> {
        let stored = model.as_ref().map(|model| ModelRef {
            provider_id: model.provider.clone(),
            model_id: model.model.clone(),
            variant: model.variant.clone(),
        });
        stored.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<ModelChoice>, D::Error> {
        let stored = Option::<ModelRef>::deserialize(deserializer)?;
        Ok(stored.map(|model| ModelChoice {
            provider: model.provider_id,
            model: model.model_id,
            variant: model.variant,
        }))
    }
}
