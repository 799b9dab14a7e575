//! Configuration and instance lifetime routes.
//!
//! - `PATCH /config` merges a partial configuration into the project's configuration file: the
//!   instance directory's (or its worktree root's) `opencode.jsonc` / `opencode.json`, else a new
//!   `opencode.json` in the instance directory. `GET|PATCH /global/config` do the same for the global
//!   configuration (`config.json`, `opencode.json`, `opencode.jsonc` in the global config dir; an
//!   update goes to the last of them that exists, else a new `opencode.json`).
//! - The merge is OpenCode's (objects key by key, `plugin`/`instructions` concatenated, other values
//!   replaced), written as minimal edits of the file's text (`opencode_config::jsonc::merge_patch`):
//!   changed values are replaced where they stand and new keys inserted in their object's layout, so
//!   comments, trailing commas, key order and formatting survive. The result is validated before
//!   anything is written, and written atomically (temporary file + rename).
//! - Disposal, as in OpenCode: an update disposes what it affects (the instance and the directories
//!   under the file's, or everything for the global file), `POST /instance/dispose` the instance,
//!   `POST /global/dispose` everything. Disposing forgets the loaded configuration and catalog and
//!   reloads the runtime's Locations (their agents, models and tools; MCP servers restart), so the
//!   next prompt runs with the current files; a turn running meanwhile finishes with what it started
//!   with. Each disposed instance announces `server.instance.disposed` `{directory}`, a global
//!   disposal then `global.disposed`. Unlike OpenCode, `/event` streams stay open after
//!   `server.instance.disposed`: they are the server's, not the disposed instance's, and a client
//!   reconnecting would only risk missing events in between.

use std::path::Path;
use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::state::blocking;

/// The global configuration files, in the order they are merged.
const GLOBAL_FILES: [&str; 3] = ["config.json", "opencode.json", "opencode.jsonc"];

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::patch(
            "/config",
            "config.update",
            "Merge settings into the project's configuration file; returns the merged configuration",
            update_route,
        )
        .body::<Value>()
        .returns_named("Config"),
        Op::get("/global/config", "global.config.get", "The global configuration", global_route)
            .returns_named("Config"),
        Op::patch(
            "/global/config",
            "global.config.update",
            "Merge settings into the global configuration file; every instance reloads",
            update_global_route,
        )
        .body::<Value>()
        .returns_named("Config"),
        Op::post(
            "/instance/dispose",
            "instance.dispose",
            "Dispose the instance: its configuration, agents, catalog and tools reload at next use",
            dispose_route,
        )
        .returns_bool(),
        Op::post("/global/dispose", "global.dispose", "Dispose every instance", dispose_all_route).returns_bool(),
    ]
}

async fn update_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    JsonBody(patch): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let patch = patch_object(patch)?;
    s.inner.options.config_change(&format!("PATCH /config of {} (keys: {})", i.directory_str(), keys(&patch)))?;
    let instance = std::sync::Arc::clone(&i);
    let written = blocking(move || {
        if !instance.directory.is_dir() {
            return Err(ApiError::not_found(format!("directory {} does not exist", instance.directory.display())));
        }
        let path = config_file(&instance.directory, &instance.worktree);
        update(&path, patch)?;
        Ok(path)
    })
    .await?;
    // Every instance forgets its configuration (directories below share the file); the runtime
    // reloads the Locations the file applies to.
    s.inner.instances.invalidate_configs();
    let affected = written.parent().unwrap_or(&i.directory);
    s.inner.driver.reload(Some(affected));
    announce_disposed(&s, &i.directory_str());
    blocking(move || {
        serde_json::to_value(&i.config().config)
            .map(Json)
            .map_err(|err| ApiError::Internal(format!("config does not serialise: {err}")))
    })
    .await
}

async fn global_route(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    let dir = s.inner.paths.config.clone();
    blocking(move || global_config(&dir).map(Json)).await
}

async fn update_global_route(
    State(s): State<AppState>,
    JsonBody(patch): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let patch = patch_object(patch)?;
    s.inner.options.config_change(&format!("PATCH /global/config (keys: {})", keys(&patch)))?;
    let dir = s.inner.paths.config.clone();
    let config = blocking(move || {
        std::fs::create_dir_all(&dir)
            .map_err(|err| ApiError::Internal(format!("cannot create {}: {err}", dir.display())))?;
        update(&global_file(&dir), patch)?;
        global_config(&dir)
    })
    .await?;
    dispose_all(&s);
    Ok(Json(config))
}

async fn dispose_route(State(s): State<AppState>, Dir(i): Dir) -> Json<bool> {
    i.invalidate();
    s.inner.driver.reload(Some(&i.directory));
    announce_disposed(&s, &i.directory_str());
    Json(true)
}

async fn dispose_all_route(State(s): State<AppState>) -> Json<bool> {
    dispose_all(&s);
    Json(true)
}

/// Every instance forgets its configuration, every Location reloads; each known instance announces
/// its disposal, then `global.disposed`.
fn dispose_all(s: &AppState) {
    s.inner.instances.invalidate_configs();
    s.inner.driver.reload(None);
    for directory in s.inner.instances.directories() {
        announce_disposed(s, &directory.to_string_lossy());
    }
    s.inner.bus.publish(None, "global.disposed", json!({}));
}

fn announce_disposed(s: &AppState, directory: &str) {
    s.inner.bus.publish(Some(directory.to_owned()), "server.instance.disposed", json!({ "directory": directory }));
}

fn keys(patch: &Map<String, Value>) -> String {
    patch.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
}

fn patch_object(patch: Value) -> Result<Map<String, Value>, ApiError> {
    match patch {
        Value::Object(patch) => Ok(patch),
        _ => Err(ApiError::bad("the body must be a JSON object of configuration keys")),
    }
}

/// The global configuration files merged, in `GET /config`'s shape (blocking). A file that cannot be
/// read or parsed is a conflict: it has to be fixed by hand.
fn global_config(dir: &Path) -> Result<Value, ApiError> {
    let mut merged = Map::new();
    for name in GLOBAL_FILES {
        let path = dir.join(name);
        let text = read_text(&path)?;
        opencode_config::merge_values(&mut merged, parse_object(&path, &text)?);
    }
    let config = serde_json::from_value::<opencode_config::Config>(Value::Object(merged)).map_err(|err| {
        ApiError::Conflict(format!("the global configuration in {} is invalid ({err}); fix it by hand", dir.display()))
    })?;
    serde_json::to_value(&config).map_err(|err| ApiError::Internal(format!("config does not serialise: {err}")))
}

/// The global configuration file to update: the one merged last that exists, else `opencode.json`.
fn global_file(dir: &Path) -> PathBuf {
    GLOBAL_FILES
        .iter()
        .rev()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| dir.join("opencode.json"))
}

/// Validates and writes the merged file at `path` (blocking).
fn update(path: &Path, patch: Map<String, Value>) -> Result<(), ApiError> {
    if let Some(unknown) =
        patch.keys().find(|key| *key != "$schema" && !opencode_config::KNOWN_KEYS.contains(&key.as_str()))
    {
        return Err(ApiError::bad(format!("unknown configuration key {unknown:?}")));
    }
    serde_json::from_value::<opencode_config::Config>(Value::Object(patch.clone()))
        .map_err(|err| ApiError::bad(format!("invalid configuration: {err}")))?;
    if patch.is_empty() {
        return Ok(()); // Nothing changes: no file is created or rewritten.
    }
    let text = read_text(path)?;
    let mut merged = parse_object(path, &text)?;
    opencode_config::merge_values(&mut merged, patch.clone());
    serde_json::from_value::<opencode_config::Config>(Value::Object(merged.clone()))
        .map_err(|err| ApiError::bad(format!("the merged configuration is invalid: {err}")))?;
    let edited = opencode_config::jsonc::merge_patch(&text, &patch).map_err(|err| {
        ApiError::Conflict(format!("{} cannot be edited ({err}); fix it by hand first", path.display()))
    })?;
    // The edit must mean exactly the merge that was validated.
    if opencode_config::jsonc::from_str::<Value>(&edited).ok() != Some(Value::Object(merged)) {
        return Err(ApiError::Internal(format!("editing {} went wrong; the file was left as it was", path.display())));
    }
    write_atomically(path, &edited)
}

/// The project configuration file to update.
fn config_file(directory: &Path, worktree: &Path) -> PathBuf {
    [directory, worktree]
        .iter()
        .flat_map(|dir| [dir.join("opencode.jsonc"), dir.join("opencode.json")])
        .find(|path| path.is_file())
        .unwrap_or_else(|| directory.join("opencode.json"))
}

/// The file's text (empty when the file does not exist).
fn read_text(path: &Path) -> Result<String, ApiError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(ApiError::Internal(format!("cannot read {}: {err}", path.display()))),
    }
}

/// The text's top-level object (empty for an empty file).
fn parse_object(path: &Path, text: &str) -> Result<Map<String, Value>, ApiError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(&opencode_config::jsonc::strip(text)) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => {
            Err(ApiError::Conflict(format!("{} does not hold a JSON object; fix it by hand first", path.display())))
        }
        Err(err) => {
            Err(ApiError::Conflict(format!("{} is not valid JSON ({err}); fix it by hand first", path.display())))
        }
    }
}

fn write_atomically(path: &Path, text: &str) -> Result<(), ApiError> {
    let failed = |err: std::io::Error| ApiError::Internal(format!("cannot write {}: {err}", path.display()));
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temporary, text).map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(|err| {
        let _ = std::fs::remove_file(&temporary);
        failed(err)
    })
}
