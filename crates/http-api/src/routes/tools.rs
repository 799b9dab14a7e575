//! `GET /experimental/tool/ids` and `GET /experimental/tool?provider&model` (the SDK's `tool.ids` and
//! `tool.list`): the tools a session of the instance gets, with their JSON schemas.
//!
//! Both ask the session runtime for the instance directory's Location (opening it, as a prompt
//! would): the list is what the model is offered under the default agent (tools its permissions deny
//! outright are hidden, `task` lists the subagents it may call), including MCP servers' tools once
//! they have connected; the ids are every tool. A driver without tools (the echo driver) lists none.
//! The provider and model are required as in OpenCode, but the tool set does not depend on them here.

use axum::Json;
use axum::extract::State;
use opencode_session_runtime::LocationTools;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::Q;
use crate::instance::Instance;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/experimental/tool/ids", "tool.ids", "Ids of the tools of the instance", ids_route)
            .returns::<Vec<String>>(),
        Op::get("/experimental/tool", "tool.list", "Tools with their JSON schemas", list_route)
            .query(&["provider", "model"])
            .returns::<Vec<ToolListItem>>(),
    ]
}

/// `ToolListItem`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolListItem {
    id: String,
    description: String,
    /// The JSON Schema of the tool's input.
    parameters: Value,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    provider: Option<String>,
    model: Option<String>,
}

async fn ids_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Vec<String>>, ApiError> {
    Ok(Json(tools(&s, &i).await?.map(|tools| tools.names).unwrap_or_default()))
}

async fn list_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    Q(q): Q<ListQuery>,
) -> Result<Json<Vec<ToolListItem>>, ApiError> {
    if q.provider.as_deref().is_none_or(str::is_empty) || q.model.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::bad("provider and model are required query parameters"));
    }
    let offered = tools(&s, &i).await?.map(|tools| tools.offered).unwrap_or_default();
    let items = offered
        .into_iter()
        .map(|d| ToolListItem { id: d.name, description: d.description, parameters: d.input_schema })
        .collect();
    Ok(Json(items))
}

/// The instance's tools under the default agent.
async fn tools(s: &AppState, i: &Instance) -> Result<Option<LocationTools>, ApiError> {
    s.in_directory(i.directory.clone(), |driver, directory| driver.tools(directory, None)).await
}
