//! `PATCH|DELETE /session/{sessionID}/message/{messageID}/part/{partID}`: edit or remove one part of
//! a stored message (OpenCode's `part.update` / `part.delete`).
//!
//! Both refuse while the session is busy (409): the runner owns history until it is idle. The check,
//! the lookup and the write happen in one store transaction, so a part is never written into a
//! message it does not belong to; the store enforces the tool state machine (a settled call never
//! goes back, 409) and commits `message.part.updated` / `message.part.removed`, which reach `/event`
//! like every committed event. A PATCH replaces an existing part only (404 otherwise), and the body's
//! ids must be those of the path (400), as in OpenCode.

use axum::Json;
use axum::extract::State;
use opencode_session_store::MessageInfo;
use opencode_session_store::Part;
use opencode_session_store::StoreError;
use opencode_session_store::Tx;

use super::Op;
use super::session;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::patch(
            "/session/{sessionID}/message/{messageID}/part/{partID}",
            "part.update",
            "Replace a part of a message (not while the session is busy)",
            update_route,
        )
        .body::<PartBody>()
        .returns_named("Part"),
        Op::delete(
            "/session/{sessionID}/message/{messageID}/part/{partID}",
            "part.delete",
            "Remove a part of a message (not while the session is busy)",
            delete_route,
        )
        .returns_bool(),
    ]
}

/// The request body: an OpenCode `Part` (`id`, `sessionID`, `messageID`, `type` and its fields).
#[derive(schemars::JsonSchema)]
#[allow(dead_code, reason = "schema only: the body is decoded as the store's Part")]
pub(crate) struct PartBody {
    id: String,
    #[serde(rename = "sessionID")]
    session_id: String,
    #[serde(rename = "messageID")]
    message_id: String,
    /// `text`, `reasoning`, `tool`, `file`, `snapshot`, `patch`, `agent`, `compaction`, `subtask`,
    /// `retry`, `step-start` or `step-finish`, with that type's fields.
    #[serde(rename = "type")]
    kind: String,
}

type PartPath = (String, String, String);

async fn update_route(
    State(s): State<AppState>,
    P((session_id, message_id, part_id)): P<PartPath>,
    JsonBody(part): JsonBody<Part>,
) -> Result<Json<Part>, ApiError> {
    check_ids(&message_id, &part_id)?;
    if part.id != part_id || part.message_id != message_id || part.session_id != session_id {
        return Err(ApiError::bad(format!(
            "the part's ids ({}, {}, {}) must be those of the path ({session_id}, {message_id}, {part_id})",
            part.session_id, part.message_id, part.id
        )));
    }
    session::session(&s, &session_id).await?;
    let _held = session::hold(&s, &session_id)?;
    s.write(move |tx| {
        existing(tx, &session_id, &message_id, &part_id)?;
        tx.upsert_part(&part)?;
        Ok(part)
    })
    .await
    .map(Json)
}

async fn delete_route(
    State(s): State<AppState>,
    P((session_id, message_id, part_id)): P<PartPath>,
) -> Result<Json<bool>, ApiError> {
    check_ids(&message_id, &part_id)?;
    session::session(&s, &session_id).await?;
    let _held = session::hold(&s, &session_id)?;
    s.write(move |tx| {
        existing(tx, &session_id, &message_id, &part_id)?;
        tx.remove_part(&part_id)
    })
    .await?;
    Ok(Json(true))
}

fn check_ids(message_id: &str, part_id: &str) -> Result<(), ApiError> {
    session::check_id(message_id, "msg", "message")?;
    session::check_id(part_id, "prt", "part")
}

/// The stored part, if it is a part of that message of that session (system messages are not
/// served, so their parts are not found either).
fn existing(tx: &Tx<'_>, session_id: &str, message_id: &str, part_id: &str) -> Result<Part, StoreError> {
    let message = tx
        .reader()
        .message(message_id)?
        .filter(|m| m.info.session_id() == session_id && !matches!(m.info, MessageInfo::System(_)))
        .ok_or_else(|| StoreError::NotFound { kind: "message", id: message_id.to_owned() })?;
    message
        .parts
        .into_iter()
        .find(|part| part.id == part_id)
        .ok_or_else(|| StoreError::NotFound { kind: "part", id: part_id.to_owned() })
}
