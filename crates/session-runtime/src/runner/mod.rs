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

use std::sync::Arc;
use std::time::Duration;

use opencode_catalog::ResolvedModel;
use opencode_catalog::models_dev::ModelInfo;
use opencode_llm::LlmError;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::SystemPart;
use opencode_llm::ToolChoice;
use opencode_session_store::Delivery;
use opencode_session_store::EventKind;
use opencode_session_store::MessageInfo;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::Session;
use opencode_session_store::StoreError;
use opencode_system_context::EpochError;
use opencode_system_context::EpochPreparation;
use opencode_system_context::Prepared;
use opencode_system_context::prepare_epoch;
use opencode_tool_registry::Agent;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::compaction;
use crate::coordinator::DrainOutcome;
use crate::epoch::SessionEpochs;
use crate::error::Result;
use crate::error::RuntimeError;
use crate::events::DeltaKind;
use crate::events::RuntimeEvent;
use crate::events::SessionStatus;
use crate::history;
use crate::hooks::TurnInfo;
use crate::location::Location;
use crate::records::aborted;
use crate::records::api_error;
use crate::records::now_ms;
use crate::runtime::Inner;
use crate::store::blocking;

mod assistant;
mod compact;
mod promote;
mod stream;

use compact::CompactionReason;

/// The first system part when the agent has no prompt of its own.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are opencode, an interactive agent that helps users with software \
engineering tasks. Use the tools available to you to act in the user's project: read before you edit, keep \
changes minimal and focused, and verify your work. Be concise; answer in plain text unless asked otherwise.";

/// Appended as the last message when the agent's step allowance is used up.
pub const MAX_STEPS_PROMPT: &str = "CRITICAL - MAXIMUM STEPS REACHED\n\nThe maximum number of steps allowed for \
this task has been reached. Tools are disabled until the next user input. Respond with text ONLY: summarise \
what was done, what remains, and what you recommend next.";

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
                blocking(move || store.write(|tx| tx.append_event(&session_id, EventKind::SessionError, data))).await
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
            let compaction = self.inner.settings_in(location)?.compaction();
            if compaction.auto
                && !compacted
                && !managed
                && compaction.overflows(estimate, model.info.limit.context, output)
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

    /// Waits `wait` before runtime retry `attempt` (interruptible), recording it durably.
    async fn retry_wait(&self, attempt: u32, wait: Duration, error: &LlmError) -> Flow<()> {
        let next = now_ms() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        let store = Arc::clone(&self.inner.store);
        let session = self.session_id.clone();
        let data = json!({"sessionID": session, "attempt": attempt, "error": error.message, "next": next});
        blocking(move || store.write(|tx| tx.append_event(&session, EventKind::Retried, data))).await?;
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
