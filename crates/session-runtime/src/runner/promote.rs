//! Promotion at a Safe Provider-Turn Boundary: admitted inputs become user messages (after the
//! plugins' `chat.message`), with the subtasks they carry.

use std::collections::HashMap;
use std::sync::Arc;

use opencode_session_store::Delivery;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_session_store::StoreError;
use opencode_session_store::UserMessage;
use opencode_tool_registry::Agent;
use serde_json::Value;

use crate::history::StoredPrompt;
use crate::hooks::TurnInfo;
use crate::records::new_part;
use crate::store::blocking;

use super::*;

impl Runner {
    /// Promotes admitted input at this boundary; returns how many prompts became history and the
    /// subtasks they carry, whose running `task` parts are written in the same transaction (after
    /// every promoted prompt, so that prompts promoted together still share one reply).
    pub(super) async fn promote(
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
    pub(super) async fn chat_messages(
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
}

/// The prompt of an admitted input.
fn decode_prompt(prompt: &Value) -> opencode_session_store::Result<StoredPrompt> {
    serde_json::from_value(prompt.clone()).map_err(|source| StoreError::Decode { what: "admitted prompt", source })
}
