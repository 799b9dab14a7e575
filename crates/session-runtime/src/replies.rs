//! Answers a front end gives without a model call (a plugin command's reply, such as Magic
//! Context's `/ctx-status`): the command as a user message and the answer as a finished assistant
//! message, written together while the session is held, so they never interleave with a turn.

use std::sync::Arc;

use opencode_session_store::AssistantMessage;
use opencode_session_store::CreatedTime;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::ModelRef;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;

use crate::error::Result;
use crate::records::new_part;
use crate::records::now_ms;
use crate::runtime::Inner;
use crate::store::blocking;

/// Writes `asked` and its `answer` into `session`; the answer's message with its part.
pub(crate) async fn record(inner: &Inner, session: Session, asked: String, answer: String) -> Result<MessageWithParts> {
    let agent = inner.session_agent(&session)?;
    let model = inner.settings(&session.directory)?.model_for(inner, &session, &agent)?;
    let (provider_id, model_id) = model.map(|model| (model.provider, model.model)).unwrap_or_default();
    let model = ModelRef { provider_id, model_id, variant: None };
    let now = now_ms();
    let user = UserMessage {
        id: id::ascending(IdKind::Message),
        session_id: session.id.clone(),
        time: CreatedTime { created: now },
        format: None,
        summary: None,
        agent: agent.name.clone(),
        model: model.clone(),
        system: None,
        tools: None,
    };
    let mut reply = AssistantMessage::new(&session.id, &user.id, &agent.name, &model, &session.directory, now);
    reply.time.completed = Some(now);
    reply.finish = Some("stop".to_owned());
    let text = |text: String| PartKind::Text { text, synthetic: None, ignored: None, time: None, metadata: None };
    let asked = new_part(&session.id, &user.id, text(asked));
    let answer = new_part(&session.id, &reply.id, text(answer));
    let store = Arc::clone(&inner.store);
    blocking(move || {
        store.write(|tx| {
            tx.append_message(&MessageInfo::User(user))?;
            tx.upsert_part(&asked)?;
            tx.append_message(&MessageInfo::Assistant(reply.clone()))?;
            tx.upsert_part(&answer)?;
            let written = tx.reader().message(&reply.id)?;
            written
                .ok_or_else(|| opencode_session_store::StoreError::NotFound { kind: "message", id: reply.id.clone() })
        })
    })
    .await
}
