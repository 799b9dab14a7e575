//! Sharing without a cloud: sharing a session publishes a read-only transcript served by this server
//! (`GET /share/{id}`, HTML); unsharing removes it.

use axum::Json;
use axum::extract::State;
use axum::response::Html;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::Share;

use super::Op;
use super::session::session;
use crate::error::ApiError;
use crate::extract::P;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::post("/session/{sessionID}/share", "session.share", "Publish a read-only transcript", share)
            .returns_named("Session"),
        Op::delete("/session/{sessionID}/share", "session.unshare", "Withdraw the transcript", unshare)
            .returns_named("Session"),
        Op::post(
            "/project/{projectID}/session/{sessionID}/share",
            "project.session.share",
            "Publish a transcript",
            share_scoped,
        )
        .returns_named("Session"),
        Op::delete(
            "/project/{projectID}/session/{sessionID}/share",
            "project.session.unshare",
            "Withdraw it",
            unshare_scoped,
        )
        .returns_named("Session"),
        Op::get("/share/{sessionID}", "share.view", "The shared transcript as HTML", view).returns_html(),
    ]
}

async fn share(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Session>, ApiError> {
    set_share(&s, &id, true).await.map(Json)
}

async fn unshare(State(s): State<AppState>, P(id): P<String>) -> Result<Json<Session>, ApiError> {
    set_share(&s, &id, false).await.map(Json)
}

async fn share_scoped(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
) -> Result<Json<Session>, ApiError> {
    in_project(&s, &project, &id).await?;
    set_share(&s, &id, true).await.map(Json)
}

async fn unshare_scoped(
    State(s): State<AppState>,
    P((project, id)): P<(String, String)>,
) -> Result<Json<Session>, ApiError> {
    in_project(&s, &project, &id).await?;
    set_share(&s, &id, false).await.map(Json)
}

async fn in_project(s: &AppState, project: &str, id: &str) -> Result<(), ApiError> {
    match session(s, id).await? {
        found if found.project_id == project => Ok(()),
        _ => Err(ApiError::not_found(format!("session {id} not found in project {project}"))),
    }
}

async fn set_share(s: &AppState, id: &str, shared: bool) -> Result<Session, ApiError> {
    session(s, id).await?;
    let url = format!("{}/share/{id}", s.inner.base_url);
    let id = id.to_owned();
    s.write(move |tx| tx.update_session(&id, |session| session.share = shared.then_some(Share { url }))).await
}

async fn view(State(s): State<AppState>, P(id): P<String>) -> Result<Html<String>, ApiError> {
    let found = session(&s, &id).await?;
    if found.share.is_none() {
        return Err(ApiError::not_found(format!("session {id} is not shared")));
    }
    let history = s.read(move |r| r.full_history(&id)).await?;
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0}</title></head><body><h1>{0}</h1>\n",
        escape(&found.title)
    );
    for message in history {
        let role = match message.info {
            MessageInfo::User(_) => "user",
            MessageInfo::Assistant(_) => "assistant",
            MessageInfo::System(_) => continue,
        };
        html.push_str(&format!("<section class=\"{role}\"><h2>{role}</h2>\n"));
        for part in message.parts {
            match part.kind {
                PartKind::Text { text, .. } => html.push_str(&format!("<pre>{}</pre>\n", escape(&text))),
                PartKind::Tool { tool, state, .. } => {
                    html.push_str(&format!("<p>tool <code>{}</code>: {}</p>\n", escape(&tool), state.status()));
                }
                _ => {}
            }
        }
        html.push_str("</section>\n");
    }
    html.push_str("</body></html>\n");
    Ok(Html(html))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
