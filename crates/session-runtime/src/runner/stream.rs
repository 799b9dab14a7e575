//! Streaming one attempt: the fold of the provider's events into parts ([`crate::fold`]), with
//! local tool calls started as soon as they arrive and settled in their own tasks.

use std::sync::Arc;

use futures_util::StreamExt;
use opencode_llm::LlmRequest;
use opencode_session_store::AssistantMessage;
use opencode_session_store::MessageInfo;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use opencode_tool_registry::Agent;
use opencode_tool_registry::tools::plan::AgentSwitch;
use serde_json::json;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::error::RuntimeError;
use crate::events::DeltaKind;
use crate::fold::Step;
use crate::fold::StreamFold;
use crate::fold::Streamed;
use crate::hooks::TurnInfo;
use crate::location::Location;
use crate::progress::LiveProgress;
use crate::records::new_part;
use crate::records::settled_part;
use crate::store::blocking;
use crate::tools::ToolInvocation;
use crate::tools::ToolRunContext;
use crate::tools::ToolStatus;

use super::*;

impl Runner {
    /// Streams one attempt: parts are persisted as they arrive, local tool calls start at once.
    pub(super) async fn stream(
        &self,
        location: &Arc<Location>,
        agent: &Arc<Agent>,
        model: &TurnModel,
        message: &AssistantMessage,
        turn: &TurnInfo,
        request: &LlmRequest,
    ) -> Flow<Streamed> {
        let started = tokio::select! {
            started = self.inner.llm.stream(&model.resolved.route, request) => started,
            () = self.cancel.cancelled() => return Ok(Streamed { interrupted: true, ..Streamed::default() }),
        };
        let mut stream = match started {
            Ok(stream) => stream,
            Err(error) => return Ok(Streamed { error: Some(error), ..Streamed::default() }),
        };
        let mut fold = StreamFold::new(&self.session_id, &message.id);
        let mut tools: JoinSet<Flow<bool>> = JoinSet::new();
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = self.cancel.cancelled() => {
                    fold.out.interrupted = true;
                    break;
                }
            };
            let Some(event) = event else { break };
            match fold.apply(event) {
                None => {}
                Some(Step::Stage(part)) => self.stage(part).await?,
                Some(Step::Delta { part, kind, text }) => {
                    self.delta(&part, kind, text);
                    self.stage(part).await?;
                }
                Some(Step::InputDelta { part, text }) => self.delta(&part, DeltaKind::ToolInput, text),
                Some(Step::TextEnded(mut part)) => {
                    if let (Some(hooks), PartKind::Text { text, .. }) = (&self.inner.hooks, &mut part.kind) {
                        hooks.text_complete(turn, &part.id, text).await;
                    }
                    self.stage(part).await?;
                }
                Some(Step::Call { part, call }) => {
                    self.write_part(part.clone()).await?;
                    if let Some(call) = call {
                        tools.spawn(self.settle(Arc::clone(location), Arc::clone(agent), turn.clone(), part, call));
                    }
                }
            }
        }
        for part in fold.unfinished() {
            self.stage(part).await?;
        }
        // Every started call settles (an interrupt cancels them; they settle as interrupted).
        while let Some(settled) = tools.join_next().await {
            let declined = settled.map_err(|err| RuntimeError::internal(format!("a tool task failed: {err}")))??;
            fold.out.declined |= declined;
        }
        // An interrupt that arrived while tools ran (after the stream closed) interrupts the turn too.
        fold.out.interrupted |= self.cancel.is_cancelled();
        if fold.out.error.is_some() || fold.out.interrupted {
            let reason =
                if fold.out.interrupted { opencode_session_store::INTERRUPTED_TOOL_ERROR } else { NO_TOOL_RESULT };
            for part in fold.unsettled_tools(reason) {
                self.write_part(part).await?;
            }
        }
        Ok(fold.out)
    }

    /// Runs one local tool call and persists its settlement (the interruption-safe completion region).
    /// Returns whether the user declined the call.
    pub(super) fn settle(
        &self,
        location: Arc<Location>,
        agent: Arc<Agent>,
        turn: TurnInfo,
        part: Part,
        mut call: ToolInvocation,
    ) -> impl Future<Output = Flow<bool>> + Send + 'static {
        let inner = Arc::clone(&self.inner);
        let progress = LiveProgress::start(Arc::clone(&inner.store), part.clone());
        let ctx = ToolRunContext {
            session_id: self.session_id.clone(),
            message_id: part.message_id.clone(),
            call_id: call.call_id.clone(),
            agent,
            directory: location.directory.clone(),
            cancel: self.cancel.child_token(),
            progress: progress.sink(),
        };
        let span = tracing::info_span!("session.tool", session.id = %ctx.session_id, tool = %call.name, call.id = %call.call_id);
        async move {
            if let Some(hooks) = &inner.hooks {
                hooks.tool_before(&turn, &mut call).await;
            }
            let mut result = location.tools.execute(&call, &ctx).await;
            progress.finish().await;
            if let Some(hooks) = &inner.hooks {
                hooks.tool_after(&turn, &call, &mut result).await;
            }
            let switch = AgentSwitch::from_metadata(&result.metadata);
            let declined = result.status == ToolStatus::Declined;
            let settled = settled_part(part, &call, result);
            let store = Arc::clone(&inner.store);
            blocking(move || {
                store.write(|tx| {
                    tx.upsert_part(&settled)?;
                    if let Some(switch) = &switch {
                        switch_agent(tx, &turn, switch)?;
                    }
                    Ok(())
                })
            })
            .await?;
            Ok(declined)
        }
        .instrument(span)
    }
}

/// Acts on an approved plan-mode switch (`plan_enter`/`plan_exit`), with the call's settlement: the
/// session continues under `switch_agent` from the next turn (a new Context Epoch, since the epoch's
/// agent no longer matches) after a user message with the synthetic text, as OpenCode does.
fn switch_agent(
    tx: &mut opencode_session_store::Tx<'_>,
    turn: &TurnInfo,
    switch: &AgentSwitch,
) -> opencode_session_store::Result<()> {
    tx.update_session(&turn.session_id, |session| session.agent = Some(switch.switch_agent.clone()))?;
    let message_id = id::ascending(IdKind::Message);
    tx.append_message(&MessageInfo::User(UserMessage {
        id: message_id.clone(),
        session_id: turn.session_id.clone(),
        time: opencode_session_store::CreatedTime { created: tx.now() },
        format: None,
        summary: None,
        agent: switch.switch_agent.clone(),
        model: ModelRef { provider_id: turn.provider.clone(), model_id: turn.model.clone(), variant: None },
        system: None,
        tools: None,
    }))?;
    tx.upsert_part(&new_part(
        &turn.session_id,
        &message_id,
        PartKind::Text {
            text: switch.synthetic_text.clone(),
            synthetic: Some(true),
            ignored: None,
            time: None,
            metadata: Some(json!({"planPath": switch.plan_path})),
        },
    ))?;
    tracing::info!(session.id = %turn.session_id, agent = %switch.switch_agent, "agent switched by plan mode");
    Ok(())
}

/// Why a turn's unsettled tool calls failed when the provider failed.
const NO_TOOL_RESULT: &str = "Provider did not return a tool result";
