//! The runner: one drain of a session, as a sequence of provider turns.
//!
//! A drain recovers what a crashed process left (tool calls failed as interrupted, never re-run),
//! then runs turns while there is work: steers are promoted at every boundary, the tool loop
//! continues while the model calls local tools, and one queued prompt is promoted only when the
//! session would otherwise go idle. Each turn, in order: fence on the Location, initialise the
//! Context Epoch before the first promotion, promote, reset the step allowance once per promoted
//! batch, run the subtasks the promoted prompts carry ([`crate::subtask`]), reconcile the System Context (at most one Mid-Conversation System Message, after the
//! promoted input and settled tool results), reload projected history, compact if the request would
//! not fit, then exactly one `llm.stream(request)` whose events are persisted as parts while local
//! tool calls run eagerly with the turn's agent pinned.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use opencode_catalog::ResolvedModel;
use opencode_catalog::models_dev::ModelInfo;
use opencode_llm::FinishReason;
use opencode_llm::LlmError;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::SystemPart;
use opencode_llm::ToolChoice;
use opencode_llm::Usage;
use opencode_session_store::AssistantMessage;
use opencode_session_store::AssistantTime;
use opencode_session_store::CacheTokens;
use opencode_session_store::Delivery;
use opencode_session_store::MessageError;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessagePath;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::PartTime;
use opencode_session_store::Session;
use opencode_session_store::StoreError;
use opencode_session_store::Tokens;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolStartTime;
use opencode_session_store::ToolState;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use opencode_system_context::EpochError;
use opencode_system_context::EpochPreparation;
use opencode_system_context::Prepared;
use opencode_system_context::Replacement;
use opencode_system_context::Snapshot;
use opencode_system_context::prepare_epoch;
use opencode_tool_registry::Agent;
use opencode_tool_registry::tools::plan::AgentSwitch;
use serde_json::Value;
use serde_json::json;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::compaction;
use crate::coordinator::DrainOutcome;
use crate::epoch::SessionEpochs;
use crate::epoch::new_epoch;
use crate::error::Result;
use crate::error::RuntimeError;
use crate::events::DeltaKind;
use crate::events::RuntimeEvent;
use crate::events::SessionStatus;
use crate::history;
use crate::history::StoredPrompt;
use crate::hooks::TurnInfo;
use crate::location::Location;
use crate::progress::LiveProgress;
use crate::runtime::Inner;
use crate::snapshots;
use crate::store::blocking;
use crate::tools::ToolInvocation;
use crate::tools::ToolResult;
use crate::tools::ToolRunContext;
use crate::tools::ToolStatus;

/// The first system part when the agent has no prompt of its own.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are opencode, an interactive agent that helps users with software \
engineering tasks. Use the tools available to you to act in the user's project: read before you edit, keep \
changes minimal and focused, and verify your work. Be concise; answer in plain text unless asked otherwise.";

/// Appended as the last message when the agent's step allowance is used up.
pub const MAX_STEPS_PROMPT: &str = "CRITICAL - MAXIMUM STEPS REACHED\n\nThe maximum number of steps allowed for \
this task has been reached. Tools are disabled until the next user input. Respond with text ONLY: summarise \
what was done, what remains, and what you recommend next.";

/// The system prompt of the summary request.
const COMPACTION_SYSTEM_PROMPT: &str = "You summarise coding-agent conversations so that work can continue \
from the summary alone. Follow the requested format exactly.";

/// Why a turn's unsettled tool calls failed when the provider failed.
const NO_TOOL_RESULT: &str = "Provider did not return a tool result";

/// Runs one drain of `session_id` and reports how it ended.
pub(crate) async fn drain(inner: Arc<Inner>, session_id: String, cancel: CancellationToken) -> DrainOutcome {
    let span = tracing::info_span!("session.drain", session.id = %session_id);
    let runner = Runner { inner: Arc::clone(&inner), session_id: session_id.clone(), cancel };
    match runner.run().instrument(span).await {
        Ok(true) => DrainOutcome::Completed,
        Ok(false) => DrainOutcome::Idle,
        Err(Stop::Interrupted) => DrainOutcome::Interrupted,
        Err(Stop::Failed(err)) => {
            tracing::warn!(session.id = %session_id, error = %err, "session drain failed");
            let outcome = DrainOutcome::Failed { message: err.to_string(), hint: err.hint().to_owned() };
            let store = Arc::clone(&inner.store);
            let data = json!({"sessionID": session_id, "error": {"name": "UnknownError", "data": {"message": err.to_string()}}});
            if let Err(err) =
                blocking(move || store.write(|tx| tx.append_event(&session_id, "session.error", data))).await
            {
                tracing::warn!(error = %err, "the session error could not be recorded");
            }
            outcome
        }
    }
}

/// Why a drain stopped early.
enum Stop {
    Interrupted,
    Failed(RuntimeError),
}

impl<E: Into<RuntimeError>> From<E> for Stop {
    fn from(err: E) -> Self {
        Self::Failed(err.into())
    }
}

type Flow<T> = std::result::Result<T, Stop>;

/// Which admitted inputs a boundary promotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Promotion {
    /// Every steer admitted up to the boundary.
    Steer,
    /// The oldest queued prompt, plus every steer admitted up to the boundary.
    Queue,
}

struct Runner {
    inner: Arc<Inner>,
    session_id: String,
    cancel: CancellationToken,
}

/// The model of a turn: its route and catalog entry.
struct TurnModel {
    resolved: ResolvedModel,
    info: ModelInfo,
}

impl TurnModel {
    fn reference(&self) -> ModelRef {
        ModelRef { provider_id: self.resolved.provider.clone(), model_id: self.resolved.model.clone(), variant: None }
    }
}

/// What one streamed attempt produced.
#[derive(Default)]
struct Streamed {
    output_started: bool,
    local_calls: usize,
    /// The user declined one of the calls: no further provider turn (OpenCode halts the loop too).
    declined: bool,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    error: Option<LlmError>,
    interrupted: bool,
}

/// The work-tree snapshots of one step: where they are kept (`None` outside git or with config
/// `snapshot: false`) and the tree before the step.
pub(crate) struct StepSnapshot {
    snapshots: Option<opencode_snapshot::Snapshots>,
    before: Option<String>,
}

impl Runner {
    async fn run(&self) -> Flow<bool> {
        let session = self.session().await?;
        let compact = self.inner.coordinator.take_compact(&self.session_id);
        let pending = self.read(|r, id| r.pending_inputs(id, None)).await?;
        if pending.is_empty() && !compact {
            return Ok(false);
        }
        self.recover().await?;
        let location = self.inner.location(&session.directory)?;
        if compact {
            let agent = self.inner.session_agent(&session)?;
            let model = self.model(&session, &agent).await?;
            self.compact(&location, &agent, &model, CompactionReason::Manual).await?;
        }
        let mut step = 1;
        let mut continuing = false;
        loop {
            if self.cancel.is_cancelled() {
                return Err(Stop::Interrupted);
            }
            if self.inner.coordinator.take_compact(&self.session_id) {
                let session = self.session().await?;
                let agent = self.inner.session_agent(&session)?;
                let model = self.model(&session, &agent).await?;
                self.compact(&location, &agent, &model, CompactionReason::Manual).await?;
            }
            let pending = self.read(|r, id| r.pending_inputs(id, None)).await?;
            let steers = pending.iter().any(|input| input.delivery == Delivery::Steer);
            let queued = pending.iter().any(|input| input.delivery == Delivery::Queue);
            let promotion = if steers || continuing {
                Promotion::Steer
            } else if queued {
                Promotion::Queue
            } else {
                return Ok(true);
            };
            continuing = self.turn(&location, promotion, &mut step).await?;
        }
    }

    /// Fails what a crashed process left unsettled: tool calls (never re-executed) and assistant
    /// messages that never completed.
    async fn recover(&self) -> Flow<()> {
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        let (tools, messages) = blocking(move || {
            store.write(|tx| {
                let tools = tx.fail_interrupted_tools(&session)?;
                let page = tx.reader().messages(&session, None, 20)?;
                let mut messages = 0;
                for message in page.messages {
                    if let MessageInfo::Assistant(mut assistant) = message.info
                        && assistant.time.completed.is_none()
                        && assistant.error.is_none()
                    {
                        assistant.error = Some(aborted("Provider turn interrupted"));
                        assistant.time.completed = Some(tx.now());
                        tx.upsert_message(&MessageInfo::Assistant(assistant))?;
                        messages += 1;
                    }
                }
                Ok((tools.len(), messages))
            })
        })
        .await?;
        if tools + messages > 0 {
            tracing::info!(session.id = %self.session_id, tools, messages, "recovered work left unsettled by a previous process");
        }
        Ok(())
    }

    /// One provider turn (with bounded retries, and one compaction-and-retry after an overflow).
    /// Returns whether the tool loop continues.
    async fn turn(&self, location: &Arc<Location>, promotion: Promotion, step: &mut u32) -> Flow<bool> {
        let session = self.session().await?;
        if session.directory != location.directory.display().to_string() {
            return Err(Stop::Failed(RuntimeError::Moved { session: session.id, directory: session.directory }));
        }
        let agent = self.inner.session_agent(&session)?;
        let agent = crate::subagent::bounded(&self.inner, &session, agent).await?;
        let model = self.model(&session, &agent).await?;
        let span = tracing::info_span!(
            "session.turn",
            session.id = %self.session_id,
            agent = %agent.name,
            model = %format!("{}/{}", model.resolved.provider, model.resolved.model),
            step = *step,
            input_tokens = tracing::field::Empty,
            output_tokens = tracing::field::Empty,
        );
        async {
            let mut epochs = SessionEpochs {
                store: Arc::clone(&self.inner.store),
                session_id: self.session_id.clone(),
                directory: session.directory.clone(),
                agent: agent.name.clone(),
                replace: false,
            };
            self.mcp_settled(location).await?;
            let had_epoch = self.read(|r, id| r.active_epoch(id)).await?.is_some();
            if !had_epoch {
                // Before promotion: an unavailable baseline leaves the input pending and retryable.
                self.prepare(&epochs, location).await?;
            }
            let (promoted, subtasks) = self.promote(promotion, &agent, &model, &session.directory).await?;
            if promoted > 0 {
                *step = 1;
                if self.inner.options.titles {
                    self.title(&model).await?;
                }
            }
            // Delegated by the user: run before the model answers (it then sees the results).
            let mut subtasks = subtasks.into_iter();
            while let Some(subtask) = subtasks.next() {
                if !crate::subtask::execute(&self.inner, &session, location.tools.as_ref(), subtask, &self.cancel)
                    .await?
                {
                    // Those promoted with it never start: their running parts settle as interrupted.
                    for rest in subtasks {
                        crate::subtask::abandon(&self.inner, &session, rest).await?;
                    }
                    return Err(Stop::Interrupted);
                }
            }
            if had_epoch {
                epochs.replace = self.model_switched(&model).await?;
                self.prepare(&epochs, location).await?;
            }
            self.provider_turn(location, &agent, &model, *step).await.inspect(|_| *step += 1)
        }
        .instrument(span)
        .await
    }

    /// Waits for the Location's MCP servers that are still connecting, each bounded by its own
    /// `timeout`, so that the turn's tool list (and a new baseline's MCP instructions) include every
    /// server that can connect; one that fails or times out is left out with its status saying why.
    /// Connected servers never make a turn wait, so the tool list changes between turns only when a
    /// server connects, disconnects or announces a change.
    async fn mcp_settled(&self, location: &Location) -> Flow<()> {
        let Some(mcp) = location.tools.mcp() else { return Ok(()) };
        tokio::select! {
            () = mcp.settled() => Ok(()),
            () = self.cancel.cancelled() => Err(Stop::Interrupted),
        }
    }

    async fn provider_turn(
        &self,
        location: &Arc<Location>,
        agent: &Arc<Agent>,
        model: &TurnModel,
        step: u32,
    ) -> Flow<bool> {
        let last_step = agent.steps.is_some_and(|steps| step >= steps);
        let (mut compacted, mut recovered, mut attempt) = (false, false, 0);
        loop {
            let projected = self.projected().await?;
            let epoch = projected
                .epoch
                .ok_or_else(|| RuntimeError::Internal("the context epoch vanished before the provider turn".into()))?;
            let known = projected.messages.len();
            let mut request = self.request(location, agent, model, &epoch.baseline, projected.messages, last_step);
            let estimate = compaction::estimate_tokens_from(&request, known, projected.message_chars);
            let output = request.generation.max_tokens.map_or(model.info.limit.output, u64::from);
            let managed = self.inner.hooks.as_ref().is_some_and(|hooks| hooks.manages_context());
            if self.inner.compaction.auto
                && !compacted
                && !managed
                && self.inner.compaction.overflows(estimate, model.info.limit.context, output)
            {
                compacted = true;
                if self.compact(location, agent, model, CompactionReason::Auto).await? {
                    continue;
                }
            }
            attempt += 1;
            let (message, step) = self.begin_assistant(agent, model, projected.parent.clone()).await?;
            let turn = TurnInfo {
                session_id: self.session_id.clone(),
                message_id: message.id.clone(),
                agent: agent.name.clone(),
                provider: model.resolved.provider.clone(),
                model: model.resolved.model.clone(),
                context_limit: model.info.limit.context,
                output_limit: model.info.limit.output,
            };
            if let Some(hooks) = &self.inner.hooks {
                hooks.tool_definitions(&turn, &mut request.tools).await;
                hooks.chat_params(&turn, &mut request).await;
                hooks.transform_request(&turn, &mut request).await;
            }
            let streamed = self.stream(location, agent, model, &message, &turn, &request).await?;
            if streamed.interrupted {
                self.finish_assistant(message, model, &streamed, Some(aborted("Provider turn interrupted")), step)
                    .await?;
                return Err(Stop::Interrupted);
            }
            let Some(error) = streamed.error.clone() else {
                self.finish_assistant(message, model, &streamed, None, step).await?;
                return Ok(streamed.local_calls > 0 && !streamed.declined);
            };
            if !streamed.output_started && error.is_context_overflow() && !recovered {
                recovered = true;
                self.discard(&message.id).await?;
                if self.compact(location, agent, model, CompactionReason::Overflow).await? {
                    compacted = true;
                    continue;
                }
                return Err(Stop::Failed(RuntimeError::Provider(error)));
            }
            let retry = (!streamed.output_started).then(|| self.inner.options.retry.delay(attempt - 1, &error));
            if let Some(Some(wait)) = retry {
                self.discard(&message.id).await?;
                self.retry_wait(attempt, wait, &error).await?;
                continue;
            }
            self.finish_assistant(message, model, &streamed, Some(api_error(&error)), step).await?;
            return Err(Stop::Failed(RuntimeError::Provider(error)));
        }
    }

    /// Builds the one request of a provider turn.
    fn request(
        &self,
        location: &Location,
        agent: &Agent,
        model: &TurnModel,
        baseline: &str,
        messages: Vec<Message>,
        last_step: bool,
    ) -> LlmRequest {
        let mut request = LlmRequest::new(model.resolved.api_id.clone());
        request.system.push(SystemPart::text(agent.prompt.clone().unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned())));
        if !baseline.is_empty() {
            request.system.push(SystemPart::text(baseline));
        }
        request.messages = messages;
        let options = &model.resolved.options;
        request.options = options.request.clone();
        request.generation = options.generation.clone();
        request.generation.temperature = agent.temperature.or(request.generation.temperature);
        request.generation.top_p = agent.top_p.or(request.generation.top_p);
        request.http.body = options.body.clone();
        request.http.headers = options.headers.clone();
        if last_step {
            request.tool_choice = Some(ToolChoice::None);
            request.messages.push(Message::assistant(vec![opencode_llm::ContentPart::text(MAX_STEPS_PROMPT)]));
        } else if model.info.tool_call {
            request.tools = location.tools.definitions(agent);
        }
        request
    }

    /// Streams one attempt: parts are persisted as they arrive, local tool calls start at once.
    async fn stream(
        &self,
        location: &Arc<Location>,
        agent: &Arc<Agent>,
        model: &TurnModel,
        message: &AssistantMessage,
        turn: &TurnInfo,
        request: &LlmRequest,
    ) -> Flow<Streamed> {
        let mut out = Streamed::default();
        let started = tokio::select! {
            started = self.inner.llm.stream(&model.resolved.route, request) => started,
            () = self.cancel.cancelled() => {
                out.interrupted = true;
                return Ok(out);
            }
        };
        let mut stream = match started {
            Ok(stream) => stream,
            Err(error) => {
                out.error = Some(error);
                return Ok(out);
            }
        };
        let mut parts = Parts::new(&self.session_id, &message.id);
        let mut tools: JoinSet<Flow<bool>> = JoinSet::new();
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = self.cancel.cancelled() => {
                    out.interrupted = true;
                    break;
                }
            };
            let Some(event) = event else { break };
            match event {
                LlmEvent::StepStart { .. } | LlmEvent::ToolInputEnd { .. } => {}
                LlmEvent::TextStart { id } => self.stage(parts.open_text(&id, false)).await?,
                LlmEvent::ReasoningStart { id } => self.stage(parts.open_text(&id, true)).await?,
                LlmEvent::TextDelta { id, text } | LlmEvent::ReasoningDelta { id, text } => {
                    out.output_started = true;
                    if let Some((part, kind)) = parts.append(&id, &text) {
                        self.delta(&part, kind, text);
                        self.stage(part).await?;
                    }
                }
                LlmEvent::TextEnd { id, provider_metadata } => {
                    let metadata = provider_metadata.map(|m| json!({"providerMetadata": m}));
                    if let Some(mut part) = parts.close(&id, metadata) {
                        if let (Some(hooks), PartKind::Text { text, .. }) = (&self.inner.hooks, &mut part.kind) {
                            hooks.text_complete(turn, &part.id, text).await;
                        }
                        self.stage(part).await?;
                    }
                }
                LlmEvent::ReasoningEnd { id, signature, encrypted, provider_metadata } => {
                    let metadata =
                        json!({"signature": signature, "encrypted": encrypted, "providerMetadata": provider_metadata});
                    if let Some(part) = parts.close(&id, Some(metadata)) {
                        self.stage(part).await?;
                    }
                }
                LlmEvent::ToolInputStart { id, name } => {
                    out.output_started = true;
                    self.stage(parts.pending_tool(&id, &name)).await?;
                }
                LlmEvent::ToolInputDelta { id, text } => {
                    if let Some(part) = parts.tool_input(&id, &text) {
                        self.delta(&part, DeltaKind::ToolInput, text);
                    }
                }
                LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata } => {
                    out.output_started = true;
                    let mut metadata = serde_json::Map::new();
                    if provider_executed {
                        metadata.insert("providerExecuted".into(), Value::Bool(true));
                    }
                    if let Some(provider_metadata) = provider_metadata {
                        metadata.insert("providerMetadata".into(), Value::Object(provider_metadata));
                    }
                    let metadata = (!metadata.is_empty()).then_some(Value::Object(metadata));
                    let part = parts.running_tool(&id, &name, input.clone(), metadata);
                    // Durably recorded before it runs: a crash from here on fails it, never re-runs it.
                    self.write_part(part.clone()).await?;
                    if !provider_executed {
                        out.local_calls += 1;
                        let call = ToolInvocation { call_id: id, name, input };
                        tools.spawn(self.settle(Arc::clone(location), Arc::clone(agent), turn.clone(), part, call));
                    }
                }
                LlmEvent::ToolResult { id, name: _, result } => {
                    if let Some(part) = parts.provider_result(&id, &result) {
                        self.stage(part).await?;
                    }
                }
                LlmEvent::StepFinish { usage, .. } => {
                    if usage.is_some() {
                        out.usage = usage;
                    }
                }
                LlmEvent::Finish { reason, usage, .. } => {
                    out.finish = Some(reason);
                    if usage.is_some() {
                        out.usage = usage;
                    }
                }
                LlmEvent::Error { error } => out.error = Some(error),
            }
        }
        for part in parts.unfinished() {
            self.stage(part).await?;
        }
        // Every started call settles (an interrupt cancels them; they settle as interrupted).
        while let Some(settled) = tools.join_next().await {
            out.declined |= settled.map_err(|err| RuntimeError::internal(format!("a tool task failed: {err}")))??;
        }
        // An interrupt that arrived while tools ran (after the stream closed) interrupts the turn too.
        out.interrupted |= self.cancel.is_cancelled();
        if out.error.is_some() || out.interrupted {
            let reason = if out.interrupted { opencode_session_store::INTERRUPTED_TOOL_ERROR } else { NO_TOOL_RESULT };
            for part in parts.unsettled_tools(reason) {
                self.write_part(part).await?;
            }
        }
        Ok(out)
    }

    /// Runs one local tool call and persists its settlement (the interruption-safe completion region).
    /// Returns whether the user declined the call.
    fn settle(
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

    /// Promotes admitted input at this boundary; returns how many prompts became history and the
    /// subtasks they carry, whose running `task` parts are written in the same transaction (after
    /// every promoted prompt, so that prompts promoted together still share one reply).
    async fn promote(
        &self,
        promotion: Promotion,
        agent: &Agent,
        model: &TurnModel,
        directory: &str,
    ) -> Flow<(usize, Vec<crate::subtask::Promoted>)> {
        // `chat.message`: plugins settle the new messages' parts before they are written.
        let rewritten = match self.inner.hooks.as_ref().filter(|hooks| hooks.rewrites_messages()) {
            Some(hooks) => Some(self.chat_messages(hooks.as_ref(), promotion, agent, model).await?),
            None => None,
        };
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        let (agent, model, directory) = (agent.name.clone(), model.reference(), directory.to_owned());
        let promoted = blocking(move || {
            store.write(|tx| {
                let cutoff = tx.reader().latest_seq(&session)?;
                let pending = tx.reader().pending_inputs(&session, None)?;
                let first_queued = match promotion {
                    Promotion::Queue => pending.iter().find(|i| i.delivery == Delivery::Queue).map(|i| i.id.clone()),
                    Promotion::Steer => None,
                };
                let mut promoted = 0;
                let mut subtasks = Vec::new();
                for input in pending {
                    let steer = input.delivery == Delivery::Steer && input.admitted_seq <= cutoff;
                    if !steer && first_queued.as_deref() != Some(input.id.as_str()) {
                        continue;
                    }
                    let kinds = match &rewritten {
                        None => decode_prompt(&input.prompt)?.parts(),
                        Some(rewritten) => match rewritten.get(&input.id) {
                            Some(kinds) => kinds.clone(),
                            // Admitted after `chat.message` ran: promoted at the next boundary.
                            None => continue,
                        },
                    };
                    let user = UserMessage {
                        id: input.id.clone(),
                        session_id: session.clone(),
                        time: opencode_session_store::CreatedTime { created: tx.now() },
                        format: None,
                        summary: None,
                        agent: agent.clone(),
                        model: model.clone(),
                        system: None,
                        tools: None,
                    };
                    subtasks.extend(
                        kinds
                            .iter()
                            .filter_map(crate::subtask::SubtaskPrompt::from_part)
                            .map(|subtask| crate::subtask::Promoted::new(&directory, user.clone(), subtask)),
                    );
                    let parts = kinds.into_iter().map(|kind| new_part(&session, &input.id, kind)).collect();
                    tx.promote_input(&input.id, MessageInfo::User(user), parts)?;
                    promoted += 1;
                }
                for subtask in &subtasks {
                    subtask.write(tx)?;
                }
                Ok((promoted, subtasks))
            })
        })
        .await?;
        Ok(promoted)
    }

    /// Runs `chat.message` over the inputs the next promotion takes (read now, as it will select
    /// them); their parts by input id.
    async fn chat_messages(
        &self,
        hooks: &dyn crate::hooks::Hooks,
        promotion: Promotion,
        agent: &Agent,
        model: &TurnModel,
    ) -> Flow<HashMap<String, Vec<PartKind>>> {
        let selected = self
            .read(move |r, id| {
                let cutoff = r.latest_seq(id)?;
                let pending = r.pending_inputs(id, None)?;
                let first_queued = match promotion {
                    Promotion::Queue => pending.iter().find(|i| i.delivery == Delivery::Queue).map(|i| i.id.clone()),
                    Promotion::Steer => None,
                };
                let selected = pending.into_iter().filter(|input| {
                    (input.delivery == Delivery::Steer && input.admitted_seq <= cutoff)
                        || first_queued.as_deref() == Some(input.id.as_str())
                });
                selected
                    .map(|input| Ok((input.id, decode_prompt(&input.prompt)?)))
                    .collect::<opencode_session_store::Result<Vec<_>>>()
            })
            .await?;
        let mut rewritten = HashMap::with_capacity(selected.len());
        for (input_id, prompt) in selected {
            let turn = TurnInfo {
                session_id: self.session_id.clone(),
                message_id: input_id.clone(),
                agent: agent.name.clone(),
                provider: model.resolved.provider.clone(),
                model: model.resolved.model.clone(),
                context_limit: model.info.limit.context,
                output_limit: model.info.limit.output,
            };
            let mut kinds = prompt.parts();
            hooks.chat_message(&turn, &mut kinds).await;
            rewritten.insert(input_id, kinds);
        }
        Ok(rewritten)
    }

    /// Starts titling the session in the background when this was its first user message and it
    /// still has the default title (a root session only).
    async fn title(&self, model: &TurnModel) -> Flow<()> {
        let session = self.session().await?;
        // As in OpenCode, disabling the `title` agent in config turns titles off.
        let config = self.inner.settings(&session.directory)?.config;
        let disabled = config.agent.get("title").is_some_and(|agent| agent.disable == Some(true));
        if disabled || session.parent_id.is_some() || !crate::title::is_default_title(&session.title) {
            return Ok(());
        }
        let page = self.read(|r, id| r.messages(id, None, 8)).await?;
        let mut users = page.messages.iter().filter(|m| matches!(m.info, MessageInfo::User(_)));
        let (Some(first), None, None) = (users.next(), users.next(), page.older) else { return Ok(()) };
        let text = history::texts(first);
        if text.trim().is_empty() {
            return Ok(());
        }
        let main = crate::runtime::ModelChoice {
            provider: model.resolved.provider.clone(),
            model: model.resolved.model.clone(),
            variant: None,
        };
        crate::title::spawn(Arc::clone(&self.inner), session, main, text);
        Ok(())
    }

    /// Prepares the Context Epoch (initialise, reconcile or replace), retried until stable.
    async fn prepare(&self, epochs: &SessionEpochs, location: &Location) -> Flow<()> {
        let prepared = prepare_epoch(epochs, || location.context.load(), EpochPreparation::default()).await;
        match prepared {
            Ok(Prepared::ReplacementBlocked { keys }) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                tracing::warn!(session.id = %self.session_id, ?keys, "context replacement blocked by unavailable sources");
                Ok(())
            }
            Ok(prepared) => {
                tracing::debug!(session.id = %self.session_id, ?prepared, "context epoch prepared");
                Ok(())
            }
            Err(EpochError::Context(err)) => Err(Stop::Failed(RuntimeError::Context(err))),
            Err(EpochError::Store(err)) => Err(Stop::Failed(err)),
            Err(err @ EpochError::Unstable { .. }) => Err(Stop::Failed(RuntimeError::internal(err))),
        }
    }

    /// Whether the model changed since the epoch's last assistant message (a switch replaces the epoch).
    async fn model_switched(&self, model: &TurnModel) -> Flow<bool> {
        let page = self.read(|r, id| r.history(id, None, 50)).await?;
        let last = page.messages.iter().rev().find_map(|m| match &m.info {
            MessageInfo::Assistant(a) if a.summary != Some(true) => Some((a.provider_id.clone(), a.model_id.clone())),
            _ => None,
        });
        Ok(last.is_some_and(|(provider, id)| provider != model.resolved.provider || id != model.resolved.model))
    }

    /// Writes a new assistant message for this turn (with its step-start part, which records the
    /// work tree's snapshot before the step).
    async fn begin_assistant(
        &self,
        agent: &Agent,
        model: &TurnModel,
        parent: Option<String>,
    ) -> Flow<(AssistantMessage, StepSnapshot)> {
        let parent = parent.unwrap_or_default();
        let session = self.session().await?;
        let snapshots = self.inner.snapshots(&session);
        let before = snapshots::track(snapshots.as_ref()).await;
        let location = session.directory;
        let message = AssistantMessage {
            id: id::ascending(IdKind::Message),
            session_id: self.session_id.clone(),
            time: AssistantTime { created: now_ms(), completed: None },
            error: None,
            parent_id: parent,
            model_id: model.resolved.model.clone(),
            provider_id: model.resolved.provider.clone(),
            mode: agent.name.clone(),
            agent: agent.name.clone(),
            path: MessagePath { cwd: location.clone(), root: location },
            summary: None,
            cost: 0.0,
            tokens: Tokens::default(),
            structured: None,
            variant: None,
            finish: None,
        };
        let step = new_part(&self.session_id, &message.id, PartKind::StepStart { snapshot: before.clone() });
        let store = Arc::clone(&self.inner.store);
        let info = MessageInfo::Assistant(message.clone());
        blocking(move || {
            store.write(|tx| {
                tx.append_message(&info)?;
                tx.upsert_part(&step)
            })
        })
        .await?;
        Ok((message, StepSnapshot { snapshots, before }))
    }

    /// Completes the assistant message: step-finish part (with the work tree's snapshot after the
    /// step), a patch part when the step changed files, usage and cost, finish or error; then
    /// flushes (fsync) before the step is reported finished. A step that changed files updates the
    /// turn's and the session's diffs.
    async fn finish_assistant(
        &self,
        mut message: AssistantMessage,
        model: &TurnModel,
        streamed: &Streamed,
        error: Option<MessageError>,
        snapshot: StepSnapshot,
    ) -> Flow<()> {
        // A step that ran no tool changed no file: it ends on the tree it began with (one git
        // call fewer on the turn's last, answering step).
        let after = match streamed.local_calls {
            0 => snapshot.before.clone(),
            _ => snapshots::track(snapshot.snapshots.as_ref()).await,
        };
        let changed = match (&after, &snapshot.before) {
            (Some(after), Some(before)) if after != before => {
                snapshots::changed_files(snapshot.snapshots.as_ref(), before, after).await
            }
            _ => Vec::new(),
        };
        let usage = streamed.usage.clone().unwrap_or_default();
        let tokens = tokens(&usage);
        let cost = model.info.cost.as_ref().map_or(0.0, |prices| opencode_catalog::cost::cost(prices, &usage));
        tracing::Span::current()
            .record("input_tokens", usage.input_tokens)
            .record("output_tokens", usage.output_tokens);
        let reason = streamed.finish.map_or("unknown", finish_name).to_owned();
        let step = (error.is_none()).then(|| {
            new_part(
                &self.session_id,
                &message.id,
                PartKind::StepFinish { reason: reason.clone(), snapshot: after.clone(), cost, tokens },
            )
        });
        let patch = match (&snapshot.before, changed.is_empty()) {
            (Some(before), false) => {
                Some(new_part(&self.session_id, &message.id, PartKind::Patch { hash: before.clone(), files: changed }))
            }
            _ => None,
        };
        let summarize = patch.is_some().then(|| (message.parent_id.clone(), after.clone()));
        message.cost = cost;
        message.tokens = tokens;
        message.finish = Some(reason);
        message.error = error;
        message.time.completed = Some(now_ms());
        let store = Arc::clone(&self.inner.store);
        blocking(move || {
            store.write(|tx| {
                if let Some(step) = &step {
                    tx.upsert_part(step)?;
                }
                if let Some(patch) = &patch {
                    tx.upsert_part(patch)?;
                }
                tx.upsert_message(&MessageInfo::Assistant(message))?;
                Ok(())
            })?;
            store.flush()
        })
        .await?;
        if let (Some((user, Some(after))), Some(snapshots)) = (summarize, snapshot.snapshots) {
            let store = Arc::clone(&self.inner.store);
            snapshots::summarize(store, snapshots, self.session_id.clone(), user, after).await;
        }
        Ok(())
    }

    /// Removes an attempt's assistant message that produced no output (before a retry).
    async fn discard(&self, message_id: &str) -> Flow<()> {
        let store = Arc::clone(&self.inner.store);
        let id = message_id.to_owned();
        blocking(move || store.write(|tx| tx.remove_message(&id))).await?;
        Ok(())
    }

    /// Waits `wait` before runtime retry `attempt` (interruptible), recording it durably.
    async fn retry_wait(&self, attempt: u32, wait: Duration, error: &LlmError) -> Flow<()> {
        let next = now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        let data = json!({"sessionID": session, "attempt": attempt, "error": error.message, "next": next});
        blocking(move || store.write(|tx| tx.append_event(&session, "session.next.retried", data))).await?;
        self.inner.publish(RuntimeEvent::Status {
            session_id: self.session_id.clone(),
            status: SessionStatus::Retry { attempt, message: error.message.clone(), next },
        });
        tracing::warn!(session.id = %self.session_id, attempt, wait_ms = wait.as_millis() as u64, error = %error, "retrying provider turn");
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.cancel.cancelled() => return Err(Stop::Interrupted),
        }
        self.inner.publish(RuntimeEvent::Status { session_id: self.session_id.clone(), status: SessionStatus::Busy });
        Ok(())
    }

    /// Compacts the session: a summary turn without tools, then one transaction writing the
    /// checkpoint and starting a new Context Epoch from it. `false` when there is nothing to compact.
    async fn compact(
        &self,
        location: &Arc<Location>,
        agent: &Agent,
        model: &TurnModel,
        reason: CompactionReason,
    ) -> Flow<bool> {
        let span = tracing::info_span!("session.compaction", session.id = %self.session_id, reason = reason.as_str(),
            model = %model.resolved.model, input_tokens = tracing::field::Empty, output_tokens = tracing::field::Empty);
        self.compact_inner(location, agent, model, reason).instrument(span).await
    }

    async fn compact_inner(
        &self,
        location: &Arc<Location>,
        agent: &Agent,
        model: &TurnModel,
        reason: CompactionReason,
    ) -> Flow<bool> {
        let Some(epoch) = self.read(|r, id| r.active_epoch(id)).await? else { return Ok(false) };
        let history = self.read(|r, id| r.full_history(id)).await?;
        let mut selection = compaction::select(&history, self.inner.compaction.keep_tokens);
        if selection.is_empty() && reason == CompactionReason::Manual {
            // The user asked for it: a history shorter than the kept tail is summarised whole.
            selection = compaction::select(&history, 0);
        }
        if selection.is_empty() {
            return Ok(false);
        }
        let limit = model.info.limit;
        let summary_output = match u32::try_from(limit.output) {
            Ok(output) if output > 0 => output.min(compaction::SUMMARY_OUTPUT_TOKENS),
            _ => compaction::SUMMARY_OUTPUT_TOKENS,
        };
        let mut plugins = compaction::CompactionPrompt::default();
        if let Some(hooks) = &self.inner.hooks {
            hooks.compacting(&self.session_id, &mut plugins).await;
        }
        let mut request = LlmRequest::new(model.resolved.api_id.clone())
            .system(COMPACTION_SYSTEM_PROMPT)
            .message(Message::user(compaction::summary_prompt(&selection, &plugins)));
        request.options = model.resolved.options.request.clone();
        request.http.headers = model.resolved.options.headers.clone();
        request.generation.max_tokens = Some(summary_output);
        let estimate = compaction::estimate_tokens(&request);
        let room = limit.context.saturating_sub(u64::from(summary_output));
        if limit.context > 0 && estimate > room {
            return Err(Stop::Failed(RuntimeError::Compaction(format!(
                "the summary request needs about {estimate} tokens but {}/{} leaves room for {room}",
                model.resolved.provider, model.resolved.model
            ))));
        }
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        let data = json!({"sessionID": session, "reason": reason.as_str()});
        blocking(move || store.write(|tx| tx.append_event(&session, "session.next.compaction.started", data))).await?;
        let started = now_ms();
        let (summary, usage) = self.summarise(&request, model).await?;
        tracing::Span::current()
            .record("input_tokens", usage.input_tokens)
            .record("output_tokens", usage.output_tokens);
        let context = location.context.load().await.map_err(RuntimeError::Context)?;
        let previous = Snapshot::from_json(&epoch.snapshot).map_err(RuntimeError::Context)?;
        let generation = match context.replace(&previous).await.map_err(RuntimeError::Context)? {
            Replacement::Ready(generation) => generation,
            Replacement::Blocked { keys } => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                return Err(Stop::Failed(RuntimeError::Compaction(format!(
                    "the new baseline cannot be rendered while {} is unavailable",
                    keys.join(", ")
                ))));
            }
        };
        let checkpoint = Checkpoint {
            session_id: self.session_id.clone(),
            agent: agent.name.clone(),
            model: model.reference(),
            directory: location.directory.display().to_string(),
            reason,
            summary,
            recent: selection.recent,
            tokens: tokens(&usage),
            cost: model.info.cost.as_ref().map_or(0.0, |prices| opencode_catalog::cost::cost(prices, &usage)),
            started,
        };
        let store = Arc::clone(&self.inner.store);
        let expected_epoch = epoch.epoch;
        blocking(move || {
            store.write(|tx| checkpoint.write(tx, expected_epoch, generation))?;
            store.flush()
        })
        .await?;
        tracing::info!(session.id = %self.session_id, reason = reason.as_str(), "compacted; a new context epoch begins");
        Ok(true)
    }

    /// Streams the summary request; its text (live deltas only) and usage.
    async fn summarise(&self, request: &LlmRequest, model: &TurnModel) -> Flow<(String, Usage)> {
        let started = tokio::select! {
            started = self.inner.llm.stream(&model.resolved.route, request) => started,
            () = self.cancel.cancelled() => return Err(Stop::Interrupted),
        };
        let mut stream = started.map_err(|err| RuntimeError::Compaction(err.to_string()))?;
        let (mut text, mut usage) = (String::new(), Usage::default());
        let part_id = id::ascending(IdKind::Part);
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = self.cancel.cancelled() => return Err(Stop::Interrupted),
            };
            match event {
                None => break,
                Some(LlmEvent::TextDelta { text: delta, .. }) => {
                    text.push_str(&delta);
                    self.inner.publish(RuntimeEvent::Delta {
                        session_id: self.session_id.clone(),
                        message_id: String::new(),
                        part_id: part_id.clone(),
                        kind: DeltaKind::Compaction,
                        delta,
                    });
                }
                Some(LlmEvent::Finish { usage: Some(found), .. } | LlmEvent::StepFinish { usage: Some(found), .. }) => {
                    usage = found;
                }
                Some(LlmEvent::Error { error }) => {
                    return Err(Stop::Failed(RuntimeError::Compaction(error.to_string())));
                }
                Some(_) => {}
            }
        }
        if text.trim().is_empty() {
            return Err(Stop::Failed(RuntimeError::Compaction("the model returned an empty summary".into())));
        }
        Ok((text, usage))
    }

    /// The turn's model: the session's, else its agent's, else config `model` (of the session's
    /// directory), else the default; resolved through that directory's catalog.
    async fn model(&self, session: &Session, agent: &Agent) -> Result<TurnModel> {
        let settings = self.inner.settings(&session.directory)?;
        let Some(chosen) = settings.model_for(&self.inner, session, agent)? else {
            return Err(RuntimeError::NoModel { session: session.id.clone() });
        };
        let (provider, model, variant) = (chosen.provider, chosen.model, chosen.variant);
        let auth = self.inner.credentials(&provider).await?;
        let resolved =
            settings.catalog.resolve(&provider, &model, variant.as_deref(), auth.as_ref(), &self.inner.env)?;
        let mut info = settings.catalog.model(&provider, &model)?.info.clone();
        if resolved.signed_in() {
            info.cost = None; // A subscription pays for its tokens.
        }
        Ok(TurnModel { resolved, info })
    }

    async fn session(&self) -> Result<Session> {
        let session = self.read(|r, id| r.session(id)).await?;
        session
            .ok_or_else(|| RuntimeError::Store(StoreError::NotFound { kind: "session", id: self.session_id.clone() }))
    }

    /// The projected history of the next provider turn: the in-memory projection when it provably
    /// equals the store, else a reload.
    async fn projected(&self) -> Result<crate::projection::Projected> {
        let inner = Arc::clone(&self.inner);
        let session = self.session_id.clone();
        let projected = blocking(move || inner.history.projected(&inner.store, &session)).await?;
        if projected.reloaded {
            tracing::debug!(session.id = %self.session_id, messages = projected.messages.len(), "projected history reloaded");
        }
        Ok(projected)
    }

    /// Runs a read of this session's rows off the async threads.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&opencode_session_store::Reader<'_>, &str) -> opencode_session_store::Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        blocking(move || store.read(|r| f(r, &session))).await
    }

    async fn stage(&self, part: Part) -> Result<()> {
        let store = Arc::clone(&self.inner.store);
        blocking(move || store.stage_part(part).map(|_| ())).await
    }

    async fn write_part(&self, part: Part) -> Result<()> {
        let store = Arc::clone(&self.inner.store);
        blocking(move || store.write(|tx| tx.upsert_part(&part))).await
    }

    fn delta(&self, part: &Part, kind: DeltaKind, delta: String) {
        self.inner.publish(RuntimeEvent::Delta {
            session_id: part.session_id.clone(),
            message_id: part.message_id.clone(),
            part_id: part.id.clone(),
            kind,
            delta,
        });
    }
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CompactionReason {
    Auto,
    Overflow,
    Manual,
}

impl CompactionReason {
    fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Overflow => "overflow",
            Self::Manual => "manual",
        }
    }
}

/// What a completed compaction writes, in one transaction.
struct Checkpoint {
    session_id: String,
    agent: String,
    model: ModelRef,
    directory: String,
    reason: CompactionReason,
    summary: String,
    recent: String,
    tokens: Tokens,
    cost: f64,
    /// When the summary was asked for (Unix ms): the checkpoint's messages span the summary's time.
    started: i64,
}

impl Checkpoint {
    fn write(
        self,
        tx: &mut opencode_session_store::Tx<'_>,
        expected_epoch: i64,
        generation: opencode_system_context::Generation,
    ) -> opencode_session_store::Result<()> {
        let session = &self.session_id;
        let current = tx
            .reader()
            .session(session)?
            .ok_or_else(|| StoreError::NotFound { kind: "session", id: session.clone() })?;
        let active = tx.reader().active_epoch(session)?.map(|e| e.epoch);
        if current.directory != self.directory || active != Some(expected_epoch) {
            return Err(StoreError::Conflict(format!(
                "session {session} changed while it was being compacted; the compaction was not applied"
            )));
        }
        let now = tx.now();
        let user_id = id::ascending(IdKind::Message);
        tx.append_message(&MessageInfo::User(UserMessage {
            id: user_id.clone(),
            session_id: session.clone(),
            time: opencode_session_store::CreatedTime { created: self.started.min(now) },
            format: None,
            summary: None,
            agent: self.agent.clone(),
            model: self.model.clone(),
            system: None,
            tools: None,
        }))?;
        let overflow = (self.reason == CompactionReason::Overflow).then_some(true);
        let auto = self.reason != CompactionReason::Manual;
        tx.upsert_part(&new_part(session, &user_id, PartKind::Compaction { auto, overflow, tail_start_id: None }))?;
        tx.upsert_part(&new_part(
            session,
            &user_id,
            PartKind::Text {
                text: self.recent,
                synthetic: Some(true),
                ignored: None,
                time: None,
                metadata: Some(json!({history::RECENT_CONTEXT: true})),
            },
        ))?;
        let summary_id = id::ascending(IdKind::Message);
        tx.append_message(&MessageInfo::Assistant(AssistantMessage {
            id: summary_id.clone(),
            session_id: session.clone(),
            time: AssistantTime { created: self.started.min(now), completed: Some(now) },
            error: None,
            parent_id: user_id.clone(),
            model_id: self.model.model_id.clone(),
            provider_id: self.model.provider_id.clone(),
            mode: "compaction".into(),
            agent: "compaction".into(),
            path: MessagePath { cwd: self.directory.clone(), root: self.directory.clone() },
            summary: Some(true),
            cost: self.cost,
            tokens: self.tokens,
            structured: None,
            variant: None,
            finish: Some("stop".into()),
        }))?;
        tx.upsert_part(&new_part(
            session,
            &summary_id,
            PartKind::Text { text: self.summary.clone(), synthetic: None, ignored: None, time: None, metadata: None },
        ))?;
        tx.append_event(
            session,
            "session.next.compaction.ended",
            json!({"sessionID": session, "messageID": user_id, "text": self.summary}),
        )?;
        tx.start_epoch(session, new_epoch(generation, self.agent, Some(user_id)))?;
        Ok(())
    }
}

/// The parts of one streamed attempt, by provider block id.
struct Parts {
    session_id: String,
    message_id: String,
    texts: HashMap<String, Part>,
    tools: HashMap<String, Part>,
    /// Tool call ids in arrival order (to settle leftovers deterministically).
    tool_order: Vec<String>,
}

impl Parts {
    fn new(session_id: &str, message_id: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            message_id: message_id.to_owned(),
            texts: HashMap::new(),
            tools: HashMap::new(),
            tool_order: Vec::new(),
        }
    }

    fn open_text(&mut self, id: &str, reasoning: bool) -> Part {
        let time = PartTime { start: now_ms(), end: None };
        let kind = if reasoning {
            PartKind::Reasoning { text: String::new(), metadata: None, time }
        } else {
            PartKind::Text { text: String::new(), synthetic: None, ignored: None, time: Some(time), metadata: None }
        };
        let part = new_part(&self.session_id, &self.message_id, kind);
        self.texts.insert(id.to_owned(), part.clone());
        part
    }

    fn append(&mut self, id: &str, delta: &str) -> Option<(Part, DeltaKind)> {
        if !self.texts.contains_key(id) {
            // A delta without its start (some providers skip it): open the block implicitly.
            self.open_text(id, false);
        }
        let part = self.texts.get_mut(id)?;
        let kind = match &mut part.kind {
            PartKind::Text { text, .. } => {
                text.push_str(delta);
                DeltaKind::Text
            }
            PartKind::Reasoning { text, .. } => {
                text.push_str(delta);
                DeltaKind::Reasoning
            }
            _ => return None,
        };
        Some((part.clone(), kind))
    }

    fn close(&mut self, id: &str, metadata: Option<Value>) -> Option<Part> {
        let mut part = self.texts.remove(id)?;
        let end = Some(now_ms());
        match &mut part.kind {
            PartKind::Text { time, metadata: slot, .. } => {
                if let Some(time) = time {
                    time.end = end;
                }
                *slot = metadata;
            }
            PartKind::Reasoning { time, metadata: slot, .. } => {
                time.end = end;
                *slot = metadata;
            }
            _ => {}
        }
        Some(part)
    }

    /// Text and reasoning blocks the stream never closed.
    fn unfinished(&mut self) -> Vec<Part> {
        let mut ids: Vec<String> = self.texts.keys().cloned().collect();
        ids.sort();
        ids.into_iter().filter_map(|id| self.close(&id, None)).collect()
    }

    fn pending_tool(&mut self, id: &str, name: &str) -> Part {
        let kind = PartKind::Tool {
            call_id: id.to_owned(),
            tool: name.to_owned(),
            state: ToolState::Pending { input: json!({}), raw: String::new() },
            metadata: None,
        };
        let part = new_part(&self.session_id, &self.message_id, kind);
        self.tool_order.push(id.to_owned());
        self.tools.insert(id.to_owned(), part.clone());
        part
    }

    fn tool_input(&mut self, id: &str, delta: &str) -> Option<Part> {
        let part = self.tools.get_mut(id)?;
        if let PartKind::Tool { state: ToolState::Pending { raw, .. }, .. } = &mut part.kind {
            raw.push_str(delta);
        }
        Some(part.clone())
    }

    fn running_tool(&mut self, id: &str, name: &str, input: Value, metadata: Option<Value>) -> Part {
        let state = ToolState::Running { input, title: None, metadata: None, time: ToolStartTime { start: now_ms() } };
        let kind = PartKind::Tool { call_id: id.to_owned(), tool: name.to_owned(), state, metadata };
        let part = match self.tools.get_mut(id) {
            Some(existing) => {
                existing.kind = kind;
                existing.clone()
            }
            None => {
                self.tool_order.push(id.to_owned());
                let part = new_part(&self.session_id, &self.message_id, kind);
                self.tools.insert(id.to_owned(), part.clone());
                part
            }
        };
        // Local calls settle in their own task; only provider-executed ones are tracked further here.
        part
    }

    fn provider_result(&mut self, id: &str, result: &opencode_llm::ToolResultValue) -> Option<Part> {
        let part = self.tools.get_mut(id)?;
        if let PartKind::Tool { state, metadata, .. } = &mut part.kind {
            let start = match state {
                ToolState::Running { time, .. } => time.start,
                _ => now_ms(),
            };
            let mut meta = metadata.clone().unwrap_or_else(|| json!({}));
            if let Some(map) = meta.as_object_mut() {
                map.insert("result".into(), serde_json::to_value(result).unwrap_or(Value::Null));
            }
            let time = ToolEndTime { start, end: now_ms(), compacted: None };
            *state = if result.is_error() {
                ToolState::Error { input: state.input().clone(), error: result.to_text(), metadata: None, time }
            } else {
                ToolState::Completed {
                    input: state.input().clone(),
                    output: result.to_text(),
                    title: String::new(),
                    metadata: json!({}),
                    time,
                    attachments: None,
                }
            };
            *metadata = Some(meta);
        }
        Some(part.clone())
    }

    /// Tool parts that never became a call (input started, no call) or a provider-executed call
    /// without result, failed with `reason`. Local calls settle in their own tasks.
    fn unsettled_tools(&mut self, reason: &str) -> Vec<Part> {
        let mut out = Vec::new();
        for id in &self.tool_order {
            let Some(part) = self.tools.get_mut(id) else { continue };
            let PartKind::Tool { state, metadata, .. } = &mut part.kind else { continue };
            let provider = metadata.as_ref().and_then(|m| m.get("providerExecuted")).is_some();
            let unsettled = match state {
                ToolState::Pending { .. } => true,
                ToolState::Running { .. } => provider,
                _ => false,
            };
            if unsettled {
                let start = match state {
                    ToolState::Running { time, .. } => time.start,
                    _ => now_ms(),
                };
                *state = ToolState::Error {
                    input: state.input().clone(),
                    error: reason.to_owned(),
                    metadata: None,
                    time: ToolEndTime { start, end: now_ms(), compacted: None },
                };
                out.push(part.clone());
            }
        }
        out
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

/// The settled form of a running tool part.
pub(crate) fn settled_part(mut part: Part, call: &ToolInvocation, result: ToolResult) -> Part {
    let start = match &part.kind {
        PartKind::Tool { state: ToolState::Running { time, .. }, .. } => time.start,
        _ => now_ms(),
    };
    let time = ToolEndTime { start, end: now_ms(), compacted: None };
    let mut metadata = result.metadata;
    if let Some(path) = &result.managed_path {
        metadata.insert("outputPath".into(), Value::String(path.display().to_string()));
    }
    let state = match result.status {
        ToolStatus::Completed => ToolState::Completed {
            input: call.input.clone(),
            output: result.output,
            title: result.title.unwrap_or_default(),
            metadata: Value::Object(metadata),
            time,
            attachments: None,
        },
        ToolStatus::Error | ToolStatus::Declined => ToolState::Error {
            input: call.input.clone(),
            error: result.output,
            metadata: Some(Value::Object(metadata)),
            time,
        },
        ToolStatus::Interrupted => ToolState::Error {
            input: call.input.clone(),
            error: opencode_session_store::INTERRUPTED_TOOL_ERROR.to_owned(),
            metadata: None,
            time,
        },
    };
    if let PartKind::Tool { state: slot, .. } = &mut part.kind {
        *slot = state;
    }
    part
}

/// The prompt of an admitted input.
fn decode_prompt(prompt: &Value) -> opencode_session_store::Result<StoredPrompt> {
    serde_json::from_value(prompt.clone()).map_err(|source| StoreError::Decode { what: "admitted prompt", source })
}

pub(crate) fn new_part(session_id: &str, message_id: &str, kind: PartKind) -> Part {
    Part { id: id::ascending(IdKind::Part), session_id: session_id.to_owned(), message_id: message_id.to_owned(), kind }
}

fn tokens(usage: &Usage) -> Tokens {
    Tokens {
        total: Some(usage.total_tokens.max(usage.input_tokens + usage.output_tokens)),
        input: usage.non_cached_input_tokens,
        output: usage.visible_output_tokens(),
        reasoning: usage.reasoning_tokens,
        cache: CacheTokens { read: usage.cache_read_input_tokens, write: usage.cache_write_input_tokens },
    }
}

fn finish_name(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Error => "error",
        FinishReason::Unknown => "unknown",
    }
}

pub(crate) fn aborted(message: &str) -> MessageError {
    MessageError { name: "MessageAbortedError".into(), data: json!({"message": message}) }
}

fn api_error(error: &LlmError) -> MessageError {
    MessageError {
        name: "APIError".into(),
        data: json!({
            "message": error.message,
            "statusCode": error.status,
            "isRetryable": error.retryable,
            "kind": error.kind,
        }),
    }
}

pub(crate) fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}
