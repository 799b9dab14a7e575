//! Compaction turns: an anchored summary request without tools, then a checkpoint (summary
//! messages and a new Context Epoch) written in one transaction.

use std::sync::Arc;

use futures_util::StreamExt;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::Usage;
use opencode_session_store::AssistantMessage;
use opencode_session_store::EventKind;
use opencode_session_store::MessageInfo;
use opencode_session_store::ModelRef;
use opencode_session_store::PartKind;
use opencode_session_store::StoreError;
use opencode_session_store::Tokens;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use opencode_system_context::Replacement;
use opencode_system_context::Snapshot;
use opencode_tool_registry::Agent;
use serde_json::json;
use tracing::Instrument;

use crate::compaction;
use crate::epoch::new_epoch;
use crate::error::RuntimeError;
use crate::events::DeltaKind;
use crate::events::RuntimeEvent;
use crate::history;
use crate::location::Location;
use crate::records::new_part;
use crate::records::now_ms;
use crate::records::tokens;
use crate::store::blocking;

use super::*;

impl Runner {
    /// Compacts the session: a summary turn without tools, then one transaction writing the
    /// checkpoint and starting a new Context Epoch from it. `false` when there is nothing to compact.
    pub(super) async fn compact(
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
        let keep = self.inner.settings_in(location)?.compaction().keep_tokens;
        let mut selection = compaction::select(&history, keep);
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
        blocking(move || store.write(|tx| tx.append_event(&session, EventKind::CompactionStarted, data))).await?;
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
    pub(super) async fn summarise(&self, request: &LlmRequest, model: &TurnModel) -> Flow<(String, Usage)> {
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
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CompactionReason {
    Auto,
    Overflow,
    Manual,
}

impl CompactionReason {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Overflow => "overflow",
            Self::Manual => "manual",
        }
    }
}

/// What a completed compaction writes, in one transaction.
pub(super) struct Checkpoint {
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
    pub(super) fn write(
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
        let model = ModelRef { variant: None, ..self.model.clone() };
        let mut answer =
            AssistantMessage::new(session, &user_id, "compaction", &model, &self.directory, self.started.min(now));
        answer.time.completed = Some(now);
        answer.summary = Some(true);
        answer.cost = self.cost;
        answer.tokens = self.tokens;
        answer.finish = Some("stop".into());
        let summary_id = answer.id.clone();
        tx.append_message(&MessageInfo::Assistant(answer))?;
        tx.upsert_part(&new_part(
            session,
            &summary_id,
            PartKind::Text { text: self.summary.clone(), synthetic: None, ignored: None, time: None, metadata: None },
        ))?;
        tx.append_event(
            session,
            EventKind::CompactionEnded,
            json!({"sessionID": session, "messageID": user_id, "text": self.summary}),
        )?;
        tx.start_epoch(session, new_epoch(generation, self.agent, Some(user_id)))?;
        Ok(())
    }
}

/// The system prompt of the summary request.
const COMPACTION_SYSTEM_PROMPT: &str = "You summarise coding-agent conversations so that work can continue \
from the summary alone. Follow the requested format exactly.";
