//! [`EchoDriver`]: a complete [`SessionDriver`] without a model. Each prompt is admitted and promoted
//! through the store exactly as the runtime does it, and answered by an assistant message whose text
//! echoes the prompt, with the live `session.status` / `message.part.delta` / `session.idle` events a
//! real turn publishes. Tests, benchmarks and SDK smoke runs use it; it is also the reference for how a
//! runtime-backed driver fills the seam.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use opencode_session_store::AssistantMessage;
use opencode_session_store::CreatedTime;
use opencode_session_store::Delivery;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::SessionInput;
use opencode_session_store::Store;
use opencode_session_store::Tokens;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use serde_json::json;
use tokio::sync::broadcast;

use crate::driver::BoxFuture;
use crate::driver::DriverError;
use crate::driver::DriverEvent;
use crate::driver::LiveEvent;
use crate::driver::PromptBody;
use crate::driver::SessionDriver;
use crate::driver::SessionStatus;
use crate::driver::part_from_input;

/// Answers every prompt with `echo: <prompt text>`.
pub struct EchoDriver {
    store: Arc<Store>,
    live: broadcast::Sender<Arc<DriverEvent>>,
    busy: Mutex<BTreeMap<String, SessionStatus>>,
}

impl EchoDriver {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store, live: broadcast::channel(1024).0, busy: Mutex::new(BTreeMap::new()) }
    }

    fn publish(&self, kind: &str, properties: serde_json::Value) {
        // No receiver is fine: nobody is listening.
        let _nobody = self.live.send(Arc::new(DriverEvent::Live(LiveEvent { kind: kind.to_owned(), properties })));
    }

    fn set_status(&self, session_id: &str, status: SessionStatus) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        if status == SessionStatus::Idle {
            busy.remove(session_id);
        } else {
            busy.insert(session_id.to_owned(), status.clone());
        }
        drop(busy);
        self.publish("session.status", json!({ "sessionID": session_id, "status": status }));
        if status == SessionStatus::Idle {
            self.publish("session.idle", json!({ "sessionID": session_id }));
        }
    }

    /// Admits, promotes and answers one prompt; returns the admission and the reply (none for `noReply`).
    async fn run(
        &self,
        session: Session,
        request: PromptBody,
        delivery: Delivery,
    ) -> Result<(SessionInput, Option<MessageWithParts>), DriverError> {
        let store = Arc::clone(&self.store);
        let session_id = session.id.clone();
        self.set_status(&session_id, SessionStatus::Busy);
        let result = tokio::task::spawn_blocking(move || answer(&store, &session, &request, delivery))
            .await
            .map_err(|err| DriverError::Failed(format!("echo turn stopped: {err}")))
            .and_then(|r| r);
        if let Ok((_, Some(reply))) = &result {
            for part in &reply.parts {
                if let PartKind::Text { text, .. } = &part.kind {
                    self.publish(
                        "message.part.delta",
                        json!({ "sessionID": part.session_id, "messageID": part.message_id, "partID": part.id,
                                "field": "text", "delta": text }),
                    );
                }
            }
        }
        self.set_status(&session_id, SessionStatus::Idle);
        result
    }
}

impl SessionDriver for EchoDriver {
    fn prompt(&self, session: Session, request: PromptBody) -> BoxFuture<'_, Result<MessageWithParts, DriverError>> {
        Box::pin(async move {
            match self.run(session, request, Delivery::Queue).await? {
                (_, Some(reply)) => Ok(reply),
                (input, None) => Err(DriverError::Invalid(format!("prompt {} asked for no reply", input.id))),
            }
        })
    }

    fn prompt_async(
        &self,
        session: Session,
        request: PromptBody,
        delivery: Delivery,
    ) -> BoxFuture<'_, Result<SessionInput, DriverError>> {
        Box::pin(async move { self.run(session, request, delivery).await.map(|(input, _)| input) })
    }

    fn interrupt(&self, _session_id: String) -> BoxFuture<'_, Result<(), DriverError>> {
        // Echo turns finish before the call that started them returns: there is never a drain to stop.
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<DriverEvent>>> {
        Some(self.live.subscribe())
    }

    fn statuses(&self) -> BTreeMap<String, SessionStatus> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn answer(
    store: &Store,
    session: &Session,
    request: &PromptBody,
    delivery: Delivery,
) -> Result<(SessionInput, Option<MessageWithParts>), DriverError> {
    let prompt = serde_json::to_value(request).map_err(|err| DriverError::Invalid(err.to_string()))?;
    let model = request
        .model
        .as_ref()
        .map(|m| (m.provider_id.clone(), m.model_id.clone()))
        .or_else(|| session.model.as_ref().map(|m| (m.provider_id.clone(), m.id.clone())))
        .unwrap_or_else(|| ("echo".to_owned(), "echo".to_owned()));
    let agent = request.agent.clone().or_else(|| session.agent.clone()).unwrap_or_else(|| "build".to_owned());
    let written = store.write(|tx| {
        let admission = tx.admit_input(&session.id, request.message_id.clone(), prompt, delivery)?;
        if admission.retried {
            return Ok((admission.input, None));
        }
        let input = admission.input;
        let mut parts = Vec::new();
        for part in &request.parts {
            parts.push(
                part_from_input(part, &session.id, &input.id)
                    .map_err(|err| opencode_session_store::StoreError::Invalid(err.to_string()))?,
            );
        }
        let user = MessageInfo::User(UserMessage {
            id: input.id.clone(),
            session_id: session.id.clone(),
            time: CreatedTime { created: tx.now() },
            format: request.format.clone(),
            summary: None,
            agent: agent.clone(),
            model: ModelRef {
                provider_id: model.0.clone(),
                model_id: model.1.clone(),
                variant: request.variant.clone(),
            },
            system: request.system.clone(),
            tools: request.tools.clone(),
        });
        tx.promote_input(&input.id, user, parts)?;
        if request.no_reply == Some(true) {
            return Ok((input, None));
        }
        let reply = reply_message(session, &input.id, &agent, &model, tx.now(), &request.joined_text());
        tx.append_message(&reply.info)?;
        for part in &reply.parts {
            tx.upsert_part(part)?;
        }
        Ok((input, Some(reply)))
    });
    written.map_err(|err| match err {
        opencode_session_store::StoreError::NotFound { .. } => DriverError::NotFound(err.to_string()),
        opencode_session_store::StoreError::Invalid(_) => DriverError::Invalid(err.to_string()),
        opencode_session_store::StoreError::Conflict(_) => DriverError::Busy(err.to_string()),
        other => DriverError::Failed(other.to_string()),
    })
}

fn reply_message(
    session: &Session,
    parent: &str,
    agent: &str,
    model: &(String, String),
    now: i64,
    text: &str,
) -> MessageWithParts {
    let model = ModelRef { provider_id: model.0.clone(), model_id: model.1.clone(), variant: None };
    let mut answer = AssistantMessage::new(&session.id, parent, agent, &model, &session.directory, now);
    answer.time.completed = Some(now);
    answer.finish = Some("stop".to_owned());
    let id = answer.id.clone();
    let info = MessageInfo::Assistant(answer);
    let part =
        |kind| Part { id: id::ascending(IdKind::Part), session_id: session.id.clone(), message_id: id.clone(), kind };
    let parts = vec![
        part(PartKind::StepStart { snapshot: None }),
        part(PartKind::Text {
            text: format!("echo: {text}"),
            synthetic: None,
            ignored: None,
            time: None,
            metadata: None,
        }),
        part(PartKind::StepFinish { reason: "stop".to_owned(), snapshot: None, cost: 0.0, tokens: Tokens::default() }),
    ];
    MessageWithParts { info, parts, seq: 0 }
}
