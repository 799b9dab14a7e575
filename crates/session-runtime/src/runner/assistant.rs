//! The assistant message of a provider turn: begun before the stream (with its step-start part and
//! work-tree snapshot), finished with usage, cost and finish reason, or discarded before a retry.

use std::sync::Arc;

use opencode_session_store::AssistantMessage;
use opencode_session_store::MessageError;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_tool_registry::Agent;

use crate::fold::Streamed;
use crate::records::finish_name;
use crate::records::new_part;
use crate::records::now_ms;
use crate::records::tokens;
use crate::snapshots;
use crate::store::blocking;

use super::*;

impl Runner {
    /// Writes a new assistant message for this turn (with its step-start part, which records the
    /// work tree's snapshot before the step).
    pub(super) async fn begin_assistant(
        &self,
        agent: &Agent,
        model: &TurnModel,
        parent: Option<String>,
    ) -> Flow<(AssistantMessage, StepSnapshot)> {
        let parent = parent.unwrap_or_default();
        let session = self.session().await?;
        let snapshots = self.inner.snapshots(&session);
        let before = snapshots::track(snapshots.as_ref()).await;
        let model = ModelRef {
            provider_id: model.resolved.provider.clone(),
            model_id: model.resolved.model.clone(),
            variant: None,
        };
        let message =
            AssistantMessage::new(&self.session_id, &parent, &agent.name, &model, &session.directory, now_ms());
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
    pub(super) async fn finish_assistant(
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
    pub(super) async fn discard(&self, message_id: &str) -> Flow<()> {
        let store = Arc::clone(&self.inner.store);
        let id = message_id.to_owned();
        blocking(move || store.write(|tx| tx.remove_message(&id))).await?;
        Ok(())
    }
}
