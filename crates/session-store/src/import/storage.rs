//! OpenCode's older JSON layout (before 1.2 moved it into SQLite), read-only:
//!
//! ```text
//! <data>/storage/project/<projectID>.json
//! <data>/storage/session/<projectID>/<sessionID>.json
//! <data>/storage/message/<sessionID>/<messageID>.json
//! <data>/storage/part/<messageID>/<partID>.json
//! ```
//!
//! Every file holds one record in OpenCode 1.x's JSON shape, ids included; the ids the path implies
//! are filled in when a file lacks them.

use std::path::Path;
use std::path::PathBuf;

use serde_json::Value;

use super::source::MessageRows;
use super::source::Row;
use super::source::SessionRow;
use super::source::Source;
use super::source::with_field;
use crate::error::Result;
use crate::error::StoreError;

pub(crate) struct Storage {
    root: PathBuf,
}

impl Storage {
    /// The layout under `root` (`<data>/storage`), if it has a `session` directory.
    pub fn find(root: &Path) -> Option<Self> {
        root.join("session").is_dir().then(|| Self { root: root.to_path_buf() })
    }

    /// The `.json` files of a directory, sorted by name (OpenCode's ids sort by creation).
    fn files(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(self.error(dir, &err)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| self.error(dir, &e))?.path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
        files.sort();
        Ok(files)
    }

    fn subdirs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(self.error(dir, &err)),
        };
        let mut dirs = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| self.error(dir, &e))?.path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    fn error(&self, path: &Path, err: &std::io::Error) -> StoreError {
        StoreError::ImportSource { path: path.to_path_buf(), detail: err.to_string() }
    }
}

impl Source for Storage {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn projects(&self) -> Result<Vec<Row>> {
        Ok(self.files(&self.root.join("project"))?.iter().map(|file| read_row(file, |json| json)).collect())
    }

    fn sessions(&self) -> Result<Vec<SessionRow>> {
        let mut sessions = Vec::new();
        for project in self.subdirs(&self.root.join("session"))? {
            let project_id = file_name(&project);
            for file in self.files(&project)? {
                let row = read_row(&file, |json| fill(json, "projectID", &project_id));
                let json = row.json.as_ref().ok();
                let parent_id = json.and_then(|j| j["parentID"].as_str()).map(str::to_owned);
                let created = json.and_then(|j| j["time"]["created"].as_i64()).unwrap_or(0);
                sessions.push(SessionRow { row, parent_id, created });
            }
        }
        sessions.sort_by(|a, b| (a.created, &a.row.id).cmp(&(b.created, &b.row.id)));
        Ok(sessions)
    }

    fn messages(&self, session_id: &str) -> Result<(Vec<MessageRows>, Vec<Row>)> {
        let mut messages: Vec<(i64, MessageRows)> = Vec::new();
        for file in self.files(&self.root.join("message").join(session_id))? {
            let message = read_row(&file, |json| fill(json, "sessionID", session_id));
            let created = message.json.as_ref().ok().and_then(|j| j["time"]["created"].as_i64()).unwrap_or(0);
            let part_dir = self.root.join("part").join(&message.id);
            let parts = self
                .files(&part_dir)?
                .iter()
                .map(|part| read_row(part, |json| fill(fill(json, "sessionID", session_id), "messageID", &message.id)))
                .collect();
            messages.push((created, MessageRows { message, parts }));
        }
        messages.sort_by(|a, b| (a.0, &a.1.message.id).cmp(&(b.0, &b.1.message.id)));
        Ok((messages.into_iter().map(|(_, m)| m).collect(), Vec::new()))
    }
}

/// One JSON file as a row; its id is the file's stem unless the JSON names one.
fn read_row(file: &Path, complete: impl FnOnce(Value) -> Value) -> Row {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let json = std::fs::read_to_string(file).map_err(|err| format!("cannot read {}: {err}", file.display())).and_then(
        |text| serde_json::from_str::<Value>(&text).map_err(|err| format!("{} is not JSON: {err}", file.display())),
    );
    match json {
        Ok(json @ Value::Object(_)) => {
            let id = json["id"].as_str().map_or_else(|| stem.clone(), str::to_owned);
            Row::ok(id.clone(), complete(fill(json, "id", &id)))
        }
        Ok(_) => Row::unreadable(stem, format!("{} is not a JSON object", file.display())),
        Err(reason) => Row::unreadable(stem, reason),
    }
}

/// Sets `key` when the record lacks it.
fn fill(json: Value, key: &str, value: &str) -> Value {
    if json.get(key).is_some_and(|v| !v.is_null()) { json } else { with_field(json, key, value) }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
