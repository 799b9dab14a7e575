//! `PATCH /config`: merges a partial configuration into the project's configuration file and answers
//! with the instance's merged configuration reloaded. The file is the instance directory's (or its
//! worktree root's) `opencode.jsonc` / `opencode.json`, else a new `opencode.json` in the instance
//! directory. The merge is OpenCode's (objects key by key, `plugin`/`instructions` concatenated, other
//! values replaced), written as minimal edits of the file's text (`opencode_config::jsonc::merge_patch`):
//! changed values are replaced where they stand and new keys inserted in their object's layout, so
//! comments, trailing commas, key order and formatting survive. The result is validated before
//! anything is written, and written atomically (temporary file + rename).

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
    let text = read_text(&path)?;
    let mut merged = parse_object(&path, &text)?;
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
    write_atomically(&path, &edited)
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
