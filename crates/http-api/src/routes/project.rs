//! The seed's project-scoped API (spec/04 "HTTP API Server"): `/project/{projectID}/session...`. Each
//! route checks that the session belongs to the project (else 404) and then runs the same behaviour as
//! its `/session...` twin. The instance is `?directory=` when given, else the project's worktree.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use opencode_session_store::MessageWithParts;
use opencode_session_store::Project;
use opencode_session_store::Session;

use super::Op;
use super::files;
use super::session;
use super::session::CreateSession;
use super::session::ListQuery;
use super::session::MessagesQuery;
use super::session::RespondBody;
use super::session::RevertBody;
use crate::driver::PromptBody;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::extract::OptionalJson;
use crate::extract::P;
use crate::extract::Q;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/project/{projectID}/session", "project.session.list", "Sessions of one project", list)
            .query(&["roots", "start", "search", "limit"])
            .returns_list("Session"),
        Op::post("/project/{projectID}/session", "project.session.create", "Create a session in a project", create)
            .body::<CreateSession>()
            .returns_named("Session"),
        Op::get("/project/{projectID}/session/{sessionID}", "project.session.get", "Get a session of a project", get)
            .returns_named("Session"),
        Op::delete("/project/{projectID}/session/{sessionID}", "project.session.delete", "Delete a session", delete)
            .returns_bool(),
        Op::post(
            "/project/{projectID}/session/{sessionID}/abort",
            "project.session.abort",
            "Interrupt the active drain",
            abort,
        )
        .returns_bool(),
        Op::post(
            "/project/{projectID}/session/{sessionID}/compact",
            "project.session.compact",
            "Compact the session now and wait",
            compact,
        )
        .returns_bool(),
        Op::post("/project/{projectID}/session/{sessionID}/revert", "project.session.revert", "Stage a revert", revert)
            .body::<RevertBody>()
            .returns_named("Session"),
        Op::post(
            "/project/{projectID}/session/{sessionID}/unrevert",
            "project.session.unrevert",
            "Undo a staged revert",
            unrevert,
        )
        .returns_named("Session"),
        Op::get(
            "/project/{projectID}/session/{sessionID}/message",
            "project.session.messages",
            "Messages as {info, parts}",
            messages,
        )
        .query(&["limit", "before"])
        .returns_list("MessageWithParts"),
        Op::post(
            "/project/{projectID}/session/{sessionID}/message",
            "project.session.prompt",
            "Prompt and wait for the reply",
            prompt,
        )
        .body::<PromptBody>()
        .returns_named("MessageWithParts"),
        Op::get(
            "/project/{projectID}/session/{sessionID}/message/{messageID}",
            "project.session.message",
            "One message as {info, parts}",
            message,
        )
        .returns_named("MessageWithParts"),
        Op::post(
            "/project/{projectID}/session/{sessionID}/permission/{permissionID}",
            "project.session.permission",
            "Answer a permission request",
            permission,
        )
        .body::<RespondBody>()
        .returns_bool(),
        Op::get(
            "/project/{projectID}/session/{sessionID}/find/file",
            "project.session.findFile",
            "Fuzzy file search",
            find_file,
        )
        .query(&["query", "dirs", "type", "limit"])
        .returns::<Vec<String>>(),
        Op::get(
            "/project/{projectID}/find/file",
            "project.findFile",
            "Fuzzy file search in the project",
            project_find_file,
        )
        .query(&["query", "dirs", "type", "limit"])
        .returns::<Vec<String>>(),
        Op::get("/project/{projectID}/session/{sessionID}/file", "project.session.file", "Directory listing", file)
            .query(&["path"])
            .returns_list("FileNode"),
    ]
}

async fn project(s: &AppState, id: &str) -> Result<Project, ApiError> {
    let lookup = id.to_owned();
    s.read(move |r| r.project(&lookup)).await?.ok_or_else(|| ApiError::not_found(format!("project {id} not found")))
}

/// The session, if it belongs to the project; else 404.
async fn scoped(s: &AppState, project_id: &str, session_id: &str) -> Result<Session, ApiError> {
    project(s, project_id).await?;
    let found = session::session(s, session_id).await?;
    if found.project_id != project_id {
        return Err(ApiError::not_found(format!("session {session_id} not found in project {project_id}")));
    }
    Ok(found)
}

/// The instance for a project route: `?directory=` when given, else the worktree (for `global`, the
/// server's default directory).
async fn instance_for(s: &AppState, project: &Project, query: Option<&str>) -> Result<Arc<Instance>, ApiError> {
    let requested = query
        .and_then(|q| crate::extract::form_pairs(q).ok())
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "directory").map(|(_, v)| PathBuf::from(v)));
    let directory = requested.unwrap_or_else(|| {
        if project.id == opencode_session_store::GLOBAL_PROJECT {
            s.inner.default_directory.clone()
        } else {
            PathBuf::from(&project.worktree)
        }
    });
    let app = s.clone();
    let instance = blocking(move || app.inner.instances.get(&directory)).await?;
    if instance.project.id != project.id {
        return Err(ApiError::bad(format!("directory {} is not in project {}", instance.directory_str(), project.id)));
    }
    Ok(instance)
}

async fn list(
    State(s): State<AppState>,
    P(project_id): P<String>,
    uri: axum::http::Uri,
    Q(q): Q<ListQuery>,
) -> Result<Json<Vec<Session>>, ApiError> {
    let found = project(&s, &project_id).await?;
    let instance = instance_for(&s, &found, uri.query()).await?;
    session::list(&s, &instance, &project_id, q).await.map(Json)
}

async fn create(
    State(s): State<AppState>,
    P(project_id): P<String>,
    uri: axum::http::Uri,
    OptionalJson(body): OptionalJson<CreateSession>,
) -> Result<Json<Session>, ApiError> {
    let found = project(&s, &project_id).await?;
    let instance = instance_for(&s, &found, uri.query()).await?;
    session::create(&s, &instance, body).await.map(Json)
}

async fn get(State(s): State<AppState>, P((project, id)): P<(String, String)>) -> Result<Json<Session>, ApiError> {
    scoped(&s, &project, &id).await.map(Json)
}

async fn delete(State(s): State<AppState>, P((project, id)): P<(String, String)>) -> Result<Json<bool>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::delete(&s, &id).await.map(Json)
}

async fn abort(State(s): State<AppState>, P((project, id)): P<(String, String)>) -> Result<Json<bool>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::abort(&s, &id).await.map(Json)
}

async fn compact(State(s): State<AppState>, P((project, id)): P<(String, String)>) -> Result<Json<bool>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::compact(&s, &id).await.map(Json)
}

async fn revert(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
    JsonBody(body): JsonBody<RevertBody>,
) -> Result<Json<Session>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::revert(&s, &id, body).await.map(Json)
}

async fn unrevert(State(s): State<AppState>, P((project, id)): P<(String, String)>) -> Result<Json<Session>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::unrevert(&s, &id).await.map(Json)
}

async fn messages(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
    Q(q): Q<MessagesQuery>,
) -> Result<Json<Vec<MessageWithParts>>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::messages(&s, &id, q).await.map(Json)
}

async fn prompt(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
    JsonBody(body): JsonBody<PromptBody>,
) -> Result<Json<MessageWithParts>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::prompt(&s, &id, body).await.map(Json)
}

async fn message(
    State(s): State<AppState>,
    P((project, id, message)): P<(String, String, String)>,
) -> Result<Json<MessageWithParts>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::one_message(&s, &id, &message).await.map(Json)
}

async fn permission(
    State(s): State<AppState>,
    P((project, id, permission)): P<(String, String, String)>,
    JsonBody(body): JsonBody<RespondBody>,
) -> Result<Json<bool>, ApiError> {
    scoped(&s, &project, &id).await?;
    session::reply_permission(&s, Some(&id), &permission, body.reply(), None).await.map(Json)
}

async fn session_instance(s: &AppState, project: &str, id: &str) -> Result<Arc<Instance>, ApiError> {
    let found = scoped(s, project, id).await?;
    let app = s.clone();
    blocking(move || app.inner.instances.get(std::path::Path::new(&found.directory))).await
}

async fn find_file(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
    Q(q): Q<files::FindQuery>,
) -> Result<Json<Vec<String>>, ApiError> {
    let instance = session_instance(&s, &project, &id).await?;
    blocking(move || files::find(&instance.directory, &q).map(Json)).await
}

async fn project_find_file(
    State(s): State<AppState>,
    P(project_id): P<String>,
    uri: axum::http::Uri,
    Q(q): Q<files::FindQuery>,
) -> Result<Json<Vec<String>>, ApiError> {
    let found = project(&s, &project_id).await?;
    let instance = instance_for(&s, &found, uri.query()).await?;
    blocking(move || files::find(&instance.directory, &q).map(Json)).await
}

async fn file(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
    Q(q): Q<files::PathQuery>,
) -> Result<Json<Vec<files::FileNode>>, ApiError> {
    let instance = session_instance(&s, &project, &id).await?;
    blocking(move || files::list(&instance, q.path()).map(Json)).await
}
