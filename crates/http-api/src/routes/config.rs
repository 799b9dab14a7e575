//! `PATCH /config`: merges a partial configuration into the project's configuration file and answers
//! with the instance's merged configuration reloaded. The file is the instance directory's (or its
//! worktree root's) `opencode.jsonc` / `opencode.json`, else a new `opencode.json` in the instance
//! directory. The merge is OpenCode's (objects key by key, `plugin`/`instructions` concatenated, other
//! values replaced); keys and their order are kept, but comments of a `.jsonc` file are not. The
//! result is validated before anything is written, and written atomically (temporary file + rename).

use std::path::Path;
use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use serde_json::Map;
use serde_json::Value;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

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
    ]
}

async fn update_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    JsonBody(patch): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let Value::Object(patch) = patch else {
        return Err(ApiError::bad("the body must be a JSON object of configuration keys"));
    };
    let instance = std::sync::Arc::clone(&i);
    blocking(move || update(&instance, patch)).await?;
    s.inner.instances.invalidate_configs();
    blocking(move || {
        serde_json::to_value(&i.config().config)
            .map(Json)
            .map_err(|err| ApiError::Internal(format!("config does not serialise: {err}")))
    })
    .await
}

/// Validates and writes the merged file (blocking).
fn update(instance: &Instance, patch: Map<String, Value>) -> Result<(), ApiError> {
    if !instance.directory.is_dir() {
        return Err(ApiError::not_found(format!("directory {} does not exist", instance.directory.display())));
    }
    if let Some(unknown) =
        patch.keys().find(|key| *key != "$schema" && !opencode_config::KNOWN_KEYS.contains(&key.as_str()))
    {
        return Err(ApiError::bad(format!("unknown configuration key {unknown:?}")));
    }
    serde_json::from_value::<opencode_config::Config>(Value::Object(patch.clone()))
        .map_err(|err| ApiError::bad(format!("invalid configuration: {err}")))?;
    let path = config_file(&instance.directory, &instance.worktree);
    let mut current = read_object(&path)?;
    opencode_config::merge_values(&mut current, patch);
    serde_json::from_value::<opencode_config::Config>(Value::Object(current.clone()))
        .map_err(|err| ApiError::bad(format!("the merged configuration is invalid: {err}")))?;
    let text = serde_json::to_string_pretty(&Value::Object(current))
        .map_err(|err| ApiError::Internal(format!("config does not serialise: {err}")))?;
    write_atomically(&path, &format!("{text}\n"))
}

/// The project configuration file to update.
fn config_file(directory: &Path, worktree: &Path) -> PathBuf {
    [directory, worktree]
        .iter()
        .flat_map(|dir| [dir.join("opencode.jsonc"), dir.join("opencode.json")])
        .find(|path| path.is_file())
        .unwrap_or_else(|| directory.join("opencode.json"))
}

/// The file's top-level object (empty when the file does not exist).
fn read_object(path: &Path) -> Result<Map<String, Value>, ApiError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(err) => return Err(ApiError::Internal(format!("cannot read {}: {err}", path.display()))),
    };
    match serde_json::from_str(&opencode_config::jsonc::strip(&text)) {
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
