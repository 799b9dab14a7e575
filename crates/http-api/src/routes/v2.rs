//! The V2 prompt surface the runtime is built on: admit with `delivery: steer|queue`, interrupt, and the
//! projected context. (`/api/session/{id}/event` is in [`super::sse`].)

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use opencode_session_store::Delivery;
use opencode_session_store::MessageWithParts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use super::Op;
use super::session::check_id;
use super::session::session;
use crate::driver::AgentPartInput;
use crate::driver::FilePartInput;
use crate::driver::PartInput;
use crate::driver::TextPartInput;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::post(
            "/api/session/{sessionID}/prompt",
            "v2.session.prompt",
            "Admit a prompt durably (steer or queue)",
            prompt,
        )
        .body::<V2PromptBody>()
        .returns_named("{data: SessionInputAdmitted}"),
        Op::post("/api/session/{sessionID}/interrupt", "v2.session.interrupt", "Interrupt the active drain", interrupt),
        Op::post("/api/session/{sessionID}/compact", "v2.session.compact", "Compact the session now and wait", compact),
        Op::get(
            "/api/session/{sessionID}/context",
            "v2.session.context",
            "Projected history of the next provider turn",
            context,
        )
        .returns_named("{data: SessionMessage[]}"),
    ]
}

/// `POST /api/session/{id}/prompt` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PromptBody")]
pub(crate) struct V2PromptBody {
    #[serde(default)]
    id: Option<String>,
    prompt: PromptInput,
    #[serde(default)]
    delivery: Option<DeliveryInput>,
    #[serde(default)]
    #[allow(dead_code, reason = "accepted for compatibility; admission always wakes the session")]
    resume: Option<bool>,
}

/// `{text, files?, agents?}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PromptInput {
    text: String,
    #[serde(default)]
    files: Vec<FilePartInput>,
    #[serde(default)]
    agents: Vec<AgentPartInput>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum DeliveryInput {
    Steer,
    Queue,
}

async fn prompt(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<V2PromptBody>,
) -> Result<Json<Value>, ApiError> {
    let found = session(&s, &id).await?;
    if let Some(message) = &body.id {
        check_id(message, "msg", "prompt")?;
    }
    let mut parts = vec![PartInput::Text(TextPartInput { text: body.prompt.text, ..TextPartInput::default() })];
    parts.extend(body.prompt.files.into_iter().map(PartInput::File));
    parts.extend(body.prompt.agents.into_iter().map(PartInput::Agent));
    let request = crate::driver::PromptBody { message_id: body.id, parts, ..Default::default() };
    // Steer is the default: promoted at the next safe boundary, even inside a running tool loop.
    let delivery = match body.delivery {
        Some(DeliveryInput::Steer) | None => Delivery::Steer,
        Some(DeliveryInput::Queue) => Delivery::Queue,
    };
    let admitted = s.inner.driver.prompt_async(found, request, delivery).await?;
    Ok(Json(json!({ "data": admitted })))
}

async fn interrupt(State(s): State<AppState>, P(id): P<String>) -> Result<StatusCode, ApiError> {
    session(&s, &id).await?;
    s.inner.driver.interrupt(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn compact(State(s): State<AppState>, P(id): P<String>) -> Result<StatusCode, ApiError> {
    session(&s, &id).await?;
    s.inner.driver.compact(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn context(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Value>, ApiError> {
    session(&s, &id).await?;
    let page = s.read(move |r| r.history(&id, None, usize::MAX / 2)).await?;
    // Projected history includes the epoch's Mid-Conversation System Messages: it is what the model sees.
    let data: Vec<MessageWithParts> = page.messages;
    Ok(Json(json!({ "data": data })))
}
