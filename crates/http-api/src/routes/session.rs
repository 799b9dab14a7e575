//! `/session...`: OpenCode 1.x session CRUD, messages, prompts, fork, revert, abort and permission
//! replies. The handler bodies are plain functions so that the project-scoped routes reuse them.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use opencode_session_store::Delivery;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::NewSession;
use opencode_session_store::PermissionReply;
use opencode_session_store::PermissionRuleEntry;
use opencode_session_store::Revert;
use opencode_session_store::Session;
use opencode_session_store::SessionModel;
use opencode_session_store::SessionQuery;
use opencode_session_store::Todo;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use super::Op;
use crate::driver::PromptBody;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::OptionalJson;
use crate::extract::P;
use crate::extract::Q;
use crate::instance::Instance;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get(
            "/session",
            "session.list",
            "List sessions of the instance's project, newest activity first",
            list_route,
        )
        .query(&["scope", "path", "roots", "start", "search", "limit"])
        .returns_list("Session"),
        Op::post("/session", "session.create", "Create a session in the instance directory", create_route)
            .body::<CreateSession>()
            .returns_named("Session"),
        Op::get("/session/status", "session.status", "Sessions that are not idle", status_route)
            .returns::<std::collections::BTreeMap<String, crate::driver::SessionStatus>>(),
        Op::get("/session/{sessionID}", "session.get", "Get a session", get_route).returns_named("Session"),
        Op::patch(
            "/session/{sessionID}",
            "session.update",
            "Update title, metadata, permission or archive time",
            update_route,
        )
        .body::<UpdateSession>()
        .returns_named("Session"),
        Op::delete("/session/{sessionID}", "session.delete", "Delete a session and its children", delete_route)
            .returns_bool(),
        Op::get("/session/{sessionID}/children", "session.children", "Direct children of a session", children_route)
            .returns_list("Session"),
        Op::get("/session/{sessionID}/todo", "session.todo", "The session's todo list", todo_route)
            .returns_list("Todo"),
        Op::get(
            "/session/{sessionID}/message",
            "session.messages",
            "Messages as {info, parts}, oldest first",
            messages_route,
        )
        .query(&["limit", "before"])
        .returns_list("MessageWithParts"),
        Op::post(
            "/session/{sessionID}/message",
            "session.prompt",
            "Prompt and wait for the assistant reply",
            prompt_route,
        )
        .body::<PromptBody>()
        .returns_named("MessageWithParts"),
        Op::get(
            "/session/{sessionID}/message/{messageID}",
            "session.message",
            "One message as {info, parts}",
            message_route,
        )
        .returns_named("MessageWithParts"),
        Op::delete(
            "/session/{sessionID}/message/{messageID}",
            "session.deleteMessage",
            "Delete a message",
            delete_message_route,
        )
        .returns_bool(),
        Op::post(
            "/session/{sessionID}/prompt_async",
            "session.prompt_async",
            "Admit a prompt and return at once",
            prompt_async_route,
        )
        .body::<PromptBody>(),
        Op::post("/session/{sessionID}/abort", "session.abort", "Interrupt the active drain", abort_route)
            .returns_bool(),
        Op::post(
            "/session/{sessionID}/summarize",
            "session.summarize",
            "Compact the session now (with the session's model) and wait",
            summarize_route,
        )
        .body::<SummarizeBody>()
        .returns_bool(),
        Op::post("/session/{sessionID}/fork", "session.fork", "Fork a session (before messageID)", fork_route)
            .body::<ForkBody>()
            .returns_named("Session"),
        Op::post(
            "/session/{sessionID}/revert",
            "session.revert",
            "Stage a revert from a message (or part)",
            revert_route,
        )
        .body::<RevertBody>()
        .returns_named("Session"),
        Op::post("/session/{sessionID}/unrevert", "session.unrevert", "Undo a staged revert", unrevert_route)
            .returns_named("Session"),
        Op::post(
            "/session/{sessionID}/permissions/{permissionID}",
            "permission.respond",
            "Answer a permission request",
            respond_route,
        )
        .body::<RespondBody>()
        .returns_bool(),
        Op::post("/permission/{requestID}/reply", "permission.reply", "Answer a permission request", reply_route)
            .body::<ReplyBody>()
            .returns_bool(),
    ]
}

/// `POST /session` body.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSession {
    #[serde(rename = "parentID", default)]
    parent_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    model: Option<CreateModel>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<RuleSchema>>")]
    permission: Option<Vec<PermissionRuleEntry>>,
    #[serde(rename = "workspaceID", default)]
    workspace_id: Option<String>,
    /// Seed API: an explicit session id (`ses_…`).
    #[serde(default)]
    id: Option<String>,
    /// Seed API: the working directory (defaults to the instance directory).
    #[serde(default)]
    directory: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateModel {
    id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(default)]
    variant: Option<String>,
}

/// One `{permission, pattern, action}` rule.
#[derive(JsonSchema)]
#[allow(dead_code, reason = "schema only")]
struct RuleSchema {
    permission: String,
    pattern: String,
    action: ActionSchema,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code, reason = "schema only")]
enum ActionSchema {
    Allow,
    Deny,
    Ask,
}

/// `PATCH /session/{id}` body.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateSession {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<RuleSchema>>")]
    permission: Option<Vec<PermissionRuleEntry>>,
    #[serde(default)]
    time: Option<UpdateTime>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateTime {
    #[serde(default)]
    archived: Option<f64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevertBody {
    #[serde(rename = "messageID")]
    message_id: String,
    #[serde(rename = "partID", default)]
    part_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RespondBody {
    response: ReplySchema,
}

impl RespondBody {
    pub(crate) fn reply(&self) -> PermissionReply {
        self.response.into()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyBody {
    reply: ReplySchema,
    /// With `reject`: why, for the model to act on (the turn then goes on).
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ReplySchema {
    Once,
    Always,
    Reject,
}

impl From<ReplySchema> for PermissionReply {
    fn from(reply: ReplySchema) -> Self {
        match reply {
            ReplySchema::Once => Self::Once,
            ReplySchema::Always => Self::Always,
            ReplySchema::Reject => Self::Reject,
        }
    }
}

/// `GET /session` query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    roots: Option<String>,
    #[serde(default)]
    start: Option<f64>,
    #[serde(default)]
    search: Option<String>,
    #[serde(default)]
    limit: Option<f64>,
    #[serde(default)]
    archived: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessagesQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    before: Option<String>,
}

// ---- route adapters (extractors -> plain functions) ----

async fn list_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    Q(q): Q<ListQuery>,
) -> Result<Json<Vec<Session>>, ApiError> {
    list(&s, &i, &i.project.id, q).await.map(Json)
}

async fn create_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    OptionalJson(body): OptionalJson<CreateSession>,
) -> Result<Json<Session>, ApiError> {
    create(&s, &i, body).await.map(Json)
}

async fn status_route(
    State(s): State<AppState>,
) -> Json<std::collections::BTreeMap<String, crate::driver::SessionStatus>> {
    Json(s.inner.driver.statuses())
}

async fn get_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Session>, ApiError> {
    session(&s, &id).await.map(Json)
}

async fn update_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<UpdateSession>,
) -> Result<Json<Session>, ApiError> {
    update(&s, &id, body).await.map(Json)
}

async fn delete_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<bool>, ApiError> {
    delete(&s, &id).await.map(Json)
}

async fn children_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Vec<Session>>, ApiError> {
    session(&s, &id).await?;
    s.read(move |r| r.children(&id)).await.map(Json)
}

async fn todo_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Vec<Todo>>, ApiError> {
    session(&s, &id).await?;
    s.read(move |r| r.todos(&id)).await.map(Json)
}

async fn messages_route(
    State(s): State<AppState>,
    P(id): P<String>,
    Q(q): Q<MessagesQuery>,
) -> Result<Json<Vec<MessageWithParts>>, ApiError> {
    messages(&s, &id, q).await.map(Json)
}

async fn prompt_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<PromptBody>,
) -> Result<Json<MessageWithParts>, ApiError> {
    prompt(&s, &id, body).await.map(Json)
}

async fn message_route(
    State(s): State<AppState>,
    P((id, message)): P<(String, String)>,
) -> Result<Json<MessageWithParts>, ApiError> {
    one_message(&s, &id, &message).await.map(Json)
}

async fn delete_message_route(
    State(s): State<AppState>,
    P((id, message)): P<(String, String)>,
) -> Result<Json<bool>, ApiError> {
    one_message(&s, &id, &message).await?;
    let _held = hold(&s, &id)?;
    s.write(move |tx| tx.remove_message(&message)).await?;
    Ok(Json(true))
}

async fn prompt_async_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<PromptBody>,
) -> Result<StatusCode, ApiError> {
    let session = session(&s, &id).await?;
    // OpenCode 1.x: a prompt to a busy session joins the running loop at its next step (steer).
    s.inner.driver.prompt_async(session, body, Delivery::Steer).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn abort_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<bool>, ApiError> {
    abort(&s, &id).await.map(Json)
}

/// `POST /session/{id}/summarize` body. The model fields are accepted for compatibility; compaction
/// runs with the session's model.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SummarizeBody {
    #[serde(rename = "providerID", default)]
    #[allow(dead_code, reason = "accepted for compatibility")]
    provider_id: Option<String>,
    #[serde(rename = "modelID", default)]
    #[allow(dead_code, reason = "accepted for compatibility")]
    model_id: Option<String>,
    #[serde(default)]
    #[allow(dead_code, reason = "accepted for compatibility")]
    auto: Option<bool>,
}

async fn summarize_route(
    State(s): State<AppState>,
    P(id): P<String>,
    OptionalJson(_body): OptionalJson<SummarizeBody>,
) -> Result<Json<bool>, ApiError> {
    compact(&s, &id).await.map(Json)
}

pub(crate) async fn compact(s: &AppState, id: &str) -> Result<bool, ApiError> {
    session(s, id).await?;
    s.inner.driver.compact(id.to_owned()).await?;
    Ok(true)
}

async fn fork_route(
    State(s): State<AppState>,
    P(id): P<String>,
    OptionalJson(body): OptionalJson<ForkBody>,
) -> Result<Json<Session>, ApiError> {
    session(&s, &id).await?;
    if let Some(message) = &body.message_id {
        check_id(message, "msg", "message")?;
    }
    s.write(move |tx| tx.fork_session(&id, body.message_id.as_deref())).await.map(Json)
}

async fn revert_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<RevertBody>,
) -> Result<Json<Session>, ApiError> {
    revert(&s, &id, body).await.map(Json)
}

async fn unrevert_route(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Session>, ApiError> {
    unrevert(&s, &id).await.map(Json)
}

async fn respond_route(
    State(s): State<AppState>,
    P((id, permission)): P<(String, String)>,
    JsonBody(body): JsonBody<RespondBody>,
) -> Result<Json<bool>, ApiError> {
    check_id(&id, "ses", "session")?;
    reply_permission(&s, Some(&id), &permission, body.response.into(), None).await.map(Json)
}

async fn reply_route(
    State(s): State<AppState>,
    P(permission): P<String>,
    JsonBody(body): JsonBody<ReplyBody>,
) -> Result<Json<bool>, ApiError> {
    reply_permission(&s, None, &permission, body.reply.into(), body.message).await.map(Json)
}

// ---- behaviour ----

/// Rejects ids without OpenCode's prefix (the original validates `^ses`, `^msg`, `^per` patterns).
pub(crate) fn check_id(id: &str, prefix: &str, what: &str) -> Result<(), ApiError> {
    if id.strip_prefix(prefix).is_some() {
        Ok(())
    } else {
        Err(ApiError::bad(format!("{what} id {id:?} must start with {prefix:?}")))
    }
}

/// The session, or 404.
pub(crate) async fn session(s: &AppState, id: &str) -> Result<Session, ApiError> {
    check_id(id, "ses", "session")?;
    let lookup = id.to_owned();
    s.read(move |r| r.session(&lookup)).await?.ok_or_else(|| ApiError::not_found(format!("session {id} not found")))
}

pub(crate) async fn list(
    s: &AppState,
    instance: &Instance,
    project_id: &str,
    q: ListQuery,
) -> Result<Vec<Session>, ApiError> {
    let limit = match q.limit {
        Some(limit) if !(limit >= 1.0 && limit.is_finite()) => {
            return Err(ApiError::bad("limit must be a positive number"));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked positive and finite")]
        Some(limit) => limit as usize,
        None => usize::MAX / 2,
    };
    let query = SessionQuery {
        project_id: Some(project_id.to_owned()),
        directory: instance.is_global().then(|| instance.directory_str()),
        search: q.search,
        roots_only: parse_bool(q.roots.as_deref(), "roots")?,
        include_archived: parse_bool(q.archived.as_deref(), "archived")?,
        limit,
        cursor: None,
    };
    let start = q.start;
    let page = s.read(move |r| r.list_sessions(&query)).await?;
    Ok(page
        .sessions
        .into_iter()
        .filter(|session| start.is_none_or(|start| session.time.updated as f64 >= start))
        .collect())
}

fn parse_bool(value: Option<&str>, name: &str) -> Result<bool, ApiError> {
    match value {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::bad(format!("{name} must be true or false, not {other:?}"))),
    }
}

pub(crate) async fn create(s: &AppState, instance: &Instance, body: CreateSession) -> Result<Session, ApiError> {
    if let Some(parent) = &body.parent_id {
        check_id(parent, "ses", "parent session")?;
    }
    if body.workspace_id.is_some() {
        return Err(ApiError::bad("workspaceID: workspaces are not supported by this server; omit it"));
    }
    let directory = match body.directory {
        Some(directory) if !std::path::Path::new(&directory).is_absolute() => {
            return Err(ApiError::bad(format!("directory {directory:?} must be an absolute path")));
        }
        Some(directory) => directory,
        None => instance.directory_str(),
    };
    let new = NewSession {
        id: body.id,
        project_id: instance.project.id.clone(),
        directory,
        parent_id: body.parent_id,
        title: body.title,
        agent: body.agent,
        model: body.model.map(|m| SessionModel { id: m.id, provider_id: m.provider_id, variant: m.variant }),
        permission: body.permission,
        ..NewSession::default()
    };
    let metadata = body.metadata;
    let session = s
        .write(move |tx| {
            let session = tx.create_session(new)?;
            match metadata {
                Some(metadata) => tx.update_session(&session.id, |s| s.metadata = Some(Value::Object(metadata))),
                None => Ok(session),
            }
        })
        .await?;
    s.inner.bus.remember(&session.id, &session.directory, &session.project_id);
    Ok(session)
}

async fn update(s: &AppState, id: &str, body: UpdateSession) -> Result<Session, ApiError> {
    session(s, id).await?;
    let id = id.to_owned();
    s.write(move |tx| {
        tx.update_session(&id, |session| {
            if let Some(title) = body.title {
                session.title = title;
            }
            if let Some(metadata) = body.metadata {
                session.metadata = Some(Value::Object(metadata));
            }
            if let Some(permission) = body.permission {
                session.permission = Some(permission);
            }
            if let Some(time) = body.time {
                #[allow(clippy::cast_possible_truncation, reason = "millisecond timestamps fit in i64")]
                {
                    session.time.archived = time.archived.map(|t| t as i64);
                }
            }
        })
    })
    .await
}

pub(crate) async fn delete(s: &AppState, id: &str) -> Result<bool, ApiError> {
    let removed = session(s, id).await?;
    let target = id.to_owned();
    s.write(move |tx| tx.remove_session(&target)).await?;
    s.inner.bus.publish(
        Some(removed.directory.clone()),
        "session.deleted",
        json!({ "sessionID": removed.id, "info": removed }),
    );
    Ok(true)
}

pub(crate) async fn messages(s: &AppState, id: &str, q: MessagesQuery) -> Result<Vec<MessageWithParts>, ApiError> {
    session(s, id).await?;
    let id = id.to_owned();
    let page = s
        .read(move |r| {
            let before = match &q.before {
                Some(message) => Some(
                    r.message(message)?
                        .filter(|m| m.info.session_id() == id)
                        .ok_or_else(|| opencode_session_store::StoreError::NotFound {
                            kind: "message",
                            id: message.clone(),
                        })?
                        .seq,
                ),
                None => None,
            };
            r.messages(&id, before, q.limit.unwrap_or(usize::MAX / 2))
        })
        .await?;
    Ok(page.messages.into_iter().filter(|m| !matches!(m.info, MessageInfo::System(_))).collect())
}

pub(crate) async fn prompt(s: &AppState, id: &str, body: PromptBody) -> Result<MessageWithParts, ApiError> {
    let session = session(s, id).await?;
    if body.parts.is_empty() {
        return Err(ApiError::bad("a prompt needs at least one part"));
    }
    let answer = s.inner.driver.prompt(session, body).await?;
    // The turn's last events go out before the reply: clients may stop reading at the reply.
    s.inner.bus.delivered().await;
    Ok(answer)
}

pub(crate) async fn one_message(s: &AppState, id: &str, message: &str) -> Result<MessageWithParts, ApiError> {
    session(s, id).await?;
    check_id(message, "msg", "message")?;
    let (session_id, lookup) = (id.to_owned(), message.to_owned());
    s.read(move |r| r.message(&lookup))
        .await?
        .filter(|m| m.info.session_id() == session_id && !matches!(m.info, MessageInfo::System(_)))
        .ok_or_else(|| ApiError::not_found(format!("message {message} not found in session {id}")))
}

pub(crate) async fn abort(s: &AppState, id: &str) -> Result<bool, ApiError> {
    session(s, id).await?;
    s.inner.driver.interrupt(id.to_owned()).await?;
    Ok(true)
}

/// Holds the session for a change that must not race a turn, until the value is dropped; a 409
/// while a turn runs.
pub(crate) fn hold(s: &AppState, id: &str) -> Result<Held, ApiError> {
    if let Some(held) = s.inner.driver.hold(id)? {
        return Ok(Held(Some(held)));
    }
    match s.inner.driver.statuses().get(id) {
        Some(crate::driver::SessionStatus::Idle) | None => Ok(Held(None)),
        Some(_) => Err(ApiError::Conflict(format!("session {id} is busy; abort it first"))),
    }
}

/// A session held by [`hold`].
pub(crate) struct Held(#[expect(dead_code, reason = "held for its Drop")] Option<Box<dyn Send>>);

/// Stages a revert from a message (or part) on; the driver puts back the files the reverted steps
/// changed where it keeps work-tree snapshots (OpenCode's undo).
pub(crate) async fn revert(s: &AppState, id: &str, body: RevertBody) -> Result<Session, ApiError> {
    session(s, id).await?;
    check_id(&body.message_id, "msg", "message")?;
    if let Some(part) = &body.part_id {
        check_id(part, "prt", "part")?;
    }
    if let Some(reverted) = s.inner.driver.revert(id.to_owned(), body.message_id.clone(), body.part_id.clone()) {
        return Ok(reverted.await?);
    }
    let _held = hold(s, id)?;
    let (id, revert) =
        (id.to_owned(), Revert { message_id: body.message_id, part_id: body.part_id, snapshot: None, diff: None });
    s.write(move |tx| tx.set_revert(&id, revert)).await
}

/// Undoes a staged revert; the files an undo put back return to the saved tree.
pub(crate) async fn unrevert(s: &AppState, id: &str) -> Result<Session, ApiError> {
    session(s, id).await?;
    if let Some(restored) = s.inner.driver.unrevert(id.to_owned()) {
        return Ok(restored.await?);
    }
    let _held = hold(s, id)?;
    let id = id.to_owned();
    s.write(move |tx| tx.clear_revert(&id)).await
}

/// Stores the reply (saving approvals for `always`), then tells the driver.
pub(crate) async fn reply_permission(
    s: &AppState,
    session_id: Option<&str>,
    permission: &str,
    reply: PermissionReply,
    feedback: Option<String>,
) -> Result<bool, ApiError> {
    check_id(permission, "per", "permission request")?;
    let (expected, id) = (session_id.map(str::to_owned), permission.to_owned());
    let stored = s
        .write(move |tx| {
            let request = tx
                .reader()
                .permission(&id)?
                .filter(|p| expected.as_ref().is_none_or(|session| &p.request.session_id == session))
                .ok_or_else(|| opencode_session_store::StoreError::NotFound {
                    kind: "permission request",
                    id: id.clone(),
                })?;
            let project =
                tx.reader().session(&request.request.session_id)?.map(|session| session.project_id).unwrap_or_default();
            tx.reply_permission(&id, reply, &project)
        })
        .await?;
    s.inner.driver.permission_replied(stored, feedback).await;
    Ok(true)
}
