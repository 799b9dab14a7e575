//! `GET /permission`: the permission requests tool calls of the instance's sessions are waiting on,
//! oldest first (answered through `/permission/{requestID}/reply` or the session-scoped route).

use axum::Json;
use axum::extract::State;

use super::Op;
use crate::driver::PermissionRequest;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::instance::Instance;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/permission", "permission.list", "Permission requests waiting for the user, oldest first", list_route)
            .returns::<Vec<PermissionRequest>>(),
    ]
}

async fn list_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Vec<PermissionRequest>>, ApiError> {
    let requests = s.inner.driver.permissions();
    own_sessions(&s, &i, requests, |request| &request.session_id).await.map(Json)
}

/// Keeps the items whose session belongs to the instance (as OpenCode's per-instance state does):
/// its project, and in the global project its directory.
pub(super) async fn own_sessions<T: Send + 'static>(
    s: &AppState,
    i: &Instance,
    items: Vec<T>,
    session_of: fn(&T) -> &String,
) -> Result<Vec<T>, ApiError> {
    if items.is_empty() {
        return Ok(items);
    }
    let (project, directory, global) = (i.project.id.clone(), i.directory_str(), i.is_global());
    s.read(move |r| {
        let mut mine = Vec::new();
        for item in items {
            let Some(session) = r.session(session_of(&item))? else { continue };
            if session.project_id == project && (!global || session.directory == directory) {
                mine.push(item);
            }
        }
        Ok(mine)
    })
    .await
}
