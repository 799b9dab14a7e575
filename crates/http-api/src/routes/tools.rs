//! `GET /experimental/tool/ids` and `GET /experimental/tool?provider&model` (the SDK's `tool.ids` and
//! `tool.list`): the built-in tools a session of the instance gets, with their JSON schemas.
//!
//! The tools are those the session runtime gives every Location, built the same way for the
//! instance's directory and configuration: the standard registry (files, shell, web, plan mode, `lsp`
//! when configured), `todowrite`, `todoread`, `question` and `task`. The list is what the model sees
//! under the default agent (tools its permissions deny outright are hidden); the ids are every tool.
//! Not listed: tools of MCP servers and of plugins (they appear only once those have started inside
//! the runtime). The provider and model are required as in OpenCode, but the tool set does not depend
//! on them here.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use opencode_llm::ToolDefinition;
use opencode_session_runtime::RegistryTools;
use opencode_tool_registry::schema_for;
use opencode_tool_registry::tools::task;
use opencode_tool_registry::tools::todo::TodoRead;
use opencode_tool_registry::tools::todo::TodoWrite;
use opencode_tool_registry::typed;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::Q;
use crate::instance::Instance;
use crate::services::StoreTodos;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/experimental/tool/ids", "tool.ids", "Ids of the built-in tools of the instance", ids_route)
            .returns::<Vec<String>>(),
        Op::get("/experimental/tool", "tool.list", "Built-in tools with their JSON schemas", list_route)
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
    blocking(move || {
        let tools = instance_tools(&s, &i)?;
        let mut ids = tools.registry().names();
        ids.push(task_definition(&i).name);
        Ok(Json(ids))
    })
    .await
}

async fn list_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    Q(q): Q<ListQuery>,
) -> Result<Json<Vec<ToolListItem>>, ApiError> {
    if q.provider.as_deref().is_none_or(str::is_empty) || q.model.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::bad("provider and model are required query parameters"));
    }
    blocking(move || {
        let tools = instance_tools(&s, &i)?;
        let agents = i.agents();
        let Some(agent) = agents.resolve(None) else { return Ok(Json(Vec::new())) };
        let mut definitions = tools.registry().definitions(&agent);
        if !agent.permission.hides_tool("task") {
            definitions.push(task_definition(&i));
        }
        let items = definitions
            .into_iter()
            .map(|d| ToolListItem { id: d.name, description: d.description, parameters: d.input_schema })
            .collect();
        Ok(Json(items))
    })
    .await
}

/// The instance's tools as the runtime builds them for a Location, without MCP servers (nothing is
/// started by listing). Blocking.
fn instance_tools(s: &AppState, instance: &Instance) -> Result<RegistryTools, ApiError> {
    let mut config = instance.config().config.clone();
    config.mcp.clear();
    let permissions = crate::launch::store_permissions(Arc::clone(&s.inner.store));
    let tools = RegistryTools::standard(&instance.directory, &config, &s.inner.paths, permissions)
        .map_err(|err| ApiError::bad(format!("cannot build the tools of {}: {err}", instance.directory_str())))?;
    let todos = Arc::new(StoreTodos::new(Arc::clone(&s.inner.store)));
    let question = typed(opencode_tool_registry::tools::question::Question);
    for tool in [typed(TodoWrite(todos.clone())), typed(TodoRead(todos)), question] {
        tools.registry().register(tool).map_err(|err| ApiError::Internal(format!("cannot list the tools: {err}")))?;
    }
    Ok(tools)
}

/// `task`, which the runtime attaches when it opens a Location, as the default agent sees it.
fn task_definition(instance: &Instance) -> ToolDefinition {
    let agents = instance.agents();
    let description = match agents.resolve(None) {
        Some(agent) => task::description_for(&agents, &agent),
        None => String::new(),
    };
    ToolDefinition::new("task", description, schema_for::<task::TaskInput>())
}
