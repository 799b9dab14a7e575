//! Versioned schema migrations.
//!
//! Each migration is applied in its own `BEGIN IMMEDIATE` transaction together with its row in
//! `schema_migration`, so a crash leaves the database at a complete version and two processes opening
//! a fresh database at once apply each migration exactly once. A database whose highest recorded
//! version is newer than [`LATEST`] is refused before anything is written to it.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::OptionalExtension;
use rusqlite::TransactionBehavior;

use crate::error::Result;
use crate::error::StoreError;
use crate::id::now_ms;

/// The migrations, in order; version `n` is `MIGRATIONS[n - 1]`. Never edit a released one: append.
const MIGRATIONS: &[&str] = &[V1, V2];

/// The schema version this program writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Version 1: projects, sessions, messages, parts, the event log, todos.
const V1: &str = r"
CREATE TABLE project (
    id TEXT PRIMARY KEY,
    worktree TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX project_worktree_idx ON project (worktree);

CREATE TABLE session (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES project (id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES session (id) ON DELETE CASCADE,
    directory TEXT NOT NULL,
    title TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    time_archived INTEGER,
    cost REAL NOT NULL DEFAULT 0,
    tokens_input INTEGER NOT NULL DEFAULT 0,
    tokens_output INTEGER NOT NULL DEFAULT 0,
    tokens_reasoning INTEGER NOT NULL DEFAULT 0,
    tokens_cache_read INTEGER NOT NULL DEFAULT 0,
    tokens_cache_write INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE INDEX session_updated_idx ON session (time_updated DESC, id);
CREATE INDEX session_project_idx ON session (project_id, time_updated DESC, id);
CREATE INDEX session_directory_idx ON session (directory, time_updated DESC, id);
CREATE INDEX session_parent_idx ON session (parent_id);

CREATE TABLE message (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE part (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES message (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    message_seq INTEGER NOT NULL,
    position INTEGER NOT NULL,
    type TEXT NOT NULL,
    tool_status TEXT,
    data TEXT NOT NULL
);
CREATE INDEX part_history_idx ON part (session_id, message_seq, position);
CREATE INDEX part_message_idx ON part (message_id, position);
CREATE INDEX part_unsettled_idx ON part (session_id) WHERE tool_status IN ('pending', 'running');

CREATE TABLE event (
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    time INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE todo (
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    priority TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;

CREATE TABLE store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
";

/// Version 2: the session runtime's tables (admitted input, context epochs) and permissions.
const V2: &str = r"
CREATE TABLE session_input (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    prompt TEXT NOT NULL,
    delivery TEXT NOT NULL CHECK (delivery IN ('steer', 'queue')),
    admitted_seq INTEGER NOT NULL,
    promoted_seq INTEGER,
    time_created INTEGER NOT NULL,
    UNIQUE (session_id, admitted_seq)
);
CREATE INDEX session_input_pending_idx ON session_input (session_id, promoted_seq, delivery, admitted_seq);

CREATE TABLE context_epoch (
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    baseline TEXT NOT NULL,
    baseline_parts TEXT NOT NULL,
    snapshot TEXT NOT NULL,
    agent TEXT NOT NULL,
    begins_at INTEGER NOT NULL,
    history_from INTEGER NOT NULL,
    time_created INTEGER NOT NULL,
    time_ended INTEGER,
    PRIMARY KEY (session_id, epoch)
) WITHOUT ROWID;

CREATE TABLE permission_request (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    data TEXT NOT NULL,
    reply TEXT,
    time_created INTEGER NOT NULL,
    time_replied INTEGER
);
CREATE INDEX permission_request_session_idx ON permission_request (session_id, reply);

CREATE TABLE permission_saved (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES project (id) ON DELETE CASCADE,
    action TEXT NOT NULL,
    resource TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    UNIQUE (project_id, action, resource)
);
";

/// The highest applied version (0 for a new, empty database).
pub(crate) fn current_version(conn: &Connection) -> rusqlite::Result<i64> {
    let exists: Option<i64> = conn
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migration'", [], |r| r.get(0))
        .optional()?;
    if exists.is_none() {
        return Ok(0);
    }
    conn.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_migration", [], |r| r.get(0))
}

/// Fails when the database is newer than this program.
pub(crate) fn check_not_newer(path: &Path, version: i64) -> Result<()> {
    if version > LATEST {
        return Err(StoreError::NewerSchema { path: path.to_path_buf(), found: version, known: LATEST });
    }
    Ok(())
}

/// Fails when the file holds another program's tables (OpenCode's own database, say) and none of
/// ours: checked before anything is written to it, so it is never touched.
pub(crate) fn check_ours(conn: &Connection, path: &Path, version: i64) -> Result<()> {
    if version > 0 {
        return Ok(());
    }
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 3",
        )
        .and_then(|mut statement| statement.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| StoreError::sqlite(path, e))?;
    if tables.is_empty() {
        return Ok(());
    }
    Err(StoreError::Foreign { path: path.to_path_buf(), tables: tables.join(", ") })
}

/// Applies every migration above the current version up to `target`, each in its own transaction.
pub(crate) fn migrate(conn: &mut Connection, path: &Path, target: i64) -> Result<i64> {
    let mut version = current_version(conn)?;
    check_not_newer(path, version)?;
    while version < target {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migration (version INTEGER PRIMARY KEY, time_applied INTEGER NOT NULL)",
        )?;
        // Another process may have migrated while we waited for the write lock.
        let applied = current_version(&tx)?;
        check_not_newer(path, applied)?;
        if applied >= target {
            return Ok(applied);
        }
        let next = applied + 1;
        let sql = usize::try_from(applied).ok().and_then(|i| MIGRATIONS.get(i)).copied().unwrap_or_default();
        tx.execute_batch(sql)?;
        tx.execute("INSERT INTO schema_migration (version, time_applied) VALUES (?1, ?2)", (next, now_ms()))?;
        tx.commit()?;
        version = next;
    }
    Ok(version)
}
