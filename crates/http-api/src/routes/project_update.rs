//! `PATCH /project/{projectID}` (OpenCode's `project.update`): a project's name, icon and commands.
//!
//! As OpenCode: given fields replace the stored ones (icon fields one by one, `commands` whole),
//! absent fields are kept, `time.updated` moves, and `project.updated` (the project) goes to every
//! subscriber. The project row already holds these fields in its JSON document, so the read, merge
//! and write are one store transaction and need no schema change.

use axum::Json;
use axum::extract::State;
use opencode_session_store::Project;
use opencode_session_store::StoreError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

use super::Op;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::patch("/project/{projectID}", "project.update", "Update a project's name, icon or commands", update_route)
            .body::<UpdateProject>()
            .returns_named("Project"),
    ]
}

/// `PATCH /project/{projectID}` body.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateProject {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    icon: Option<ProjectIcon>,
    #[serde(default)]
    commands: Option<ProjectCommands>,
}

/// `ProjectIcon`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProjectIcon {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, rename = "override", skip_serializing_if = "Option::is_none")]
    override_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
}

/// `ProjectCommands`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProjectCommands {
    /// Startup script to run when creating a new workspace (worktree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<String>,
}

async fn update_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<UpdateProject>,
) -> Result<Json<Project>, ApiError> {
    let lookup = id.clone();
    let project = s
        .write(move |tx| {
            let mut project =
                tx.reader().project(&lookup)?.ok_or_else(|| StoreError::NotFound { kind: "project", id: lookup })?;
            apply(&mut project, body)?;
            project.time.updated = tx.now();
            tx.upsert_project(&project)?;
            Ok(project)
        })
        .await?;
    let properties = serde_json::to_value(&project)
        .map_err(|err| ApiError::Internal(format!("project does not serialise: {err}")))?;
    s.inner.bus.publish(None, "project.updated", properties);
    Ok(Json(project))
}

/// Merges the given fields into the project.
fn apply(project: &mut Project, body: UpdateProject) -> Result<(), StoreError> {
    if let Some(name) = body.name {
        project.name = Some(name);
    }
    if let Some(icon) = body.icon {
        let mut merged = match project.icon.take() {
            Some(Value::Object(existing)) => existing,
            _ => Map::new(),
        };
        if let Value::Object(given) = to_value(&icon)? {
            merged.extend(given);
        }
        project.icon = (!merged.is_empty()).then_some(Value::Object(merged));
    }
    if let Some(commands) = body.commands {
        project.commands = Some(to_value(&commands)?);
    }
    Ok(())
}

fn to_value(value: &impl Serialize) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(|err| StoreError::Invalid(format!("cannot encode the update: {err}")))
}
