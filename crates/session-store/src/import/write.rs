//! The importer's writes: rows inserted as they are (ids, times, usage kept), never replacing what
//! is already stored, and without events (nothing live happened). Each returns whether it added.

use rusqlite::OptionalExtension;
use rusqlite::params;

use crate::error::Result;
use crate::error::StoreError;
use crate::part::Part;
use crate::part::PartKind;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::MessageInfo;
use crate::types::Project;
use crate::types::Session;

/// Where the next imported rows of one session go: history positions continue after what is stored.
pub(crate) struct SessionCursor {
    session_id: String,
    next_seq: i64,
}

impl Tx<'_> {
    /// Inserts a project unless one with its id exists.
    pub(crate) fn import_project(&mut self, project: &Project) -> Result<bool> {
        let data = serde_json::to_string(project).map_err(StoreError::decode("project"))?;
        let added = self
            .tx
            .prepare_cached(
                "INSERT INTO project (id, worktree, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![project.id, project.worktree, project.time.created, project.time.updated, data])?;
        Ok(added > 0)
    }

    /// Inserts a session with its own times and usage totals unless one with its id exists; returns
    /// whether it was added and where its messages continue.
    pub(crate) fn import_session(&mut self, session: &Session) -> Result<(bool, SessionCursor)> {
        let data = serde_json::to_string(session).map_err(StoreError::decode("session"))?;
        let t = &session.tokens;
        let added = self
            .tx
            .prepare_cached(
                "INSERT INTO session (id, project_id, parent_id, directory, title, time_created, time_updated,
                 time_archived, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read,
                 tokens_cache_write, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![
                session.id,
                session.project_id,
                session.parent_id,
                session.directory,
                session.title,
                session.time.created,
                session.time.updated,
                session.time.archived,
                session.cost,
                count(t.input),
                count(t.output),
                count(t.reasoning),
                count(t.cache.read),
                count(t.cache.write),
                data
            ])?;
        let next_seq = self
            .tx
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?1")?
            .query_row([&session.id], |r| r.get(0))?;
        Ok((added > 0, SessionCursor { session_id: session.id.clone(), next_seq }))
    }

    /// Inserts a message at the end of its session's history unless its id exists. A message id
    /// stored under another session is a conflict.
    pub(crate) fn import_message(&mut self, cursor: &mut SessionCursor, info: &MessageInfo) -> Result<bool> {
        if info.session_id() != cursor.session_id {
            return Err(StoreError::Conflict(format!("message {} names session {}", info.id(), info.session_id())));
        }
        if let Some(session) = self.reader().message_owner(info.id())? {
            return if session == cursor.session_id {
                Ok(false)
            } else {
                Err(StoreError::Conflict(format!("message {} is already stored in session {session}", info.id())))
            };
        }
        let data = serde_json::to_string(info).map_err(StoreError::decode("message"))?;
        self.tx
            .prepare_cached(
                "INSERT INTO message (id, session_id, seq, role, time_created, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![info.id(), info.session_id(), cursor.next_seq, info.role(), info.created(), data])?;
        cursor.next_seq += 1;
        Ok(true)
    }

    /// Inserts a part after its message's other parts unless its id exists.
    pub(crate) fn import_part(&mut self, part: &Part) -> Result<bool> {
        let data = serde_json::to_string(part).map_err(StoreError::decode("part"))?;
        let tool_status = match &part.kind {
            PartKind::Tool { state, .. } => Some(state.status()),
            _ => None,
        };
        let added = self
            .tx
            .prepare_cached(
                "INSERT INTO part (id, message_id, session_id, message_seq, position, type, tool_status, data)
                 SELECT ?1, m.id, m.session_id, m.seq,
                        (SELECT COALESCE(MAX(position) + 1, 0) FROM part WHERE message_id = m.id), ?4, ?5, ?6
                 FROM message m WHERE m.id = ?2 AND m.session_id = ?3
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![part.id, part.message_id, part.session_id, part.kind.type_name(), tool_status, data])?;
        if added == 0 && self.reader().part_message(&part.id)?.is_none() {
            return Err(StoreError::Conflict(format!(
                "part {} names message {} of session {}, which is not stored",
                part.id, part.message_id, part.session_id
            )));
        }
        Ok(added > 0)
    }

    /// Sets a small numeric fact about this store (kept in `store_meta`).
    pub fn set_meta(&mut self, key: &str, value: i64) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO store_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
            )?
            .execute(params![key, value])?;
        Ok(())
    }
}

impl Reader<'_> {
    /// A fact set with [`Tx::set_meta`].
    pub fn meta(&self, key: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT value FROM store_meta WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    fn message_owner(&self, message_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT session_id FROM message WHERE id = ?1")?
            .query_row([message_id], |r| r.get(0))
            .optional()?)
    }

    fn part_message(&self, part_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT message_id FROM part WHERE id = ?1")?
            .query_row([part_id], |r| r.get(0))
            .optional()?)
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
