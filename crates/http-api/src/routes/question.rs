//! `/question...`: the `question` tool's pending requests over HTTP. Listing shows the instance's
//! questions; a reply carries one list of chosen labels per question, a rejection dismisses it (the
//! tool call ends and the turn stops, as in OpenCode).

use axum::Json;
use axum::extract::State;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Op;
use crate::driver::QuestionRequest;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/question", "question.list", "Questions waiting for the user, oldest first", list_route)
            .returns::<Vec<QuestionRequest>>(),
        Op::post("/question/{requestID}/reply", "question.reply", "Answer a question", reply_route)
            .body::<QuestionReplyBody>()
            .returns_bool(),
        Op::post("/question/{requestID}/reject", "question.reject", "Dismiss a question", reject_route).returns_bool(),
    ]
}

/// `POST /question/{requestID}/reply` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct QuestionReplyBody {
    /// One answer per question, in order; each answer is the list of chosen labels.
    answers: Vec<Vec<String>>,
}

async fn list_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Vec<QuestionRequest>>, ApiError> {
    let questions = s.inner.driver.questions();
    super::permission::own_sessions(&s, &i, questions, |question| &question.session_id).await.map(Json)
}

async fn reply_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<QuestionReplyBody>,
) -> Result<Json<bool>, ApiError> {
    s.inner.driver.answer_question(id, Some(body.answers)).await?;
    Ok(Json(true))
}

async fn reject_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<bool>, ApiError> {
    s.inner.driver.answer_question(id, None).await?;
    Ok(Json(true))
}
