//! OpenCode 1.2+'s SQLite database (`<data>/opencode.db`), opened read-only.
//!
//! The connection is `SQLITE_OPEN_READ_ONLY`: it never writes the database or its write-ahead log, and
//! never checkpoints (OpenCode may be running and writing meanwhile; SQLite's locks keep every read
//! consistent). `immutable` is not used: it would ignore the write-ahead log, where OpenCode's latest
//! sessions often still are. Each session's messages and parts are read in one read transaction.
//!
//! Sessions and projects are columns there; message and part rows hold their JSON in `data` without
//! the ids, which are filled in from the row.

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::OpenFlags;
use rusqlite::Row as SqlRow;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::source::MessageRows;
use super::source::Row;
use super::source::SessionRow;
use super::source::Source;
use super::source::attach_parts;
use super::source::with_field;
use crate::error::Result;
use crate::error::StoreError;

/// OpenCode's database, open for reading.
pub(crate) struct Database {
    path: PathBuf,
    conn: Connection,
}

impl Database {
    /// Opens `path` read-only and checks that it has OpenCode's tables.
    pub fn open(path: &Path) -> Result<Self> {
        let unreadable = |detail: String| StoreError::ImportSource { path: path.to_path_buf(), detail };
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| unreadable(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| unreadable(e.to_string()))?;
        let database = Self { path: path.to_path_buf(), conn };
        database.check_shape()?;
        Ok(database)
    }

    /// OpenCode's tables with the columns read here, and not this program's own schema.
    fn check_shape(&self) -> Result<()> {
        let columns = |table: &str| -> rusqlite::Result<Vec<String>> {
            self.conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?
                .query_map([], |r| r.get(0))?
                .collect()
        };
        let missing = |table: &str, needed: &[&str]| -> Result<Option<String>> {
            let have = columns(table).map_err(|e| self.error(e))?;
            Ok(needed.iter().find(|c| !have.iter().any(|h| h == *c)).map(|c| format!("{table}.{c}")))
        };
        if !columns("schema_migration").map_err(|e| self.error(e))?.is_empty() {
            return Err(self.not_opencode("it is this program's own session database"));
        }
        let needed: [(&str, &[&str]); 4] = [
            ("project", &["id", "worktree", "time_created", "time_updated", "sandboxes"]),
            ("session", &["id", "project_id", "parent_id", "slug", "directory", "title", "version", "time_created"]),
            ("message", &["id", "session_id", "time_created", "data"]),
            ("part", &["id", "message_id", "session_id", "data"]),
        ];
        for (table, columns) in needed {
            if let Some(column) = missing(table, columns)? {
                return Err(self.not_opencode(&format!("it has no column {column}")));
            }
        }
        Ok(())
    }

    fn not_opencode(&self, why: &str) -> StoreError {
        StoreError::ImportSource { path: self.path.clone(), detail: format!("not an OpenCode 1.x database: {why}") }
    }

    fn error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::ImportSource { path: self.path.clone(), detail: source.to_string() }
    }

    /// Runs `f` in one read transaction (a consistent snapshot of OpenCode's data).
    fn snapshot<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN").map_err(|e| self.error(e))?;
        let result = f(&self.conn);
        // Ending a read transaction only releases the snapshot; there is nothing to lose.
        self.conn.execute_batch("COMMIT").ok();
        result.map_err(|e| self.error(e))
    }
}

impl Source for Database {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn projects(&self) -> Result<Vec<Row>> {
        self.snapshot(|conn| {
            conn.prepare(
                "SELECT id, worktree, vcs, name, icon_url, icon_url_override, icon_color, time_created,
                 time_updated, time_initialized, sandboxes, commands FROM project ORDER BY time_created, id",
            )?
            .query_map([], project_row)?
            .collect()
        })
    }

    fn sessions(&self) -> Result<Vec<SessionRow>> {
        let optional = optional_session_columns(&self.conn).map_err(|e| self.error(e))?;
        let sql = format!(
            "SELECT id, project_id, parent_id, slug, directory, title, version, time_created, time_updated, {} \
             FROM session ORDER BY time_created, id",
            optional.join(", ")
        );
        self.snapshot(|conn| conn.prepare(&sql)?.query_map([], |r| session_row(r, &optional))?.collect())
    }

    fn messages(&self, session_id: &str) -> Result<(Vec<MessageRows>, Vec<Row>)> {
        self.snapshot(|conn| {
            let messages = conn
                .prepare_cached("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")?
                .query_map([session_id], |r| {
                    let (id, data): (String, String) = (r.get(0)?, r.get(1)?);
                    Ok(json_row(&id, &data, |json| {
                        with_field(with_field(json, "id", id.as_str()), "sessionID", session_id)
                    }))
                })?
                .collect::<rusqlite::Result<Vec<Row>>>()?;
            let parts = conn
                .prepare_cached("SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY message_id, id")?
                .query_map([session_id], |r| {
                    let (id, message_id, data): (String, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
                    let row = json_row(&id, &data, |json| {
                        let json = with_field(json, "id", id.as_str());
                        with_field(with_field(json, "sessionID", session_id), "messageID", message_id.as_str())
                    });
                    Ok((message_id, row))
                })?
                .collect::<rusqlite::Result<Vec<(String, Row)>>>()?;
            Ok(attach_parts(messages, parts))
        })
    }
}

/// A `data` column parsed and completed, or why it does not parse.
fn json_row(id: &str, data: &str, complete: impl FnOnce(Value) -> Value) -> Row {
    match serde_json::from_str::<Value>(data) {
        Ok(json @ Value::Object(_)) => Row::ok(id, complete(json)),
        Ok(_) => Row::unreadable(id, "its data is not a JSON object"),
        Err(err) => Row::unreadable(id, format!("its data is not JSON: {err}")),
    }
}

/// A JSON text column (`sandboxes`, `revert`, …) as a value; absent or unparsable is `null`.
fn json_column(text: Option<String>) -> Value {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

fn project_row(r: &SqlRow<'_>) -> rusqlite::Result<Row> {
    let id: String = r.get(0)?;
    let icon_parts: [(&str, Option<String>); 3] = [("url", r.get(4)?), ("override", r.get(5)?), ("color", r.get(6)?)];
    let icon: Map<String, Value> =
        icon_parts.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), Value::String(v)))).collect();
    let json = json!({
        "id": id,
        "worktree": r.get::<_, String>(1)?,
        "vcs": r.get::<_, Option<String>>(2)?,
        "name": r.get::<_, Option<String>>(3)?,
        "icon": if icon.is_empty() { Value::Null } else { Value::Object(icon) },
        "time": {
            "created": r.get::<_, i64>(7)?,
            "updated": r.get::<_, i64>(8)?,
            "initialized": r.get::<_, Option<i64>>(9)?,
        },
        "sandboxes": match json_column(r.get(10)?) { Value::Null => json!([]), value => value },
        "commands": json_column(r.get(11)?),
    });
    Ok(Row::ok(id, json))
}

/// The session columns besides the required ones, those this database has (older 1.x releases lack
/// some).
const OPTIONAL_SESSION_COLUMNS: &[&str] = &[
    "workspace_id",
    "path",
    "share_url",
    "summary_additions",
    "summary_deletions",
    "summary_files",
    "summary_diffs",
    "metadata",
    "cost",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
    "revert",
    "permission",
    "agent",
    "model",
    "time_compacting",
    "time_archived",
];

fn optional_session_columns(conn: &Connection) -> rusqlite::Result<Vec<&'static str>> {
    let have: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('session')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(OPTIONAL_SESSION_COLUMNS.iter().copied().filter(|c| have.iter().any(|h| h == c)).collect())
}

fn session_row(r: &SqlRow<'_>, optional: &[&str]) -> rusqlite::Result<SessionRow> {
    let id: String = r.get(0)?;
    let parent_id: Option<String> = r.get(2)?;
    let created: i64 = r.get(7)?;
    let mut extra: Map<String, Value> = Map::new();
    for (i, name) in optional.iter().enumerate() {
        let value = match r.get_ref(9 + i)? {
            rusqlite::types::ValueRef::Null => Value::Null,
            rusqlite::types::ValueRef::Integer(n) => json!(n),
            rusqlite::types::ValueRef::Real(x) => json!(x),
            rusqlite::types::ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
            rusqlite::types::ValueRef::Blob(_) => Value::Null,
        };
        extra.insert((*name).to_owned(), value);
    }
    let text = |key: &str| extra.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |key: &str| extra.get(key).filter(|v| v.is_number()).cloned().unwrap_or(json!(0));
    let summary = match extra.get("summary_additions").filter(|v| v.is_number()) {
        Some(additions) => json!({
            "additions": additions,
            "deletions": number("summary_deletions"),
            "files": number("summary_files"),
            "diffs": json_column(text("summary_diffs")),
        }),
        None => Value::Null,
    };
    let json = json!({
        "id": id,
        "projectID": r.get::<_, String>(1)?,
        "parentID": parent_id,
        "slug": r.get::<_, String>(3)?,
        "directory": r.get::<_, String>(4)?,
        "title": r.get::<_, String>(5)?,
        "version": r.get::<_, String>(6)?,
        "workspaceID": text("workspace_id"),
        "path": text("path"),
        "share": text("share_url").map(|url| json!({ "url": url })),
        "summary": summary,
        "metadata": json_column(text("metadata")),
        "cost": number("cost"),
        "tokens": {
            "input": number("tokens_input"),
            "output": number("tokens_output"),
            "reasoning": number("tokens_reasoning"),
            "cache": { "read": number("tokens_cache_read"), "write": number("tokens_cache_write") },
        },
        "revert": json_column(text("revert")),
        "permission": json_column(text("permission")),
        "agent": text("agent"),
        "model": json_column(text("model")),
        "time": {
            "created": created,
            "updated": r.get::<_, i64>(8)?,
            "compacting": extra.get("time_compacting").cloned().unwrap_or(Value::Null),
            "archived": extra.get("time_archived").cloned().unwrap_or(Value::Null),
        },
    });
    Ok(SessionRow { row: Row::ok(id, json), parent_id, created })
}
