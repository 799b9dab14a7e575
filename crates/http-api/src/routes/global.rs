//! Server, instance and catalog routes: health, log, paths, projects, config, providers, agents, and
//! the OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::Response;
use opencode_config::AuthStore;
use opencode_session_store::Project;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;

use super::Op;
use crate::catalog_json;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/global/health", "global.health", "Whether the server is up, and its version", health)
            .returns::<Health>(),
        Op::post("/log", "app.log", "Write a client log entry to the server log", log)
            .body::<LogEntry>()
            .returns_bool(),
        Op::get("/doc", "app.doc", "This OpenAPI document", doc),
        Op::get("/path", "path.get", "Home, state, config, worktree and directory of the instance", path)
            .returns::<PathInfo>(),
        Op::get("/project", "project.list", "Every known project", projects).returns_list("Project"),
        Op::get("/project/current", "project.current", "The instance's project", current_project)
            .returns_named("Project"),
        Op::post(
            "/project/init",
            "project.init",
            "Initialise (register) the project of the instance directory",
            init_project,
        )
        .returns_named("Project"),
        Op::get("/config", "config.get", "The merged configuration of the instance directory", config)
            .returns_named("Config"),
        Op::get(
            "/config/providers",
            "config.providers",
            "Usable providers and each one's default model",
            config_providers,
        )
        .returns_named("ConfigProviders"),
        Op::get(
            "/provider",
            "provider.list",
            "Every provider, the default models and the connected ones",
            provider_list,
        )
        .returns_named("ProviderList"),
        Op::get("/agent", "app.agents", "Agents of the instance", agents).returns_list("Agent"),
        Op::get("/project/{projectID}/agent", "project.agents", "Agents, resolved by ?directory=", project_agents)
            .returns_list("Agent"),
        Op::get(
            "/project/{projectID}/directories",
            "project.directories",
            "Known local directories of a project: its worktree, then its sandboxes",
            project_directories,
        )
        .returns::<Vec<ProjectDirectory>>(),
    ]
}

/// `GET /global/health`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Health {
    healthy: bool,
    version: &'static str,
    /// What the server keeps in memory (opencode-rs only): resident bytes, the session runtime's
    /// caches with their sizes and budget, open Locations, and the allocator's statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<Value>,
}

/// `POST /log` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogEntry {
    service: String,
    level: LogLevel,
    message: String,
    #[serde(default)]
    extra: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// `GET /path`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PathInfo {
    home: String,
    state: String,
    config: String,
    worktree: String,
    directory: String,
}

async fn health(State(s): State<AppState>) -> Json<Health> {
    let memory = crate::memory::report(s.inner.driver.as_ref());
    Json(Health { healthy: true, version: env!("CARGO_PKG_VERSION"), memory: Some(memory) })
}

async fn log(JsonBody(entry): JsonBody<LogEntry>) -> Json<bool> {
    let extra = entry.extra.map(Value::Object).unwrap_or(Value::Null);
    let (service, message) = (entry.service.as_str(), entry.message.as_str());
    match entry.level {
        LogLevel::Debug => tracing::debug!(service, %extra, "{message}"),
        LogLevel::Info => tracing::info!(service, %extra, "{message}"),
        LogLevel::Warn => tracing::warn!(service, %extra, "{message}"),
        LogLevel::Error => tracing::error!(service, %extra, "{message}"),
    }
    Json(true)
}

async fn doc() -> Json<Value> {
    Json(crate::openapi::document())
}

async fn path(State(s): State<AppState>, Dir(i): Dir) -> Json<PathInfo> {
    let home = s.inner.env.get("HOME").unwrap_or_default().to_owned();
    let text = |p: &std::path::Path| p.to_string_lossy().into_owned();
    Json(PathInfo {
        home,
        state: text(&s.inner.paths.state),
        config: text(&s.inner.paths.config),
        worktree: text(&i.worktree),
        directory: i.directory_str(),
    })
}

async fn projects(State(s): State<AppState>) -> Result<Json<Vec<Project>>, ApiError> {
    s.read(|r| r.projects()).await.map(Json)
}

async fn current_project(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Project>, ApiError> {
    stored_project(&s, &i.project).await
}

async fn init_project(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Project>, ApiError> {
    // Resolving the instance registered the project in the store.
    stored_project(&s, &i.project).await
}

/// The instance's project as stored now: `PATCH /project/{id}` may have changed it since the instance
/// was resolved.
async fn stored_project(s: &AppState, resolved: &Project) -> Result<Json<Project>, ApiError> {
    let id = resolved.id.clone();
    let stored = s.read(move |r| r.project(&id)).await?;
    Ok(Json(stored.unwrap_or_else(|| resolved.clone())))
}

async fn config(Dir(i): Dir) -> Result<Json<Value>, ApiError> {
    let value = blocking(move || {
        serde_json::to_value(&i.config().config)
            .map_err(|err| ApiError::Internal(format!("config does not serialise: {err}")))
    })
    .await?;
    Ok(Json(value))
}

async fn config_providers(State(s): State<AppState>, Dir(i): Dir) -> Result<Response, ApiError> {
    let (env, auth) = (s.inner.env.clone(), AuthStore::new(s.inner.paths.auth_file(), &s.inner.env));
    blocking(move || {
        let (catalog, config) = (i.catalog()?, i.config());
        let usable: Vec<_> = i
            .provider_cache
            .providers(&catalog, &config.config, &auth, &env)
            .into_iter()
            .filter_map(|(connected, provider)| connected.then_some(provider))
            .collect();
        let default = catalog_json::defaults(&catalog, &config.config, usable.iter().map(AsRef::as_ref));
        let providers = catalog_json::array(usable.iter().map(|p| p.json.as_str()));
        Ok(json_text(format!(r#"{{"providers":{providers},"default":{}}}"#, Value::Object(default))))
    })
    .await
}

async fn provider_list(State(s): State<AppState>, Dir(i): Dir) -> Result<Response, ApiError> {
    let (env, auth) = (s.inner.env.clone(), AuthStore::new(s.inner.paths.auth_file(), &s.inner.env));
    blocking(move || {
        let (catalog, config) = (i.catalog()?, i.config());
        let all = i.provider_cache.providers(&catalog, &config.config, &auth, &env);
        let connected: Vec<&str> = all.iter().filter(|(c, _)| *c).map(|(_, p)| p.id.as_str()).collect();
        let default = catalog_json::defaults(&catalog, &config.config, all.iter().map(|(_, p)| p.as_ref()));
        let providers = catalog_json::array(all.iter().map(|(_, p)| p.json.as_str()));
        Ok(json_text(format!(
            r#"{{"all":{providers},"default":{},"connected":{}}}"#,
            Value::Object(default),
            json!(connected)
        )))
    })
    .await
}

/// A response whose JSON body was assembled from pre-rendered parts.
fn json_text(body: String) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn agents(Dir(i): Dir) -> Result<Json<Vec<Value>>, ApiError> {
    blocking(move || Ok(Json(catalog_json::agents(&i.agents(), &i.config().config)))).await
}

/// One directory of `GET /project/{projectID}/directories`. OpenCode's TUI takes the last one
/// without a `strategy` as the project's main directory (sessions there are listed without a label).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ProjectDirectory {
    directory: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    strategy: Option<&'static str>,
}

async fn project_directories(
    State(s): State<AppState>,
    P(project): P<String>,
) -> Result<Json<Vec<ProjectDirectory>>, ApiError> {
    let lookup = project.clone();
    let project = s
        .read(move |r| r.project(&lookup))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("project {project} not found")))?;
    let main = ProjectDirectory { directory: project.worktree, strategy: None };
    let sandboxes =
        project.sandboxes.into_iter().map(|directory| ProjectDirectory { directory, strategy: Some("git_worktree") });
    Ok(Json(std::iter::once(main).chain(sandboxes).collect()))
}

async fn project_agents(
    State(s): State<AppState>,
    P(project): P<String>,
    Dir(i): Dir,
) -> Result<Json<Vec<Value>>, ApiError> {
    let lookup = project.clone();
    s.read(move |r| r.project(&lookup))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("project {project} not found")))?;
    blocking(move || Ok(Json(catalog_json::agents(&i.agents(), &i.config().config)))).await
}
